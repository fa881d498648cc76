"""The top-level split of a corpus into groups whose subtrees are planned independently.

`split_top_level` clusters the planning vectors (`documents.pull_together`: memories pulled
towards their documents) with Ward's method and cuts the dendrogram at the width with the best
silhouette between the width the tree's capacity needs (`coarse_group_count`) and
`WIDEST_SPLIT` times that: a cohesion/separation criterion decides how many top-level
directories a corpus has, the capacity only how few. The silhouette is computed on the
memories' own vectors, since pulled vectors make any split that separates documents look good.
Ward needs all pairwise distances, so at most `taxonomy.coarse_sample` memories (a seeded
sample) are clustered; the others join the group of their nearest centroid. Then every
document goes whole to the group most of its memories are in, groups larger than a subtree
holds are split by k-means, and groups smaller than `smallest_group` join the group nearest to
them.

Why not spherical k-means at the capacity width: on a corpus mixing encyclopedia passages,
stories and meetings (`bench/taxonomy.py`) it put many more memories in a top-level directory
of another kind (politics passages with parliament meetings, folk-tale passages with fairy
tales) than this split does (docs/benchmarks.md).
"""

from __future__ import annotations

import math

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.taxonomy.clustering import (
    NATURAL_MAX_BRANCHING,
    LeafBounds,
    branching_factor,
    cosine_distances,
    euclidean_condensed,
    nearest_centroid,
    silhouette,
    spherical_kmeans,
)

SAMPLE_SEED = 0
# The widest top-level split tried, as a multiple of the width the capacity needs.
WIDEST_SPLIT = 2
ASSIGN_BATCH_ROWS = 65_536
# A top-level group below this share of the average group size joins its nearest group.
SMALL_GROUP_SHARE = 0.1


def coarse_group_count(n_total: int, config: TaxonomyConfig) -> int:
    """The fewest top-level directories the capacity allows (same rule as any tree level)."""
    return branching_factor(n_total, config.max_depth, config)


def subtree_capacity(n_total: int, config: TaxonomyConfig) -> int:
    """Memories one group's subtree holds at the planned width and aimed leaf size."""
    width = max(NATURAL_MAX_BRANCHING, branching_factor(n_total, config.max_depth, config))
    return width ** (config.max_depth - 1) * LeafBounds.from_config(config).largest


def smallest_group(n_total: int, config: TaxonomyConfig) -> int:
    average = n_total / coarse_group_count(n_total, config)
    return max(config.min_leaf, math.floor(average * SMALL_GROUP_SHARE))


def _check_vectors(vectors: np.ndarray) -> np.ndarray:
    if vectors.ndim != 2 or len(vectors) == 0:
        raise TaxonomyError(f"expected a non-empty (n, dim) vector array, got {vectors.shape}")
    return np.ascontiguousarray(vectors, dtype=np.float32)


def ward_sample(count: int, config: TaxonomyConfig) -> np.ndarray:
    """The rows (ascending) Ward clusters and the silhouette judges: all, or a seeded random
    `config.coarse_sample` of them (both hold every pairwise distance of the rows they take)."""
    if count <= config.coarse_sample:
        return np.arange(count)
    rng = np.random.default_rng(SAMPLE_SEED)
    return np.sort(rng.choice(count, size=config.coarse_sample, replace=False))


def top_level_labels(
    vectors: np.ndarray,
    n_total: int,
    config: TaxonomyConfig,
    judge_vectors: np.ndarray | None = None,
) -> np.ndarray:
    """Ward clusters of `vectors` (0-based labels), cut at the width between
    `coarse_group_count(n_total)` and `WIDEST_SPLIT` times that with the best silhouette (cosine
    distances between `judge_vectors`, default `vectors`; ties go to the narrower split)."""
    data = _check_vectors(vectors)
    judge = data if judge_vectors is None else _check_vectors(judge_vectors)
    narrowest = min(coarse_group_count(n_total, config), len(data) - 1)
    widest = min(WIDEST_SPLIT * coarse_group_count(n_total, config), len(data) - 1)
    if widest < 2:
        return np.zeros(len(data), dtype=np.int64)
    # Imported where a tree is cut: every CLI process imports this module, few of them plan.
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(euclidean_condensed(data), method="ward")
    candidates = [
        fcluster(tree, k, criterion="maxclust") - 1 for k in range(max(narrowest, 2), widest + 1)
    ]
    candidates = [labels for labels in candidates if labels.max() >= 1]
    if len(candidates) <= 1:
        return (candidates[0] if candidates else np.zeros(len(data))).astype(np.int64)
    distances = cosine_distances(judge.astype(np.float64))
    scores = [silhouette(distances, labels) for labels in candidates]
    return candidates[int(np.argmax(scores))].astype(np.int64)


def nearest_group(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The centroid (row) nearest to every vector by cosine, in batches of any size."""
    data = _check_vectors(vectors)
    parts = [
        nearest_centroid(data[start : start + ASSIGN_BATCH_ROWS], centroids)
        for start in range(0, len(data), ASSIGN_BATCH_ROWS)
    ]
    return np.concatenate(parts).astype(np.int64)


def centroids_of(vectors: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Unit-length mean of each label's vectors (row = label)."""
    sums = np.zeros((int(labels.max()) + 1, vectors.shape[1]))
    np.add.at(sums, labels, vectors.astype(np.float64))
    norms = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return (sums / norms).astype(np.float32)


def _by_document(labels: np.ndarray, documents: np.ndarray) -> np.ndarray:
    """Every row gets the label most of its document's rows have (ties: the lowest label)."""
    pairs = np.stack([documents, labels], axis=1)
    unique, counts = np.unique(pairs, axis=0, return_counts=True)
    best: dict[int, tuple[int, int]] = {}
    for (document, label), count in zip(unique.tolist(), counts.tolist(), strict=True):
        if document not in best or count > best[document][0]:
            best[document] = (count, label)
    return np.array([best[document][1] for document in documents.tolist()], dtype=np.int64)


def split_top_level(
    planning: np.ndarray,
    judge: np.ndarray,
    documents: np.ndarray,
    config: TaxonomyConfig,
) -> np.ndarray:
    """The top-level group of every row (labels 0.., numbered by first row); `planning` are the
    vectors clustered, `judge` the memories' own vectors (for the silhouette), `documents` the
    document number of each row (see the module docstring)."""
    data = _check_vectors(planning)
    n_total = len(data)
    rows = ward_sample(n_total, config)
    sample_labels = top_level_labels(data[rows], n_total, config, judge[rows])
    labels = nearest_group(data, centroids_of(data[rows], sample_labels))
    labels[rows] = sample_labels
    labels = _by_document(labels, documents)
    labels = _split_oversized(data, labels, n_total, config)
    return _merge_small(data, labels, smallest_group(n_total, config))


def _split_oversized(
    data: np.ndarray, labels: np.ndarray, n_total: int, config: TaxonomyConfig
) -> np.ndarray:
    """Groups larger than a subtree holds are cut by k-means into parts that fit."""
    capacity = subtree_capacity(n_total, config)
    result = labels.copy()
    next_label = int(labels.max()) + 1
    for label in range(int(labels.max()) + 1):
        members = np.flatnonzero(labels == label)
        if len(members) <= capacity:
            continue
        centroids = spherical_kmeans(data[members], math.ceil(len(members) / capacity))
        parts = nearest_group(data[members], centroids)
        for part in range(1, int(parts.max()) + 1):
            result[members[parts == part]] = next_label
            next_label += 1
    return result


def _merge_small(data: np.ndarray, labels: np.ndarray, smallest: int) -> np.ndarray:
    """Groups below `smallest` rows join the nearest other group (smallest first), then the
    labels are renumbered by first row."""
    labels = labels.copy()
    while True:
        present, sizes = np.unique(labels, return_counts=True)
        if len(present) <= 1 or sizes.min() >= smallest:
            break
        small = int(present[int(np.argmin(sizes))])
        centroids = centroids_of(data, labels)
        similarity = centroids[present] @ centroids[small]
        similarity[present == small] = -np.inf
        labels[labels == small] = int(present[int(np.argmax(similarity))])
    _, first_rows, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first_rows, kind="stable"), kind="stable")
    return order[inverse.ravel()].astype(np.int64)


def accept_splits(
    judge: np.ndarray, labels: np.ndarray, splits: list[np.ndarray], config: TaxonomyConfig
) -> list[bool]:
    """Which proposed refinements of the top-level `labels` (one label per row) to make: each
    split gives every row of one group its part's label (-1 elsewhere); it is made when the
    silhouette of the memories' own vectors `judge` (a seeded sample of
    `config.coarse_sample`) is at least as good with it as without, the splits tried in turn,
    each on what the earlier ones left."""
    rows = ward_sample(len(judge), config)
    distances = cosine_distances(_check_vectors(judge)[rows].astype(np.float64))
    current = labels.astype(np.int64).copy()

    def sampled_silhouette(candidate: np.ndarray) -> float:
        sampled = candidate[rows]
        if not 1 < len(np.unique(sampled)) < len(sampled):
            return -np.inf
        return silhouette(distances, sampled)

    accepted = []
    for split in splits:
        proposed = current.copy()
        inside = split >= 0
        proposed[inside] = int(current.max()) + 1 + split[inside]
        made = sampled_silhouette(proposed) >= sampled_silhouette(current)
        if made:
            current = proposed
        accepted.append(made)
    return accepted
