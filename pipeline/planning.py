"""Taxonomy planning and README composition as Ray tasks.

Above `taxonomy.coarse_threshold` memories the driver fits coarse groups on a sample, assigns
every memory to a group, and plans each group's subtree in its own task, so no step sees every
memory's data at once. READMEs are composed bottom-up, one task per top-level subtree; the
driver writes only the root README.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import ray

from memory_bank.agents.readme import compose_readme
from memory_bank.config import TaxonomyConfig
from memory_bank.ingest import compose_readmes, ensure_valid_tree, plan_tree, taxonomy_items
from memory_bank.schemas import DirectoryNode, MemorizedChunk
from memory_bank.taxonomy import (
    GroupPlan,
    assemble_tree,
    assign_coarse,
    fit_coarse,
    merge_small_groups,
    plan_group,
    sample_rows,
)


@ray.remote
def _plan_group_task(
    group_id: int, memories: list[MemorizedChunk], vectors: np.ndarray, config: TaxonomyConfig
) -> GroupPlan:
    return plan_group(group_id, taxonomy_items(memories), vectors, config)


@ray.remote
def _compose_readmes_task(
    subtree: DirectoryNode, memories: list[MemorizedChunk], chunk_paths: dict[int, str]
) -> dict[str, str]:
    return compose_readmes(subtree, memories, chunk_paths)


def plan_tree_distributed(
    memories: Sequence[MemorizedChunk], vectors: np.ndarray, config: TaxonomyConfig, task_cpus: float
) -> DirectoryNode:
    n_total = len(memories)
    if n_total <= config.coarse_threshold:
        return plan_tree(memories, vectors, config)
    model = fit_coarse(vectors[sample_rows(n_total, config)], n_total, config)
    labels = assign_coarse(model, vectors)
    merged = merge_small_groups(model, np.bincount(labels, minlength=model.size), n_total, config)
    if merged.size != model.size:
        labels = assign_coarse(merged, vectors)
    plan_group_task = _plan_group_task.options(num_cpus=task_cpus)
    futures = []
    for group_id in np.unique(labels):
        rows = np.flatnonzero(labels == group_id)
        group_memories = [memories[row] for row in rows]
        futures.append(plan_group_task.remote(int(group_id), group_memories, vectors[rows], config))
    plans: list[GroupPlan] = ray.get(futures)
    tree = assemble_tree([plan.node for plan in plans], config, [plan.summary for plan in plans])
    return ensure_valid_tree(tree, [memory.index for memory in memories], config)


def compose_readmes_distributed(
    tree: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    chunk_paths: dict[int, str],
    config: TaxonomyConfig,
    task_cpus: float,
) -> dict[str, str]:
    if len(memories) <= config.coarse_threshold:
        # A small tree composes in milliseconds; shipping it to tasks would cost seconds.
        return compose_readmes(tree, memories, chunk_paths)
    by_index = {memory.index: memory for memory in memories}
    compose_task = _compose_readmes_task.options(num_cpus=task_cpus)
    futures = []
    for subtree in tree.children:
        indices = [i for node in subtree.iter_nodes() for i in node.chunk_indices]
        futures.append(
            compose_task.remote(
                subtree, [by_index[i] for i in indices], {i: chunk_paths[i] for i in indices}
            )
        )
    readmes: dict[str, str] = {}
    for part in ray.get(futures):
        readmes.update(part)
    readmes["/"] = compose_readme(tree, tree.children, [])
    return readmes
