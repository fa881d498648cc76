"""What a commit compares between store versions: leaf cohesion, renumbered trees, what each
README is made from (to regenerate only changed ones), and what a re-plan moved."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from memory_bank.schemas import DirectoryNode, MemorizedChunk, MovedMemory, ReorganizeOperation
from memory_bank.store.snapshot import StoreSnapshot
from memory_bank.taxonomy.planner import memory_count
from memory_bank.taxonomy.readme import ReadmeFileEntry


def mean_leaf_cohesion(tree: DirectoryNode, vectors: np.ndarray) -> float:
    """Mean cosine of each memory to its leaf's (normalized) mean vector."""
    total, count = 0.0, 0
    for leaf in tree.leaves():
        if not leaf.chunk_indices:
            continue
        rows = vectors[leaf.chunk_indices]
        centroid = rows.sum(axis=0)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
        total += float((rows @ centroid).sum())
        count += len(leaf.chunk_indices)
    return total / count if count else 0.0


def remap_tree(tree: DirectoryNode, kept_index: dict[int, int]) -> DirectoryNode:
    """`tree` with memory indices renumbered and removed ones dropped; directories left empty
    are removed (the root stays)."""
    remapped = tree.model_copy(deep=True)

    def visit(node: DirectoryNode) -> bool:
        node.chunk_indices = [kept_index[i] for i in node.chunk_indices if i in kept_index]
        node.children = [child for child in node.children if visit(child)]
        return bool(node.chunk_indices or node.children)

    visit(remapped)
    return remapped


def readme_signatures(
    tree: DirectoryNode, memories: Sequence[MemorizedChunk], chunk_paths: dict[int, str]
) -> dict[str, str]:
    """What each directory's README is made from, as a comparable string per tree path: its
    name and description, its children and files, and which memories its subtree holds (its
    summary is drawn from them)."""
    by_index = {memory.index: memory for memory in memories}
    signatures = {}
    held = _subtree_digests(tree, by_index)
    for node in tree.iter_nodes():
        files = [
            [chunk_paths[i].rsplit("/", 1)[-1], by_index[i].title, by_index[i].tldr]
            for i in node.chunk_indices
        ]
        children = [
            [child.name, child.description, memory_count(child), len(child.children)]
            for child in node.children
        ]
        signature = [node.name, node.description, children, files, held[node.path]]
        signatures[node.path] = json.dumps(signature)
    return signatures


def _subtree_digests(tree: DirectoryNode, by_index: dict[int, MemorizedChunk]) -> dict[str, str]:
    """Per directory, a digest of the chunk ids its subtree holds."""
    digests: dict[str, str] = {}

    def visit(node: DirectoryNode) -> list[str]:
        chunk_ids = [str(by_index[i].metadata.get("chunk_id", i)) for i in node.chunk_indices]
        for child in node.children:
            chunk_ids.extend(visit(child))
        digests[node.path] = hashlib.sha1("\n".join(sorted(chunk_ids)).encode()).hexdigest()
        return chunk_ids

    visit(tree)
    return digests


def readme_file_entry(memory: MemorizedChunk, chunk_path: str) -> ReadmeFileEntry:
    return ReadmeFileEntry(name=chunk_path.rsplit("/", 1)[-1], title=memory.title, tldr=memory.tldr)


def reorganization(
    reason: str,
    before: StoreSnapshot,
    tree: DirectoryNode,
    chunk_paths: dict[int, str],
    kept_index: dict[int, int],
) -> ReorganizeOperation | None:
    """What a re-plan changed for the memories that were there before; None if nothing."""
    chunk_id_of = {m.index: str(m.metadata["chunk_id"]) for m in before.parts.memories}
    moved = [
        MovedMemory(chunk_id=chunk_id_of[old], source=path, target=chunk_paths[kept_index[old]])
        for old, path in sorted((before.chunk_paths or {}).items())
        if old in kept_index and chunk_paths[kept_index[old]] != path
    ]
    directories_before = {node.path for node in before.tree.iter_nodes()}
    directories_after = {node.path for node in tree.iter_nodes()}
    if not moved and directories_before == directories_after:
        return None
    return ReorganizeOperation(
        at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        reason=reason,
        moved=moved,
        new_directories=sorted(directories_after - directories_before),
        deleted_directories=sorted(directories_before - directories_after),
    )
