"""Documents before chunks: the memories of one document are planned as a unit.

A person files documents, not passages: the chunks of one article, meeting or story belong in
one directory, and only a document too large for one directory is split, below that directory.
So planning clusters vectors pulled towards their document's mean direction: each memory keeps
`1 - DOCUMENT_PULL` of its own direction, so a long document can still be cut along its own
topics, but two memories of one document are nearly always closer than two of different
documents.

A document is what one source file holds, and numbered parts of one work are one document: files
in one folder whose names are the same but for their numbers ("chapter_01.md", "chapter_02.md";
a transcript cut into "turns_0000-0029.json", "turns_0030-0059.json"). The folder alone says
nothing (a folder of unrelated notes stays a folder of separate documents).

On a corpus mixing encyclopedia passages, stories and meetings (`bench/taxonomy.py`) the pull
put every meeting's memories in leaves of that meeting alone (a weaker pull left some mixed;
docs/benchmarks.md); without the numbered-parts rule the meetings of one series (the same team,
the same subject on four days) mix in leaves.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import PurePath

import numpy as np

from memory_bank.taxonomy.items import TaxonomyItem

DOCUMENT_PULL = 0.8
_NUMBER = re.compile(r"\d+")


def _part_pattern(source: str) -> tuple[str, str] | None:
    """(folder, name with every number replaced) for a numbered file name, else None."""
    path = PurePath(source)
    if not _NUMBER.search(path.name):
        return None
    return str(path.parent), _NUMBER.sub("#", path.name)


def document_groups(items: Sequence[TaxonomyItem], units: bool = True) -> np.ndarray:
    """A document number per item (row order): one per source, numbered parts of one work
    sharing theirs; items without a source are documents of their own. When every item comes
    from one document there is nothing to keep together: with `units` each item is its own
    unit then (planning); without, they keep their one document (naming by title)."""
    sources_of: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item in items:
        pattern = _part_pattern(item.source) if item.source else None
        if pattern is not None:
            sources_of[pattern].add(item.source)
    numbers: dict[object, int] = {}
    groups = np.empty(len(items), dtype=np.int64)
    for row, item in enumerate(items):
        key: object = ("item", item.index)
        if item.source:
            pattern = _part_pattern(item.source)
            key = pattern if pattern is not None and len(sources_of[pattern]) > 1 else item.source
        groups[row] = numbers.setdefault(key, len(numbers))
    if units and len(numbers) == 1:
        return np.arange(len(items), dtype=np.int64)
    return groups


def pull_together(
    vectors: np.ndarray, groups: np.ndarray, pull: float = DOCUMENT_PULL
) -> np.ndarray:
    """Unit vectors moved towards their group's mean direction by `pull` (0: unchanged)."""
    data = np.asarray(vectors, dtype=np.float64)
    if not len(data) or pull <= 0.0:
        return np.asarray(vectors, dtype=np.float32)
    count = int(groups.max()) + 1
    sums = np.zeros((count, data.shape[1]))
    np.add.at(sums, groups, data)
    means = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    sizes = np.bincount(groups, minlength=count)
    moved = np.where((sizes[groups] > 1)[:, None], pull * means[groups] + (1.0 - pull) * data, data)
    moved /= np.maximum(np.linalg.norm(moved, axis=1, keepdims=True), 1e-12)
    return moved.astype(np.float32)
