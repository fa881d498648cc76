"""Taxonomy planning: the whole tree at once for small corpora, group by group for large ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.schemas import DirectoryNode
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.clustering import LeafBounds, grow_tree, single_threaded
from memory_bank.taxonomy.coarse import (
    assign_coarse,
    fit_coarse,
    merge_small_groups,
    sample_rows,
)
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.labels import TreeLabeler, child_path
from memory_bank.taxonomy.naming import (
    DESCRIPTION_TERMS,
    FALLBACK_STEM,
    NameChoice,
    Theme,
    describe,
    describe_parent,
    distinct_terms,
    humanize,
    make_unique,
    name_choice,
    name_siblings,
)
from memory_bank.taxonomy.terms import (
    GroupTerms,
    RankedTerm,
    group_spread,
    phrase_mask,
    rank_terms,
)

SUMMARY_TERMS = 200  # terms a group summary keeps: enough to tell top-level groups apart
EMPTY_STORE_DESCRIPTION = "No memories yet."


@dataclass(frozen=True)
class GroupSummary:
    """What `assemble_tree` needs to name a coarse group among the others, nothing per memory."""

    size: int
    term_item_counts: dict[str, int]  # the group's best-supported terms: memories using each
    term_curated_counts: dict[str, int]  # same terms: memories whose title or keywords hold it
    spellings: dict[str, str]  # display forms of these terms and of the themes
    central_tldr: str
    themes: tuple[Theme, ...] = ()  # best term and size of each top-level subdirectory


@dataclass(frozen=True)
class GroupPlan:
    node: DirectoryNode  # the group's subtree, rooted at "/<provisional name>"
    summary: GroupSummary


def _check_inputs(items: Sequence[TaxonomyItem], vectors: np.ndarray) -> np.ndarray:
    data = np.asarray(vectors, dtype=np.float32)
    if data.ndim != 2 or len(data) != len(items):
        raise TaxonomyError(
            f"need one vector per item: {len(items)} items, vectors of shape {data.shape}"
        )
    return data


def plan_taxonomy(
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    map_groups: TaskMap = run_serially,
) -> DirectoryNode:
    """The full directory tree for `items` (rooted at "/"); deterministic.

    Up to `config.coarse_threshold` memories are clustered in one call; above it the corpus is
    split into coarse groups whose subtrees are planned by `plan_group` through `map_groups`
    (one call per group: Ray passes a task-backed map) and grafted under one root. Grouping
    needs `max_depth >= 2`: with one level, every directory is a leaf.
    """
    data = _check_inputs(items, vectors)
    if not items:
        return DirectoryNode(path="/", name="", description=EMPTY_STORE_DESCRIPTION)
    if len(items) > config.coarse_threshold and config.max_depth >= 2:
        return _plan_in_groups(items, data, config, map_groups)
    with single_threaded():
        labeler = TreeLabeler.for_items(items, data)
        clusters = grow_tree(data, config.max_depth, config, is_root=True)
        return labeler.label_root(clusters)


def _plan_in_groups(
    items: Sequence[TaxonomyItem], vectors: np.ndarray, config: TaxonomyConfig, map_groups: TaskMap
) -> DirectoryNode:
    n_total = len(items)
    model = fit_coarse(vectors[sample_rows(n_total, config)], n_total, config)
    labels = assign_coarse(model, vectors)
    merged = merge_small_groups(model, np.bincount(labels, minlength=model.size), n_total, config)
    if merged.size != model.size:
        labels = assign_coarse(merged, vectors)
    order = np.argsort(labels, kind="stable")
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    calls = [
        (int(labels[rows[0]]), [items[row] for row in rows], vectors[rows], config)
        for rows in np.split(order, boundaries)
    ]
    plans: list[GroupPlan] = map_groups(plan_group, calls)
    return assemble_tree([plan.node for plan in plans], config, [plan.summary for plan in plans])


def plan_group(
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    depth_budget: int | None = None,
) -> GroupPlan:
    """Plan one coarse group: its subtree (at most `depth_budget` levels below the group's own
    directory, default `max_depth - 1`) and the summary that names it among the other groups."""
    data = _check_inputs(items, vectors)
    budget = config.max_depth - 1 if depth_budget is None else depth_budget
    if not items:
        raise TaxonomyError(f"coarse group {group_id} has no memories")
    if not 0 <= budget <= config.max_depth - 1:
        raise TaxonomyError(f"depth budget {budget} outside 0..{config.max_depth - 1}")
    if budget == 0 and len(items) > LeafBounds.from_config(config).largest:
        raise TaxonomyError(f"coarse group {group_id} is too large for a single directory")
    with single_threaded():
        labeler = TreeLabeler.for_items(items, data)
        clusters = grow_tree(data, budget, config, is_root=False)
        fallback_name = f"{FALLBACK_STEM}_{group_id + 1}"
        node, themes = labeler.label_group(clusters, fallback_name)
        return GroupPlan(node, _summarize(labeler, clusters.rows, themes))


def plan_subtree(
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    depth_budget: int | None = None,
) -> DirectoryNode:
    """The subtree of one coarse group (see `plan_group`, which also returns its summary)."""
    return plan_group(group_id, items, vectors, config, depth_budget).node


def _summarize(labeler: TreeLabeler, rows: np.ndarray, themes: list[Theme]) -> GroupSummary:
    terms = labeler.terms
    group = GroupTerms.from_rows(terms, [rows])
    support = group.item_counts[0] + group.curated_counts[0]
    top = np.argsort(-support, kind="stable")[:SUMMARY_TERMS]
    vocabulary = [str(group.vocabulary[i]) for i in top]
    return GroupSummary(
        size=len(rows),
        term_item_counts={
            term: int(group.item_counts[0, i]) for term, i in zip(vocabulary, top, strict=True)
        },
        term_curated_counts={
            term: int(group.curated_counts[0, i]) for term, i in zip(vocabulary, top, strict=True)
        },
        spellings={term: terms.spelling(term) for term in [*vocabulary, *(t for t, _ in themes)]},
        central_tldr=labeler.central_tldr(rows),
        themes=tuple(themes),
    )


def _group_terms(summaries: Sequence[GroupSummary]) -> GroupTerms:
    vocabulary = sorted({term for summary in summaries for term in summary.term_item_counts})
    column = {term: i for i, term in enumerate(vocabulary)}
    item_counts = np.zeros((len(summaries), len(vocabulary)))
    curated_counts = np.zeros_like(item_counts)
    for row, summary in enumerate(summaries):
        for term, count in summary.term_item_counts.items():
            item_counts[row, column[term]] = count
            curated_counts[row, column[term]] = summary.term_curated_counts.get(term, 0)
    terms = np.array(vocabulary, dtype=object)
    return GroupTerms(
        vocabulary=terms,
        item_counts=item_counts,
        curated_counts=curated_counts,
        sizes=np.array([summary.size for summary in summaries], dtype=np.float64),
        phrases=phrase_mask(terms),
        spread=group_spread(item_counts),
    )


def _first_index(node: DirectoryNode) -> int:
    return min((i for leaf in node.leaves() for i in leaf.chunk_indices), default=-1)


def rebase(node: DirectoryNode, path: str) -> DirectoryNode:
    """`node` moved to `path`, every descendant's path following it."""
    children = [rebase(child, child_path(path, child.name)) for child in node.children]
    return node.model_copy(update={"path": path, "children": children})


def assemble_tree(
    subtrees: Sequence[DirectoryNode],
    config: TaxonomyConfig,
    summaries: Sequence[GroupSummary] | None = None,
) -> DirectoryNode:
    """Graft group subtrees under one root, ordered by their first memory, paths recomputed.

    With `summaries` (from `plan_group`), top-level names are chosen from the groups' terms
    scored against each other (and their themes); without, the subtrees' own names and
    descriptions are kept, names de-duplicated. The root is described by its directories.
    Raises `TaxonomyError` for a subtree too deep to graft below the root.
    """
    if summaries is not None and len(summaries) != len(subtrees):
        raise TaxonomyError(f"{len(summaries)} summaries for {len(subtrees)} subtrees")
    too_deep = [tree.name for tree in subtrees if tree.depth() + 1 > config.max_depth]
    if too_deep:
        raise TaxonomyError(f"subtrees deeper than max_depth {config.max_depth}: {too_deep}")
    pairs = [
        (tree, summaries[i] if summaries is not None else None)
        for i, tree in enumerate(subtrees)
        if _first_index(tree) >= 0
    ]
    pairs.sort(key=lambda pair: _first_index(pair[0]))
    if not pairs:
        return DirectoryNode(path="/", name="", description=EMPTY_STORE_DESCRIPTION)
    trees = [tree for tree, _ in pairs]
    group_summaries = [summary for _, summary in pairs if summary is not None]
    if len(group_summaries) == len(trees):
        rankings = rank_terms(_group_terms(group_summaries))
        choices = [
            name_choice(ranked, summary.themes, partial(_spelling, summary))
            for ranked, summary in zip(rankings, group_summaries, strict=True)
        ]
        names = name_siblings(choices)
        descriptions = [
            _group_description(tree, choice, ranked, summary)
            for tree, choice, ranked, summary in zip(
                trees, choices, rankings, group_summaries, strict=True
            )
        ]
    else:
        names = make_unique([tree.name for tree in trees])
        descriptions = [tree.description for tree in trees]
    children = [
        rebase(tree.model_copy(update={"name": name, "description": text}), child_path("/", name))
        for tree, name, text in zip(trees, names, descriptions, strict=True)
    ]
    top_level = [(humanize(child.name), memory_count(child)) for child in children]
    return DirectoryNode(
        path="/", name="", description=describe_parent([], top_level), children=children
    )


def memory_count(node: DirectoryNode) -> int:
    """Memories in the leaves of `node`'s subtree."""
    return sum(len(leaf.chunk_indices) for leaf in node.leaves())


def _spelling(summary: GroupSummary, term: str) -> str:
    return summary.spellings.get(term, term)


def _group_description(
    tree: DirectoryNode, choice: NameChoice, ranked: Sequence[RankedTerm], summary: GroupSummary
) -> str:
    if tree.children:
        subdirectories = [(humanize(child.name), memory_count(child)) for child in tree.children]
        return describe_parent(choice.terms, subdirectories)
    shown = distinct_terms([item.term for item in ranked], DESCRIPTION_TERMS)
    return describe([_spelling(summary, term) for term in shown], summary.central_tldr)
