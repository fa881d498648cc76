"""Incremental add: new memories go into the existing tree instead of a new plan.

New memories that fit no leaf of the tree and belong together (a new topic: `fit.new_topic`,
with thresholds each store calibrates from its own memories) are planned with `plan_group` as
one new top-level directory, named from their own terms and kept apart from the existing names.
So adding JavaScript notes to a store of Python notes makes a JavaScript directory beside the
Python ones instead of filling Python leaves with them. One add makes at most one such
directory (different themes among its memories become its subdirectories), and the root grows
to at most `ROOT_WIDENING` times the width a plan would give it; past that, or when the new
directory cannot be planned, the new memories descend like the others.

The other new memories each descend from the root to the child directory whose memories they
are closest to (cosine to the normalized mean of the child's memory vectors, computed once from
the tree before the add), and join the leaf they reach. A leaf that then holds more than
`max_leaf` memories is re-planned on its own: it becomes a parent with subdirectories, or, at
`max_depth`, its parent's leaves are re-planned together. Every stored memory outside such a
re-planned directory keeps its directory and file path, so the paths earlier answers cited stay
valid. Parent descriptions (the root's too) get their counts and subdirectories refreshed.

When the add is large next to the store (more than `MAX_GROWTH` of it), placement would pour
it into a tree shaped for the old content, so the caller plans the whole tree anew instead; a
scheduled rebuild does the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.clustering import NATURAL_MAX_BRANCHING, branching_factor
from memory_bank.taxonomy.describe import describe_parent, humanize
from memory_bank.taxonomy.fit import FitBounds, new_topic
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.planner import (
    child_path,
    memory_count,
    name_new_top_level,
    plan_group,
    rebase,
)
from memory_bank.taxonomy.validate import validate_taxonomy

MAX_GROWTH = 0.5  # new memories per stored memory above which the tree is planned anew
ROOT_WIDENING = 2  # see _root_width_limit
# Our own parent descriptions: "17 memories about aqueduct and printed in 3 subdirectories: ..."
_PARENT_DESCRIPTION = re.compile(
    r"[\d,]+ memor(?:y|ies)(?: about (?P<about>.+?))? in \d+ subdirector"
)


def should_place(stored: int, added: int) -> bool:
    """Whether to place `added` new memories into a tree of `stored` ones (else plan anew)."""
    return stored > 0 and added <= MAX_GROWTH * stored


def place_memories(
    tree: DirectoryNode,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    new_indices: Sequence[int],
    config: TaxonomyConfig,
    *,
    new_topics: bool = True,
    fit_bounds: FitBounds | None = None,
) -> DirectoryNode | None:
    """`tree` with the memories `new_indices` added (row i of `items`/`vectors` is memory i).

    With `new_topics`, new memories that fit no leaf and form a topic of their own
    (`fit.new_topic`, by `fit_bounds`, default the store's calibrated `FitBounds`) become a new
    top-level directory and the rest descend. When that directory cannot be made (the root is at
    its width limit, planning fails, the result fails validation) every new memory descends.

    Returns None when the tree cannot take them without planning it anew (the root itself
    would have to be re-planned).
    """
    if tree.is_leaf():
        return None  # an empty store: nothing to place into
    directions = _directions(tree, vectors)
    topic = new_topic(tree, vectors, new_indices, config.min_leaf, fit_bounds) if new_topics else []
    if topic:
        chosen = set(topic)
        rest = [index for index in new_indices if int(index) not in chosen]
        placed = _place(tree, items, vectors, rest, directions, config, topic)
        if placed is not None and not validate_taxonomy(placed, len(items), config):
            return placed
    return _place(tree, items, vectors, new_indices, directions, config, [])


def _place(
    tree: DirectoryNode,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    new_indices: Sequence[int],
    directions: dict[str, np.ndarray],
    config: TaxonomyConfig,
    topic: Sequence[int],
) -> DirectoryNode | None:
    """A copy of `tree` with `new_indices` descended into leaves and `topic` (if any) planned as
    a new top-level directory; None when that fails."""
    placed = tree.model_copy(deep=True)
    touched: set[str] = set()
    for index in new_indices:
        node = placed
        while node.children:
            node = max(
                node.children, key=lambda child: float(directions[child.path] @ vectors[index])
            )
        node.chunk_indices.append(int(index))
        touched.add(node.path)
    if not _settle(placed, touched, items, vectors, config):
        return None
    if topic and not _add_top_level(placed, items, vectors, topic, config):
        return None
    _refresh_parent_descriptions(placed)
    return placed


def _settle(
    placed: DirectoryNode,
    touched: set[str],
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
) -> bool:
    """Re-plan every touched leaf that grew past `max_leaf`; False when one cannot be."""
    for path in sorted(touched):
        leaf = _find(placed, path)
        overfull = leaf is not None and len(leaf.chunk_indices) > config.max_leaf
        if overfull and not _replan_around(placed, path, items, vectors, config):
            return False
    return True


def closest_leaves(
    tree: DirectoryNode, vectors: np.ndarray, indices: Sequence[int], count: int
) -> dict[int, list[tuple[str, float]]]:
    """For each memory of `indices`, the `count` leaves whose memories it is closest to (cosine
    to the leaf's normalized mean vector, from the tree as given), best first."""
    directions = _directions(tree, vectors)
    leaves = [leaf.path for leaf in tree.leaves() if leaf.path != "/"]
    if not leaves:
        return {int(index): [] for index in indices}
    matrix = np.stack([directions[path] for path in leaves])
    closest = {}
    for index in indices:
        cosines = matrix @ vectors[index]
        order = np.argsort(-cosines, kind="stable")[:count]
        closest[int(index)] = [(leaves[i], float(cosines[i])) for i in order]
    return closest


def place_chosen(
    tree: DirectoryNode,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    choices: dict[int, str],
    config: TaxonomyConfig,
    new_descriptions: dict[str, str] | None = None,
) -> DirectoryNode | None:
    """`tree` with each memory of `choices` put into the directory named by its path: an
    existing leaf, or a new directory (made as a leaf under an existing directory that holds no
    memories itself, described by `new_descriptions`). Leaves grown past `max_leaf` are
    re-planned as in `place_memories`; None when that fails or a path is not usable."""
    placed = tree.model_copy(deep=True)
    touched: set[str] = set()
    for index, path in sorted(choices.items()):
        node = _find(placed, path)
        if node is None:
            parent = _find(placed, _parent_path(path))
            name = path.rsplit("/", 1)[-1]
            if parent is None or parent.chunk_indices or _depth(path) > config.max_depth:
                return None
            node = DirectoryNode(
                path=child_path(parent.path, name),
                name=name,
                description=(new_descriptions or {}).get(path, ""),
            )
            parent.children.append(node)
        elif node.children:
            return None
        node.chunk_indices.append(int(index))
        touched.add(node.path)
    if not _settle(placed, touched, items, vectors, config):
        return None
    _refresh_parent_descriptions(placed)
    return placed


def _root_width_limit(total: int, config: TaxonomyConfig) -> int:
    """Top-level directories placement may grow the root to: twice what a plan of `total`
    memories gives it at most, so the root README stays a short list until a re-plan."""
    planned = max(NATURAL_MAX_BRANCHING, branching_factor(total, config.max_depth, config))
    return ROOT_WIDENING * planned


def _add_top_level(
    tree: DirectoryNode,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    topic: Sequence[int],
    config: TaxonomyConfig,
) -> bool:
    """Plan the memories `topic` as one new directory under the root (several themes among
    them become its subdirectories); False when the root is full or the plan fails."""
    if len(tree.children) + 1 > _root_width_limit(memory_count(tree) + len(topic), config):
        return False
    rows = sorted(int(index) for index in topic)
    try:
        plan = plan_group(len(tree.children), [items[row] for row in rows], vectors[rows], config)
    except TaxonomyError:
        return False
    # Named among the existing directories (distinct from them, never one of their names).
    name = name_new_top_level(tree, items, vectors, rows)
    node = plan.node.model_copy(update={"name": name.name})
    tree.children.append(rebase(node, child_path(tree.path, name.name)))
    return True


def _directions(tree: DirectoryNode, vectors: np.ndarray) -> dict[str, np.ndarray]:
    """Normalized mean vector of every directory's memories (its whole subtree)."""
    sums: dict[str, np.ndarray] = {}

    def visit(node: DirectoryNode) -> np.ndarray:
        total = np.zeros(vectors.shape[1], dtype=np.float64)
        if node.chunk_indices:
            total += vectors[node.chunk_indices].sum(axis=0)
        for child in node.children:
            total += visit(child)
        sums[node.path] = total
        return total

    visit(tree)
    return {
        path: (total / max(float(np.linalg.norm(total)), 1e-12)).astype(np.float32)
        for path, total in sums.items()
    }


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def _parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _find(node: DirectoryNode, path: str) -> DirectoryNode | None:
    for current in node.iter_nodes():
        if current.path == path:
            return current
    return None


def _replan_around(
    tree: DirectoryNode,
    leaf_path: str,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
) -> bool:
    """Re-plan the overfull leaf (or, at max_depth, its parent) in place; False if that is the
    root."""
    target = leaf_path if _depth(leaf_path) < config.max_depth else _parent_path(leaf_path)
    if target == "/":
        return False
    node = _find(tree, target)
    if node is None:  # already replaced by an earlier re-plan of its parent
        return True
    rows = sorted(i for leaf in node.leaves() for i in leaf.chunk_indices)
    budget = config.max_depth - _depth(target)
    plan = plan_group(0, [items[row] for row in rows], vectors[rows], config, depth_budget=budget)
    node.children = [
        rebase(child, child_path(node.path, child.name)) for child in plan.node.children
    ]
    node.chunk_indices = [] if node.children else list(plan.node.chunk_indices)
    node.description = plan.node.description
    return True


def _refresh_parent_descriptions(tree: DirectoryNode) -> None:
    """Parent descriptions count memories and list subdirectories: recount them."""
    for node in tree.iter_nodes():
        if not node.children:
            continue
        match = _PARENT_DESCRIPTION.match(node.description)
        about = [match.group("about")] if match and match.group("about") else []
        listed = [(humanize(child.name), memory_count(child)) for child in node.children]
        node.description = describe_parent(about, listed)
