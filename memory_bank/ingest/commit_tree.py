"""The plan stage of a commit: the tree of the new version and every memory's file path.

Small adds are placed into the stored tree and memories keep their paths. The whole tree is
planned anew when asked (a rebuild), for a new or emptied store, when an add is large next to
the store, when the stored tree cannot take the change, after `store.replan_after_adds` placed
adds, or when placement has made the leaves less cohesive than the last plan by more than
`store.max_cohesion_drop`. A re-plan of a stored tree is recorded as a `ReorganizeOperation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_bank.config import AppConfig
from memory_bank.ingest.commit_change import Change
from memory_bank.ingest.stages import plan_tree, taxonomy_items
from memory_bank.ingest.tree_changes import mean_leaf_cohesion, remap_tree, reorganization
from memory_bank.llm.seam import LLM
from memory_bank.schemas import DirectoryNode, ReorganizeOperation
from memory_bank.store.files import assign_chunk_paths
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import validate_taxonomy
from memory_bank.taxonomy.place_role import place
from memory_bank.taxonomy.placement import should_place
from memory_bank.taxonomy.roles import PlaceRequest


@dataclass(frozen=True)
class TreePlan:
    """The tree of the new version and where its memories' files go."""

    tree: DirectoryNode
    chunk_paths: dict[int, str]  # memory index -> store-relative file path
    replan_reason: str | None  # why the tree was planned anew; None: kept or placed into
    taxonomy: dict[str, Any]  # the meta's "taxonomy": adds since the plan, cohesion
    reorganization: ReorganizeOperation | None  # what a re-plan of a stored tree moved
    moved_memories: int  # memories of `before` whose file path changed


def plan_tree_stage(
    change: Change,
    replan: bool,
    config: AppConfig,
    llm: LLM | None,
    map_calls: TaskMap = run_serially,
) -> TreePlan:
    """The tree after `change`: kept or placed into where it can be, else planned anew (with
    `replan`, always anew); memories of `before` keep their file paths where they stay."""
    before = change.before
    old_tree = remap_tree(before.tree, change.kept_index) if before else None
    if replan:
        tree, reason = None, "rebuild"
    else:
        tree, reason = _kept_or_placed(change, old_tree, config, llm)
    previous = (before.meta.get("taxonomy") if before else None) or {}
    placed = tree is not None and bool(change.added.memories)
    adds = int(previous.get("adds_since_plan", 0)) + int(placed)
    planned_cohesion = previous.get("plan_cohesion")
    vectors = change.parts.memory_vectors
    if tree is not None:
        drift = _drift(adds, mean_leaf_cohesion(tree, vectors), planned_cohesion, config)
        if drift is not None:
            tree, reason = None, drift
    if tree is None:
        memories = change.parts.memories
        tree = plan_tree(memories, vectors, config.taxonomy, llm, map_calls)
        adds, planned_cohesion = 0, mean_leaf_cohesion(tree, vectors)
    old_paths = (
        {change.kept_index[i]: p for i, p in before.chunk_paths.items() if i in change.kept_index}
        if before and before.chunk_paths
        else {}
    )
    chunk_paths = assign_chunk_paths(tree, change.parts.memories, keep=old_paths)
    return TreePlan(
        tree=tree,
        chunk_paths=chunk_paths,
        replan_reason=reason,
        taxonomy={
            "adds_since_plan": adds,
            "plan_cohesion": round(float(planned_cohesion), 4),
            "cohesion": round(mean_leaf_cohesion(tree, vectors), 4),
        },
        reorganization=(
            reorganization(reason, before, tree, chunk_paths, change.kept_index)
            if reason is not None and before is not None
            else None
        ),
        moved_memories=sum(chunk_paths[i] != path for i, path in old_paths.items()),
    )


def _kept_or_placed(
    change: Change, old_tree: DirectoryNode | None, config: AppConfig, llm: LLM | None
) -> tuple[DirectoryNode | None, str | None]:
    """The stored tree holding the change (None, and why not, when it cannot)."""
    kept, added = change.kept, len(change.added.memories)
    total = len(change.parts.memories)
    if old_tree is None or kept == 0:
        return None, "new store" if change.before is None else "store emptied"
    if added and not should_place(kept, added):
        return None, f"large add ({added} memories onto {kept})"
    if not added:
        if validate_taxonomy(old_tree, total, config.taxonomy):
            return None, "the removal left directories out of bounds"
        return old_tree, None
    request = PlaceRequest(
        tree=old_tree,
        items=taxonomy_items(change.parts.memories),
        vectors=change.parts.memory_vectors,
        new_indices=list(range(kept, total)),
        config=config.taxonomy,
    )
    tree = place(request, llm).tree
    if tree is None or validate_taxonomy(tree, total, config.taxonomy):
        return None, "the stored tree could not take the new memories"
    return tree, None


def _drift(
    adds: int, cohesion: float, planned_cohesion: float | None, config: AppConfig
) -> str | None:
    """Why a kept or placed tree has drifted far enough from its plan to plan anew (None: it
    has not)."""
    settings = config.store
    if adds >= settings.replan_after_adds:
        return f"{adds} placed adds since the last plan"
    if planned_cohesion is not None and cohesion < planned_cohesion - settings.max_cohesion_drop:
        return f"leaf cohesion {cohesion:.3f} < planned {planned_cohesion:.3f}"
    return None
