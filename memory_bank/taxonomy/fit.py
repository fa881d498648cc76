"""How well memories fit a tree's leaves, and which new memories start a topic of their own.

A memory's fit to a leaf is the cosine between its vector (an L2-normalized MiniLM embedding)
and the leaf's normalized mean vector. What a good fit is depends on the store: memories of
meetings or of fairy tales fit their own leaf far more closely than a pool of unrelated
encyclopedia paragraphs do theirs. So each store calibrates its own bounds (`FitBounds.of`) from the
leave-one-out fit of every stored memory to its own leaf, cos(v, normalized(leaf sum - v)), over
leaves of at least `MIN_CALIBRATION_LEAF` memories: a new memory whose best leaf fit is below
the `FIT_PERCENTILE`th percentile is a *misfit*, below the `STRAY_PERCENTILE`th a *stray*. Below
`MIN_CALIBRATION_FITS` such fits (small stores) the default thresholds hold: the misfit default
lies above the median best-leaf fit of every out-of-domain pairing measured and about or below
the 5th percentile of new in-domain documents in full stores; the stray default lies near the
out-of-domain medians.

A misfit alone does not start a directory: about 5% of in-domain memories are misfits by
construction, so a large add would always bring a few, and on a store as broad as HotpotQA
fairy-tale memories fit about as well as its weakest members. `new_topic` keeps the misfits that
fit each other better than any stored leaf (a topic of its own) or are strays, needs at least
`min_leaf` of them, and then takes along the other new memories that fit the group better than
any leaf (the rest of the documents that started it).

How the percentile was chosen (`bench/placement_fit.py` on the development stores; figures in
docs/benchmarks.md): held-out memories of stored documents, and new documents of the same kind,
almost never started a directory, while documents of another corpus nearly always did, each with
all its memories in the new directory. A new fairy tale starts one in a store of fairy tales:
that store's leaves are per story, so a new story is a new topic there, and its sections stay
together instead of landing in other stories' leaves. A higher percentile caught a little more
out-of-domain text at the price of a few in-domain adds; a lower one missed a whole corpus. The
5th is kept as the cautious choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.schemas import DirectoryNode

FIT_PERCENTILE = 5.0  # misfit: below this percentile of the store's leave-one-out fits
STRAY_PERCENTILE = 1.0  # stray: below this one
MIN_CALIBRATION_FITS = 20  # fewer leave-one-out fits than this: the defaults below instead
DEFAULT_FIT_THRESHOLD = 0.3
DEFAULT_STRAY_THRESHOLD = 0.2
# Leaves smaller than this say little about how well a member fits: without the member, a leaf of
# two is a single other memory.
MIN_CALIBRATION_LEAF = 3
_BATCH = 256  # new memories scored against every leaf at once: bounds the (batch, leaves) matrix


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-12)


def leaf_directions(tree: DirectoryNode, vectors: np.ndarray) -> np.ndarray:
    """The normalized mean vector of each non-empty leaf of `tree`, in `tree.leaves()` order."""
    leaves = [leaf for leaf in tree.leaves() if leaf.chunk_indices]
    if not leaves:
        return np.zeros((0, vectors.shape[1]), dtype=np.float64)
    return _unit_rows(np.stack([vectors[leaf.chunk_indices].sum(axis=0) for leaf in leaves]))


def leave_one_out_fits(tree: DirectoryNode, vectors: np.ndarray) -> np.ndarray:
    """Each stored memory's fit to its own leaf without itself (leaves of at least
    `MIN_CALIBRATION_LEAF` memories): how well a memory of a topic the tree has fits it."""
    fits: list[np.ndarray] = []
    for leaf in tree.leaves():
        if len(leaf.chunk_indices) < MIN_CALIBRATION_LEAF:
            continue
        rows = _unit_rows(vectors[leaf.chunk_indices])
        rest = _unit_rows(rows.sum(axis=0) - rows)
        fits.append((rows * rest).sum(axis=1))
    return np.concatenate(fits) if fits else np.zeros(0)


@dataclass(frozen=True)
class FitBounds:
    """A store's fit thresholds, from its leave-one-out fits (see the module docstring)."""

    misfit: float  # below this a new memory fits no leaf
    stray: float  # below this it is out of place in any leaf, whatever the other newcomers are

    @classmethod
    def of(cls, tree: DirectoryNode, vectors: np.ndarray) -> FitBounds:
        fits = leave_one_out_fits(tree, vectors)
        if len(fits) < MIN_CALIBRATION_FITS:
            return cls(DEFAULT_FIT_THRESHOLD, DEFAULT_STRAY_THRESHOLD)
        misfit, stray = np.percentile(fits, [FIT_PERCENTILE, STRAY_PERCENTILE])
        return cls(float(misfit), float(stray))


def fit_threshold(tree: DirectoryNode, vectors: np.ndarray) -> float:
    """The fit below which a new memory matches no leaf of this store."""
    return FitBounds.of(tree, vectors).misfit


def best_leaf_fits(directions: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """For each row of `vectors`, its fit to the leaf it fits best (`directions` from
    `leaf_directions`)."""
    if len(directions) == 0:
        return np.full(len(vectors), -1.0)
    rows = _unit_rows(vectors)
    return np.concatenate(
        [
            (rows[start : start + _BATCH] @ directions.T).max(axis=1)
            for start in range(0, len(rows), _BATCH)
        ]
    )


def new_topic(
    tree: DirectoryNode,
    vectors: np.ndarray,
    new_indices: Sequence[int],
    min_size: int,
    bounds: FitBounds | None = None,
) -> list[int]:
    """The new memories that fit no leaf of `tree` and should start a directory of their own;
    empty when fewer than `min_size` (at least 2) qualify.

    A misfit fits its best leaf worse than `bounds.misfit` (default: the store's `FitBounds`).
    It stays in the group while it fits the other misfits (leave-one-out) better than its best
    leaf, or fits that leaf worse than `bounds.stray`: near-threshold misfits of known topics turn
    up now and then, but unlike a new topic's memories they have nothing in common with each
    other, and they are placed like the rest.
    """
    indices = [int(index) for index in new_indices]
    if len(indices) < min_size:
        return []
    bounds = bounds or FitBounds.of(tree, vectors)
    best = best_leaf_fits(leaf_directions(tree, vectors), vectors[indices])
    group = [(index, fit) for index, fit in zip(indices, best, strict=True) if fit < bounds.misfit]
    while len(group) >= max(min_size, 2):
        rows = _unit_rows(vectors[[index for index, _ in group]])
        own = (rows * _unit_rows(rows.sum(axis=0) - rows)).sum(axis=1)
        kept = [
            (index, fit)
            for (index, fit), together in zip(group, own, strict=True)
            if together > fit or fit < bounds.stray
        ]
        if len(kept) == len(group):
            return _with_followers(group, indices, best, vectors)
        group = kept
    return []


def _with_followers(
    group: list[tuple[int, float]], indices: list[int], best: np.ndarray, vectors: np.ndarray
) -> list[int]:
    """`group` and the other new memories that fit its mean better than any existing leaf: the
    rest of a new document whose other parts started the directory belongs there too."""
    members = {index for index, _ in group}
    direction = _unit_rows(vectors[sorted(members)].sum(axis=0))
    others = [
        (index, fit) for index, fit in zip(indices, best, strict=True) if index not in members
    ]
    if others:
        rows = _unit_rows(vectors[[index for index, _ in others]])
        followers = {
            index for (index, fit), own in zip(others, rows @ direction, strict=True) if own > fit
        }
        members |= followers
    return sorted(members)
