"""The coarse split of a large corpus into groups whose subtrees are planned independently.

Flow for a caller that parallelizes (e.g. one Ray task per group):

1. `rows = sample_rows(n_total, config)`; `model = fit_coarse(vectors[rows], n_total, config)`
2. `labels = assign_coarse(model, batch)` for every batch of vectors
3. `model = merge_small_groups(model, np.bincount(labels, minlength=model.size), n_total,
   config)`, then assign again if the model changed
4. per group: `plan_group(...)` / `plan_subtree(...)`; finally `assemble_tree(...)`

Only the sample (at most `config.coarse_sample` vectors) is ever clustered in one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.taxonomy.clustering import (
    NATURAL_MAX_BRANCHING,
    LeafBounds,
    branching_factor,
    nearest_centroid,
    spherical_kmeans,
)

SAMPLE_SEED = 0
ASSIGN_BATCH_ROWS = 65_536
# A coarse group below this share of the average group size is folded into its nearest group.
SMALL_GROUP_SHARE = 0.1


@dataclass(frozen=True)
class CoarseModel:
    """Unit-length group centroids; group id = row number."""

    centroids: np.ndarray  # (groups, dim) float32

    @property
    def size(self) -> int:
        return len(self.centroids)


def coarse_group_count(n_total: int, config: TaxonomyConfig) -> int:
    """Top-level directories for a corpus of `n_total` memories (same rule as any tree level)."""
    return branching_factor(n_total, config.max_depth, config)


def subtree_capacity(n_total: int, config: TaxonomyConfig) -> int:
    """Memories one group's subtree holds at the planned width and aimed leaf size."""
    width = max(NATURAL_MAX_BRANCHING, branching_factor(n_total, config.max_depth, config))
    return width ** (config.max_depth - 1) * LeafBounds.from_config(config).largest


def smallest_group(n_total: int, config: TaxonomyConfig) -> int:
    average = n_total / coarse_group_count(n_total, config)
    return max(config.min_leaf, math.floor(average * SMALL_GROUP_SHARE))


def sample_rows(n_total: int, config: TaxonomyConfig) -> np.ndarray:
    """The rows (ascending) the coarse model trains on: all, or a seeded random subset."""
    if n_total <= config.coarse_sample:
        return np.arange(n_total)
    rng = np.random.default_rng(SAMPLE_SEED)
    return np.sort(rng.choice(n_total, size=config.coarse_sample, replace=False))


def _check_vectors(vectors: np.ndarray) -> np.ndarray:
    if vectors.ndim != 2 or len(vectors) == 0:
        raise TaxonomyError(f"expected a non-empty (n, dim) vector array, got {vectors.shape}")
    return np.ascontiguousarray(vectors, dtype=np.float32)


def fit_coarse(sample_vectors: np.ndarray, n_total: int, config: TaxonomyConfig) -> CoarseModel:
    """Spherical k-means on the sample; group sizes estimated from it are then evened out.

    Groups estimated larger than a subtree holds are split by k-means on their sample members;
    groups estimated too small are dropped, so their memories go to the nearest group.
    """
    sample = _check_vectors(sample_vectors)
    if len(sample) > config.coarse_sample:
        sample = sample[sample_rows(len(sample), config)]
    centroids = spherical_kmeans(sample, coarse_group_count(n_total, config))
    labels = nearest_centroid(sample, centroids)
    scale = n_total / len(sample)
    capacity = subtree_capacity(n_total, config)
    kept: list[np.ndarray] = []
    for group_id in range(len(centroids)):
        members = sample[labels == group_id]
        estimated = len(members) * scale
        if estimated > capacity and len(members) > 1:
            kept.append(spherical_kmeans(members, math.ceil(estimated / capacity)))
        elif len(members):
            kept.append(centroids[group_id : group_id + 1])
    model = CoarseModel(np.concatenate(kept).astype(np.float32))
    sizes = np.bincount(nearest_centroid(sample, model.centroids), minlength=model.size)
    return merge_small_groups(model, sizes * scale, n_total, config)


def assign_coarse(model: CoarseModel, vectors: np.ndarray) -> np.ndarray:
    """Group id of every vector (nearest centroid by cosine); any batch size works."""
    data = _check_vectors(vectors)
    labels = [
        nearest_centroid(data[start : start + ASSIGN_BATCH_ROWS], model.centroids)
        for start in range(0, len(data), ASSIGN_BATCH_ROWS)
    ]
    return np.concatenate(labels).astype(np.int64)


def merge_small_groups(
    model: CoarseModel, group_sizes: np.ndarray, n_total: int, config: TaxonomyConfig
) -> CoarseModel:
    """Drop the centroids of groups below `smallest_group`; reassigning merges them away.

    Keeps the largest group if every group is small, so a model never ends up empty.
    """
    sizes = np.asarray(group_sizes, dtype=np.float64)
    if len(sizes) != model.size:
        raise TaxonomyError(f"got {len(sizes)} group sizes for {model.size} coarse groups")
    keep = sizes >= smallest_group(n_total, config)
    if not keep.any():
        keep[int(np.argmax(sizes))] = True
    if keep.all():
        return model
    return CoarseModel(model.centroids[keep])
