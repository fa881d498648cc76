"""Taxonomy validation (seed 000 §14) and the flat fallback used when a plan fails it."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.clustering import LeafBounds, branching_factor
from memory_bank.taxonomy.planner import child_path
from memory_bank.text.lexicon import MAX_NAME_LENGTH, is_valid_name

MAX_LISTED = 10  # indices quoted per problem; the count is always given


def _listed(values: Sequence[int]) -> str:
    shown = ", ".join(str(value) for value in values[:MAX_LISTED])
    return shown + (f", ... ({len(values)} in all)" if len(values) > MAX_LISTED else "")


def validate_taxonomy(node: DirectoryNode, total_chunks: int, config: TaxonomyConfig) -> list[str]:
    """Every problem of the tree rooted at `node`, one sentence each; empty means valid.

    Checks: the root is "/" and holds no memories itself; indices 0..total_chunks-1 each sit in
    exactly one leaf (none missing, duplicated or out of range); parents hold no indices; names
    are valid and unique among siblings; paths match names; depth <= max_depth; no leaf holds
    more than hard_max_leaf memories or none at all.
    """
    problems: list[str] = []
    if node.path != "/" or node.name != "":
        problems.append(
            f"root must have path '/' and an empty name, got path {node.path!r}, name {node.name!r}"
        )
    if node.is_leaf() and node.chunk_indices:
        problems.append("the root holds memories directly; they belong in a directory below it")
    if total_chunks > 0 and node.is_leaf():
        problems.append("no directory below the root")
    depth = node.depth()
    if depth > config.max_depth:
        problems.append(f"tree is {depth} levels deep, more than max_depth {config.max_depth}")

    placements: dict[int, list[str]] = defaultdict(list)
    for current in node.iter_nodes():
        problems.extend(_node_problems(current, config))
        if current.is_leaf() and current is not node:
            for index in current.chunk_indices:
                placements[index].append(current.path)

    duplicated = sorted(index for index, paths in placements.items() if len(paths) > 1)
    for index in duplicated[:MAX_LISTED]:
        problems.append(f"index {index} is in {len(placements[index])} places: {placements[index]}")
    if len(duplicated) > MAX_LISTED:
        problems.append(f"{len(duplicated)} indices are placed more than once in all")
    out_of_range = sorted(index for index in placements if not 0 <= index < total_chunks)
    if out_of_range:
        problems.append(f"indices outside 0..{total_chunks - 1}: {_listed(out_of_range)}")
    missing = sorted(set(range(total_chunks)) - placements.keys())
    if missing:
        problems.append(f"indices in no leaf: {_listed(missing)}")
    return problems


def _node_problems(node: DirectoryNode, config: TaxonomyConfig) -> list[str]:
    problems: list[str] = []
    where = node.path or "<no path>"
    if node.children and node.chunk_indices:
        problems.append(f"{where}: a parent directory holds memories {_listed(node.chunk_indices)}")
    for child in node.children:
        if not is_valid_name(child.name):
            problems.append(
                f"{where}: invalid directory name {child.name!r} (lowercase a-z, 0-9 and _, "
                f"starting with a letter, at most {MAX_NAME_LENGTH} characters)"
            )
        expected = child_path(node.path, child.name)
        if child.path != expected:
            problems.append(f"{child.path}: path should be {expected!r}")
        if child.is_leaf() and not child.chunk_indices:
            problems.append(f"{child.path}: empty directory")
        if child.is_leaf() and len(child.chunk_indices) > config.hard_max_leaf:
            problems.append(
                f"{child.path}: {len(child.chunk_indices)} memories, more than hard_max_leaf "
                f"{config.hard_max_leaf}"
            )
    name_counts = Counter(child.name for child in node.children)
    repeated = sorted(name for name, count in name_counts.items() if count > 1)
    if repeated:
        problems.append(f"{where}: sibling names used twice: {repeated}")
    return problems


def flat_fallback(indices: Sequence[int], config: TaxonomyConfig) -> DirectoryNode:
    """A valid tree by plain sequential splitting (seed 000: "fall back to flat structure").

    Leaves take consecutive runs of `indices` in the given order; a corpus too large for one
    level of directories gets the same even nesting the planner uses, named part_1, part_2, ...
    """
    ordered = np.asarray(list(indices), dtype=np.int64)
    root = DirectoryNode(path="/", name="", description="Memories in ingest order.")
    if len(ordered) == 0:
        return root
    children = _sequential_children(ordered, "/", config.max_depth, config)
    return root.model_copy(update={"children": children})


def _sequential_children(
    indices: np.ndarray, path: str, levels: int, config: TaxonomyConfig
) -> list[DirectoryNode]:
    largest = LeafBounds.from_config(config).largest
    parts = branching_factor(len(indices), levels, config)
    if levels == 1:
        parts = max(parts, math.ceil(len(indices) / largest))
    if len(indices) <= largest:
        parts = 1
    children: list[DirectoryNode] = []
    for number, run in enumerate(np.array_split(indices, min(parts, len(indices))), start=1):
        name = f"part_{number}"
        node_path = child_path(path, name)
        description = f"{len(run)} memories in ingest order, from index {run[0]} to {run[-1]}."
        if len(run) <= largest or levels == 1:
            children.append(
                DirectoryNode(
                    path=node_path,
                    name=name,
                    description=description,
                    chunk_indices=[int(i) for i in run],
                )
            )
        else:
            grandchildren = _sequential_children(run, node_path, levels - 1, config)
            children.append(
                DirectoryNode(
                    path=node_path, name=name, description=description, children=grandchildren
                )
            )
    return children
