"""Hierarchical, deterministic clustering of memory vectors into a shallow tree of groups.

Each node is split into k groups. Up to `KMEANS_ABOVE` vectors: Ward clustering, with the cut
chosen by silhouette plus a leaf-size penalty among fixed-k cuts (k in 2..7) and the cut that
splits the dendrogram top-down until every cluster fits in a leaf; wide levels of big corpora
take that size-bounded cut directly. Above `KMEANS_ABOVE`: spherical k-means. Groups smaller than
`min_leaf` join their nearest sibling, and groups that must be leaves but are still too big are
cut into equal parts along their main direction of variation, so every leaf ends up with at most
`max_leaf` memories.

Capacity: the branching factor k of a node with m memories and r levels left is the smallest
that reaches leaves of about `target_leaf` memories, using as few levels as possible while
k <= 7. Seven branches over three levels hold 7^3 * 7 = 2,401 memories at the aimed leaf size;
past that every level widens evenly to about (m / target_leaf)^(1/r): 28 branches per level at
100,000 memories, 59 at 1,000,000. There is no size limit, only wider README listings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

from memory_bank.config import TaxonomyConfig

NATURAL_MAX_BRANCHING = 7
# Ward needs O(m^2) memory and time: above this many vectors k-means splits the node instead.
KMEANS_ABOVE = 1000
_DISTANCE_BLOCK_ROWS = 256
KMEANS_SEED = 1234
KMEANS_ITERATIONS = 20
# Silhouette scores of text embeddings sit around 0.05-0.3; this weight makes a split that puts
# a fifth of the memories into out-of-bounds leaves lose against a slightly less crisp one.
LEAF_BOUNDS_PENALTY = 0.5
# Mild pull towards the k that keeps the tree balanced.
BRANCHING_PENALTY = 0.01


@dataclass(frozen=True)
class LeafBounds:
    """The leaf sizes to aim for, made consistent whatever the config says."""

    smallest: int
    target: int
    largest: int

    @classmethod
    def from_config(cls, config: TaxonomyConfig) -> LeafBounds:
        largest = min(config.max_leaf, config.hard_max_leaf)
        smallest = min(config.min_leaf, largest)
        return cls(smallest, min(max(config.target_leaf, smallest), largest), largest)


@dataclass
class ClusterNode:
    """A group of rows (positions in the planning arrays, ascending) and its subgroups."""

    rows: np.ndarray
    children: list[ClusterNode] = field(default_factory=list)


def branching_factor(size: int, levels: int, config: TaxonomyConfig) -> int:
    """How many groups a node of `size` memories with `levels` levels below it splits into."""
    leaves_wanted = max(size / LeafBounds.from_config(config).target, 1.0)
    for used_levels in range(1, max(levels, 1) + 1):
        # The small epsilon keeps 49 ** (1/2) from rounding up to 8.
        branches = math.ceil(leaves_wanted ** (1.0 / used_levels) - 1e-9)
        if branches <= NATURAL_MAX_BRANCHING:
            return max(branches, 2)
    return max(math.ceil(leaves_wanted ** (1.0 / max(levels, 1)) - 1e-9), 2)


@contextmanager
def single_threaded() -> Iterator[None]:
    """Run BLAS/LAPACK and faiss on one thread for the duration of a planning call.

    Planning does thousands of small matrix operations: with busy cores, OpenMP/OpenBLAS
    thread hand-offs made them many times slower. Parallelism comes from planning coarse groups
    in separate tasks instead.
    """
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        with threadpool_limits(limits=1):
            yield
    finally:
        faiss.omp_set_num_threads(previous)


def spherical_kmeans(vectors: np.ndarray, k: int, seed: int = KMEANS_SEED) -> np.ndarray:
    """Unit-length centroids of a seeded spherical k-means (faiss), shape (k, d)."""
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    k = max(1, min(k, len(data)))
    kmeans = faiss.Kmeans(
        data.shape[1],
        k,
        niter=KMEANS_ITERATIONS,
        seed=seed,
        spherical=True,
        min_points_per_centroid=1,  # small inputs are expected; no faiss warning for them
        max_points_per_centroid=max(len(data), 1),  # train on every vector, no subsampling
    )
    with single_threaded():
        kmeans.train(data)
    return np.asarray(kmeans.centroids, dtype=np.float32)


def nearest_centroid(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the most similar centroid per vector (ties: the lowest index)."""
    return np.argmax(vectors @ centroids.T, axis=1)


def _first_component_scores(vectors: np.ndarray) -> np.ndarray:
    """Each vector's coordinate along the first principal component (sign fixed)."""
    centred = vectors.astype(np.float64) - vectors.mean(axis=0)
    if len(centred) <= centred.shape[1]:
        # Few vectors: the top eigenvector of the small Gram matrix is the scores' direction.
        _, eigenvectors = np.linalg.eigh(centred @ centred.T)
        scores = eigenvectors[:, -1]
    else:
        _, eigenvectors = np.linalg.eigh(centred.T @ centred)
        scores = centred @ eigenvectors[:, -1]
    return scores * np.sign(scores[np.argmax(np.abs(scores))])  # the eigenvector sign is arbitrary


def balanced_split(vectors: np.ndarray, parts: int) -> list[np.ndarray]:
    """Cut positions 0..m-1 into `parts` near-equal runs along the first principal component.

    The last resort when clustering cannot respect the leaf bounds: neighbours along the main
    axis of variation stay together.
    """
    count = len(vectors)
    if count <= 1 or parts <= 1:
        return [np.arange(count)]
    order = np.argsort(_first_component_scores(vectors), kind="stable")
    return [np.sort(part) for part in np.array_split(order, min(parts, count)) if len(part)]


def _groups_from_labels(labels: np.ndarray) -> list[np.ndarray]:
    groups = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    return sorted(groups, key=lambda group: int(group[0]))


def _out_of_bounds_share(labels: np.ndarray, bounds: LeafBounds, leaf_children: bool) -> float:
    sizes = np.bincount(labels)
    sizes = sizes[sizes > 0]
    bad = sizes < bounds.smallest
    if leaf_children:
        bad |= sizes > bounds.largest
    return float(sizes[bad].sum()) / float(sizes.sum())


def _candidate_ks(size: int, k_target: int, leaf_children: bool, bounds: LeafBounds) -> range:
    if leaf_children:
        low = max(2, math.ceil(size / bounds.largest))
        high = min(NATURAL_MAX_BRANCHING, size // max(bounds.smallest, 1))
    else:
        low, high = max(2, k_target - 1), min(NATURAL_MAX_BRANCHING, k_target + 1)
    high = min(high, size - 1)  # silhouette needs at least one pair sharing a cluster
    return range(low, high + 1) if low <= high else range(k_target, k_target + 1)


def euclidean_condensed(vectors: np.ndarray) -> np.ndarray:
    """Condensed pairwise Euclidean distances via matrix products (far faster than pdist), a
    block of rows at a time: the square matrix and its index arrays would hold several times
    the condensed one, which is all Ward reads."""
    data = vectors.astype(np.float64)
    count = len(data)
    squared = np.einsum("ij,ij->i", data, data)
    condensed = np.empty(count * (count - 1) // 2)
    filled = 0
    for first in range(0, count, _DISTANCE_BLOCK_ROWS):
        last = min(first + _DISTANCE_BLOCK_ROWS, count)
        block = data[first:last] @ data[first:].T
        block *= -2.0
        block += squared[first:last, None]
        block += squared[None, first:]
        for offset, row in enumerate(block):
            after = row[offset + 1 :]  # the pairs (first + offset, j) with j after it
            condensed[filled : filled + len(after)] = after
            filled += len(after)
    np.clip(condensed, 0.0, None, out=condensed)
    return np.sqrt(condensed, out=condensed)


def _size_bounded_cut(tree: np.ndarray, count: int, limit: int) -> np.ndarray:
    """Labels from splitting the dendrogram top-down until no cluster exceeds `limit`.

    Unlike a cut at a fixed k, this follows the hierarchy and yields leaf-sized clusters.
    """
    clusters: list[int] = []
    pending = [2 * count - 2]  # the dendrogram's root id
    while pending:
        node = pending.pop()
        if node < count or tree[node - count, 3] <= limit:
            clusters.append(node)
        else:
            pending.extend((int(tree[node - count, 1]), int(tree[node - count, 0])))
    labels = np.empty(count, dtype=np.int64)
    for label, cluster in enumerate(clusters):
        members = [cluster]
        while members:
            node = members.pop()
            if node < count:
                labels[node] = label
            else:
                members.extend((int(tree[node - count, 0]), int(tree[node - count, 1])))
    return labels


def silhouette(distances: np.ndarray, labels: np.ndarray) -> float:
    """The mean silhouette of `labels` over precomputed `distances`, as scikit-learn's
    `silhouette_score(metric="precomputed")` defines it: per sample (b - a) / max(a, b), a its
    mean distance to the rest of its cluster, b to the nearest other cluster; 0 for a sample
    alone in its cluster. Worked out here rather than by scikit-learn: importing it (scipy.stats,
    pandas) costs more than half a second, paid by every `memory-bank add` whose memories open
    a new directory."""
    _, codes = np.unique(np.asarray(labels), return_inverse=True)
    if not len(codes):
        return 0.0
    rows = np.arange(len(codes))
    sizes = np.bincount(codes).astype(np.float64)
    # sums[i, c]: total distance from sample i to the members of cluster c (itself included;
    # its distance to itself is 0)
    sums = np.stack(
        [distances[:, codes == c].sum(axis=1, dtype=np.float64) for c in range(len(sizes))],
        axis=1,
    )
    own_size = sizes[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = sums[rows, codes] / (own_size - 1)
        between = sums / sizes
        between[rows, codes] = np.inf
        nearest = between.min(axis=1)
        scores = (nearest - inside) / np.maximum(inside, nearest)
    scores[own_size == 1] = 0.0
    return float(np.mean(np.nan_to_num(scores)))


def _ward_labels(
    vectors: np.ndarray, k_target: int, leaf_children: bool, bounds: LeafBounds
) -> np.ndarray:
    # Imported where a tree is cut: every CLI process imports this module, few of them plan.
    from scipy.cluster.hierarchy import fcluster, linkage

    tree = linkage(euclidean_condensed(vectors), method="ward")
    bounded = _size_bounded_cut(tree, len(vectors), bounds.largest) if leaf_children else None
    if k_target > NATURAL_MAX_BRANCHING:  # wide levels of big corpora: no search over k
        if bounded is not None:
            return bounded
        return fcluster(tree, k_target, criterion="maxclust") - 1
    ks = _candidate_ks(len(vectors), k_target, leaf_children, bounds)
    candidates = [fcluster(tree, k, criterion="maxclust") - 1 for k in ks]
    if bounded is not None and ks.start <= bounded.max() + 1 <= ks.stop - 1:
        candidates.append(bounded)
    candidates = [labels for labels in candidates if labels.max() >= 1]
    if len(candidates) <= 1:
        return candidates[0] if candidates else fcluster(tree, k_target, criterion="maxclust") - 1
    distances = cosine_distances(vectors)
    scores = [
        silhouette(distances, labels)
        - LEAF_BOUNDS_PENALTY * _out_of_bounds_share(labels, bounds, leaf_children)
        - BRANCHING_PENALTY * abs(int(labels.max()) + 1 - k_target)
        for labels in candidates
    ]
    return candidates[int(np.argmax(scores))]  # first best: the smaller k wins ties


def _merge_small(
    groups: list[np.ndarray], vectors: np.ndarray, bounds: LeafBounds, leaf_children: bool
) -> list[np.ndarray]:
    """Fold groups below `smallest` into their most similar sibling, smallest group first.

    When the siblings are leaves, a sibling that stays within `largest` is preferred.
    """
    groups = list(groups)
    sums = np.stack([vectors[group].sum(axis=0) for group in groups]).astype(np.float64)
    while len(groups) > 1:
        sizes = np.array([len(group) for group in groups])
        small = min(range(len(groups)), key=lambda i: (sizes[i], int(groups[i][0])))
        if sizes[small] >= bounds.smallest:
            break
        directions = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
        similarity = directions @ directions[small]
        similarity[small] = -np.inf
        order = np.argsort(-similarity, kind="stable")[:-1]
        target = int(order[0])
        if leaf_children:
            fitting = order[sizes[order] + sizes[small] <= bounds.largest]
            target = int(fitting[0]) if len(fitting) else target
        groups[target] = np.sort(np.concatenate([groups[target], groups[small]]))
        sums[target] += sums[small]
        del groups[small]
        sums = np.delete(sums, small, axis=0)
    return groups


def partition(vectors: np.ndarray, levels: int, config: TaxonomyConfig) -> list[np.ndarray]:
    """Split one node's vectors into groups (position arrays, ordered by first position).

    With `levels == 1` the groups become leaves, so each holds at most the leaf maximum.
    """
    bounds = LeafBounds.from_config(config)
    size = len(vectors)
    k_target = min(branching_factor(size, levels, config), size)
    leaf_children = levels == 1 or math.ceil(size / k_target) <= bounds.largest
    if size > KMEANS_ABOVE:
        centroids = spherical_kmeans(vectors, k_target)
        labels = nearest_centroid(vectors, centroids)
    else:
        labels = _ward_labels(vectors, k_target, leaf_children, bounds)
    groups = _merge_small(_groups_from_labels(labels), vectors, bounds, leaf_children)
    if len(groups) < 2:  # no structure found: still make progress downwards
        groups = balanced_split(vectors, max(k_target, 2))
    if levels == 1:
        groups = [
            group[part]
            for group in groups
            for part in balanced_split(vectors[group], math.ceil(len(group) / bounds.largest))
        ]
    return sorted(groups, key=lambda group: int(group[0]))


def grow_tree(
    vectors: np.ndarray, levels: int, config: TaxonomyConfig, *, is_root: bool
) -> ClusterNode:
    """Cluster all rows of `vectors` into a tree with at most `levels` levels below its top.

    A root always gets at least one directory below it (a small corpus gets exactly one).
    """
    with single_threaded():
        return _grow(np.arange(len(vectors)), vectors, levels, config, is_root)


def _grow(
    rows: np.ndarray, vectors: np.ndarray, levels: int, config: TaxonomyConfig, is_root: bool
) -> ClusterNode:
    bounds = LeafBounds.from_config(config)
    if len(rows) == 0:
        return ClusterNode(rows)
    if levels == 0 or (len(rows) <= bounds.largest and not is_root):
        return ClusterNode(rows)
    if len(rows) <= bounds.largest:  # a small corpus: one directory holds everything
        return ClusterNode(rows, [ClusterNode(rows)])
    groups = partition(vectors[rows], levels, config)
    children = [_grow(rows[group], vectors, levels - 1, config, False) for group in groups]
    return ClusterNode(rows, children)


def cosine_distances(vectors: np.ndarray) -> np.ndarray:
    """Pairwise cosine distances of unit vectors (in their dtype), clipped to [0, 2], zero
    diagonal: what the silhouette of a partition is computed on."""
    distances = vectors @ vectors.T
    np.subtract(1.0, distances, out=distances)  # in place: the matrix grows as rows squared
    np.clip(distances, 0.0, 2.0, out=distances)
    np.fill_diagonal(distances, 0.0)
    return distances
