"""Taxonomy planning: memories + vectors -> a named, described `DirectoryNode` tree.

Documents first (`documents`): every memory is planned by its vector pulled towards its
document's, so documents stay together. The corpus is split into top-level groups
(`coarse`: Ward on at most `taxonomy.coarse_sample` vectors, the width chosen by silhouette), each
group's subtree is planned on its own (`plan_group`, one task each through `map_groups`;
`clustering.grow_tree` inside), and `assemble_tree` grafts them under the root and names them
among each other. Every set of sibling directories is named by one pass of `naming`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.schemas import DirectoryNode
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.clustering import ClusterNode, LeafBounds, grow_tree, single_threaded
from memory_bank.taxonomy.coarse import accept_splits, split_top_level
from memory_bank.taxonomy.describe import describe, describe_parent, humanize
from memory_bank.taxonomy.documents import document_groups, pull_together
from memory_bank.taxonomy.evidence import GroupEvidence, gather_evidence
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.naming import (
    FALLBACK_STEM,
    DirectoryName,
    has_honest_name,
    make_unique,
    name_alone,
    name_among,
    name_siblings,
)
from memory_bank.taxonomy.terms import TermMatrix

EMPTY_STORE_DESCRIPTION = "No memories yet."
DOCUMENTS_NAMED = 3  # largest documents whose phrases can name a group no term describes


@dataclass(frozen=True)
class GroupPlan:
    node: DirectoryNode  # the group's subtree, rooted at "/<provisional name>"
    summary: GroupEvidence  # what `assemble_tree` needs to name it among the other groups
    # A group no name describes (`naming.has_honest_name`) whose subdirectories mostly have
    # one is split: they go under the root in its place, each a top-level group of its own.
    parts: tuple[GroupPlan, ...] = ()

    def top_level(self) -> tuple[GroupPlan, ...]:
        """The plans that go under the root: the group's parts, or the group itself."""
        return self.parts or (self,)


def child_path(parent_path: str, name: str) -> str:
    return f"{parent_path.rstrip('/')}/{name}"


def central_row(vectors: np.ndarray, rows: np.ndarray) -> int:
    """The row closest to the group's mean direction (ties: the first row)."""
    members = vectors[rows]
    return int(rows[int(np.argmax(members @ members.sum(axis=0)))])


class _Labels:
    """Names and descriptions for the cluster tree of one planning call."""

    def __init__(self, items: Sequence[TaxonomyItem], vectors: np.ndarray) -> None:
        self.items = items
        self.vectors = vectors  # the memories' own vectors: centrality is about them
        self.documents = document_groups(items)
        self.titled_documents = document_groups(items, units=False)
        self.indices = np.array([item.index for item in items], dtype=np.int64)
        self.matrix = TermMatrix.build(
            [item.text for item in items],
            [item.title for item in items],
            [item.keywords for item in items],
        )

    def evidence(self, groups: Sequence[np.ndarray]) -> list[GroupEvidence]:
        central = [central_row(self.vectors, np.asarray(rows)) for rows in groups]
        by_document = [self._largest_documents(np.asarray(rows)) for rows in groups]
        return gather_evidence(
            self.matrix,
            groups,
            self.documents,
            central,
            self.items,
            by_document,
            titled_documents=self.titled_documents,
        )

    def _largest_documents(self, rows: np.ndarray) -> list[tuple[int, int]]:
        """(memories, most central row) of the `DOCUMENTS_NAMED` largest documents of `rows`,
        largest first (ties: the document met first)."""
        documents, first, counts = np.unique(
            self.documents[rows], return_index=True, return_counts=True
        )
        order = sorted(range(len(documents)), key=lambda d: (-counts[d], first[d]))
        return [
            (int(counts[d]), central_row(self.vectors, rows[self.documents[rows] == documents[d]]))
            for d in order[:DOCUMENTS_NAMED]
        ]

    def node(
        self, cluster: ClusterNode, name: DirectoryName, path: str, central_tldr: str
    ) -> DirectoryNode:
        if not cluster.children:
            return DirectoryNode(
                path=path,
                name=name.name,
                description=describe(name.terms, central_tldr),
                chunk_indices=np.sort(self.indices[cluster.rows]).tolist(),
            )
        evidence = self.evidence([child.rows for child in cluster.children])
        names = name_siblings(evidence, reserved=[name.name])
        children = [
            self.node(child, child_name, child_path(path, child_name.name), proof.central_tldr)
            for child, child_name, proof in zip(cluster.children, names, evidence, strict=True)
        ]
        listed = [
            (humanize(child.name), len(part.rows))
            for child, part in zip(children, cluster.children, strict=True)
        ]
        return DirectoryNode(
            path=path,
            name=name.name,
            description=describe_parent(name.terms[:2], listed),
            children=children,
        )


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

    The corpus is split into top-level groups (`coarse`) whose subtrees `plan_group` plans
    through `map_groups` (one call per group: Ray passes a task-backed map); `assemble_tree`
    grafts and names them. A corpus that fits one leaf gets one directory; with `max_depth` 1
    every directory is a leaf under the root.
    """
    data = _check_inputs(items, vectors)
    if not items:
        return DirectoryNode(path="/", name="", description=EMPTY_STORE_DESCRIPTION)
    n_total = len(items)
    if n_total <= LeafBounds.from_config(config).largest:
        plan = plan_group(0, items, data, config)
        return assemble_tree([plan.node], config, [plan.summary])
    if config.max_depth < 2:
        return _plan_flat(items, data, config)
    groups = top_level_groups(items, data, config)
    calls = [
        (group_id, [items[row] for row in rows], data[rows], config) for group_id, rows in groups
    ]
    plans = split_unnamed(
        map_groups(plan_group, calls), [rows for _, rows in groups], items, data, config
    )
    return assemble_tree([plan.node for plan in plans], config, [plan.summary for plan in plans])


def split_unnamed(
    plans: Sequence[GroupPlan],
    rows_of: Sequence[np.ndarray],
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
) -> list[GroupPlan]:
    """The top-level plans: a group no name describes is replaced by its parts (see `GroupPlan`)
    when that separates the memories at least as well (`coarse.accept_splits`: silhouette of
    the top-level partition); `rows_of[g]` are the rows of `items` in plan g."""
    candidates = [g for g, plan in enumerate(plans) if plan.parts]
    if not candidates:
        return list(plans)
    row_of = {item.index: row for row, item in enumerate(items)}
    labels = np.empty(len(items), dtype=np.int64)
    for g, rows in enumerate(rows_of):
        labels[rows] = g
    splits = []
    for g in candidates:
        split = np.full(len(items), -1, dtype=np.int64)
        for number, part in enumerate(plans[g].parts):
            members = [row_of[i] for leaf in part.node.leaves() for i in leaf.chunk_indices]
            split[members] = number
        splits.append(split)
    with single_threaded():
        accepted = dict(
            zip(candidates, accept_splits(vectors, labels, splits, config), strict=True)
        )
    return [
        part
        for g, plan in enumerate(plans)
        for part in (plan.top_level() if accepted.get(g) else (plan,))
    ]


def top_level_groups(
    items: Sequence[TaxonomyItem], vectors: np.ndarray, config: TaxonomyConfig
) -> list[tuple[int, np.ndarray]]:
    """The top-level groups of a corpus too large for one directory: (group id, rows of
    `items`) per group, in group order; a document's memories stay in one group (`coarse`)."""
    data = _check_inputs(items, vectors)
    documents = document_groups(items)
    with single_threaded():
        labels = split_top_level(pull_together(data, documents), data, documents, config)
    order = np.argsort(labels, kind="stable")
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    return [(int(labels[rows[0]]), rows) for rows in np.split(order, boundaries)]


def _plan_flat(
    items: Sequence[TaxonomyItem], data: np.ndarray, config: TaxonomyConfig
) -> DirectoryNode:
    """One level of leaves under the root (`max_depth` 1)."""
    with single_threaded():
        labels = _Labels(items, data)
        clusters = grow_tree(pull_together(data, labels.documents), 1, config, is_root=True)
        root = labels.node(clusters, DirectoryName("", ()), "/", "")
    top_level = [(humanize(child.name), memory_count(child)) for child in root.children]
    return root.model_copy(update={"description": describe_parent([], top_level)})


def plan_group(
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    depth_budget: int | None = None,
) -> GroupPlan:
    """Plan one top-level group: its subtree (at most `depth_budget` levels below the group's
    own directory, default `max_depth - 1`) and the evidence that names it among the others."""
    data = _check_inputs(items, vectors)
    budget = config.max_depth - 1 if depth_budget is None else depth_budget
    if not items:
        raise TaxonomyError(f"coarse group {group_id} has no memories")
    if not 0 <= budget <= config.max_depth - 1:
        raise TaxonomyError(f"depth budget {budget} outside 0..{config.max_depth - 1}")
    if budget == 0 and len(items) > LeafBounds.from_config(config).largest:
        raise TaxonomyError(f"coarse group {group_id} is too large for a single directory")
    with single_threaded():
        labels = _Labels(items, data)
        clusters = grow_tree(pull_together(data, labels.documents), budget, config, is_root=False)
        summary = labels.evidence([clusters.rows])[0]
        name = name_alone(summary, f"{FALLBACK_STEM}_{group_id + 1}")
        node = labels.node(clusters, name, child_path("/", name.name), summary.central_tldr)
        parts: tuple[GroupPlan, ...] = ()
        if clusters.children and not has_honest_name(summary):
            evidence = labels.evidence([child.rows for child in clusters.children])
            named = sum(proof.size for proof in evidence if has_honest_name(proof))
            if named * 2 > summary.size:
                parts = tuple(
                    GroupPlan(rebase(child, child_path("/", child.name)), proof)
                    for child, proof in zip(node.children, evidence, strict=True)
                )
        return GroupPlan(node, summary, parts)


def name_new_top_level(
    tree: DirectoryNode,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    new_rows: Sequence[int],
) -> DirectoryName:
    """A name for a new top-level directory of the memories `new_rows` (rows of `items`, which
    hold every memory of the store, row i = memory i), chosen among the directories already under
    the root of `tree`, whose names it avoids."""
    groups = [
        np.array(sorted(i for leaf in child.leaves() for i in leaf.chunk_indices), dtype=np.int64)
        for child in tree.children
    ]
    groups.append(np.array(sorted(new_rows), dtype=np.int64))
    with single_threaded():
        evidence = _Labels(items, vectors).evidence(groups)
    return name_among(evidence[-1], evidence[:-1], [child.name for child in tree.children])


def plan_subtree(
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
    depth_budget: int | None = None,
) -> DirectoryNode:
    """The subtree of one top-level group (see `plan_group`, which also returns its evidence)."""
    return plan_group(group_id, items, vectors, config, depth_budget).node


def _first_index(node: DirectoryNode) -> int:
    return min((i for leaf in node.leaves() for i in leaf.chunk_indices), default=-1)


def rebase(node: DirectoryNode, path: str) -> DirectoryNode:
    """`node` moved to `path`, every descendant's path following it."""
    children = [rebase(child, child_path(path, child.name)) for child in node.children]
    return node.model_copy(update={"path": path, "children": children})


def assemble_tree(
    subtrees: Sequence[DirectoryNode],
    config: TaxonomyConfig,
    summaries: Sequence[GroupEvidence] | None = None,
) -> DirectoryNode:
    """Graft group subtrees under one root, ordered by their first memory, paths recomputed.

    With `summaries` (from `plan_group`), top-level names are chosen among the groups by
    `naming.name_siblings`; without, the subtrees' own names and descriptions are kept, names
    de-duplicated. The root is described by its directories. Raises `TaxonomyError` for a
    subtree too deep to graft below the root.
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
        chosen = name_siblings(group_summaries)
        names = [name.name for name in chosen]
        descriptions = [
            _group_description(tree, name, summary)
            for tree, name, summary in zip(trees, chosen, group_summaries, strict=True)
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


def _group_description(tree: DirectoryNode, name: DirectoryName, summary: GroupEvidence) -> str:
    if tree.children:
        subdirectories = [(humanize(child.name), memory_count(child)) for child in tree.children]
        return describe_parent(name.terms[:2], subdirectories)
    return describe(name.terms, summary.central_tldr)
