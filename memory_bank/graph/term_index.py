"""`TermIndex`: the Query Graph's BM25 over its current nodes, kept incrementally.

Each stem's postings are two growing arrays (the nodes' slots and their frequencies), so a query
scores every posting of a stem in one vectorized step rather than one Python step per node: a
node added to a graph of n nodes asks for the stems of its keywords and context, each of which
the most common stems hold for a large share of n, so its cost is linear in n either way, and
the constant is what grows a build's graph step with the store.

A node keeps its slot while indexed; removing it marks the slot dead (its postings are skipped
and no longer counted in document frequencies) rather than rewriting every posting array of its
stems; the arrays are rebuilt from the live nodes once the dead slots outnumber them. The caller
says where a slot's node sits in its own arrays (`move`), so scores come back in its order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np

BM25_K1 = 1.5
BM25_B = 0.75
_INITIAL = 16
_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_FREQUENCIES = np.zeros(0, dtype=np.float64)


class _Postings:
    """One stem's (slot, frequency) pairs, in the order the nodes were indexed: arrays, and the
    pairs appended since they were last read (loading a graph appends to every stem of every
    node before any query reads one; one slice write per stem then beats one write per pair)."""

    __slots__ = ("slots", "frequencies", "size", "pending")

    def __init__(self) -> None:
        self.slots = _NO_SLOTS
        self.frequencies = _NO_FREQUENCIES
        self.size = 0
        self.pending: list[tuple[int, int]] = []  # appended by `TermIndex.add`

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The slots and frequencies of every pair."""
        if self.pending:
            total = self.size + len(self.pending)
            if total > len(self.slots):
                capacity = max(total, 2 * len(self.slots), _INITIAL)
                self.slots = np.resize(self.slots, capacity)
                self.frequencies = np.resize(self.frequencies, capacity)
            slots, frequencies = zip(*self.pending, strict=True)
            self.slots[self.size : total] = slots
            self.frequencies[self.size : total] = frequencies
            self.size = total
            self.pending.clear()
        return self.slots[: self.size], self.frequencies[: self.size]


class TermIndex:
    """BM25 (k1 = 1.5, b = 0.75) over indexed nodes; each node's position in the caller's
    arrays (its row) is kept per slot and updated by `move`."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._slot_of: dict[str, int] = {}
        self._terms: dict[str, Counter[str]] = {}
        self._postings: dict[str, _Postings] = {}
        self._document_frequency: Counter[str] = Counter()
        self._row_of_slot = np.zeros(_INITIAL, dtype=np.int64)  # -1: a dead slot
        self._length_of_slot = np.zeros(_INITIAL, dtype=np.float64)
        self._slots = 0  # slots handed out, dead ones included
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._slot_of)

    def terms(self, node_id: str) -> Counter[str] | None:
        return self._terms.get(node_id)

    def add(self, node_id: str, row: int, terms: Iterable[str]) -> None:
        """Index a node (not indexed yet) that sits at `row` of the caller's arrays."""
        counts = Counter(terms)
        slot = self._slots
        if slot == len(self._row_of_slot):
            self._row_of_slot = np.resize(self._row_of_slot, 2 * slot)
            self._length_of_slot = np.resize(self._length_of_slot, 2 * slot)
        self._slots += 1
        length = sum(counts.values())
        self._row_of_slot[slot] = row
        self._length_of_slot[slot] = length
        self._slot_of[node_id] = slot
        self._terms[node_id] = counts
        self._total_length += length
        every = self._postings
        for term, frequency in counts.items():
            postings = every.get(term)
            if postings is None:
                postings = every[term] = _Postings()
            postings.pending.append((slot, frequency))
        self._document_frequency.update(counts.keys())

    def move(self, node_id: str, row: int) -> None:
        """The node now sits at `row` of the caller's arrays."""
        self._row_of_slot[self._slot_of[node_id]] = row

    def remove(self, node_id: str) -> None:
        slot = self._slot_of.pop(node_id, None)
        if slot is None:
            return
        counts = self._terms.pop(node_id)
        self._row_of_slot[slot] = -1
        self._total_length -= sum(counts.values())
        for term in counts:
            self._document_frequency[term] -= 1
            if not self._document_frequency[term]:
                del self._document_frequency[term]
                del self._postings[term]
        if self._slots - len(self._slot_of) > max(len(self._slot_of), _INITIAL):
            self._compact()

    def scores(self, terms: Iterable[str], rows: int) -> np.ndarray:
        """BM25 of every indexed node for `terms` (stems; each counted once), as an array of
        `rows` entries in the caller's order (0 where a node shares no term)."""
        count = len(self._slot_of)
        found = np.zeros(rows, dtype=np.float64)
        if not count:
            return found
        average = self._total_length / count or 1.0
        slot_parts: list[np.ndarray] = []
        frequency_parts: list[np.ndarray] = []
        idfs: list[float] = []
        for term in set(terms):
            postings = self._postings.get(term)
            if postings is None:
                continue
            held = self._document_frequency[term]
            idfs.append(math.log(1.0 + (count - held + 0.5) / (held + 0.5)))
            slots, frequencies = postings.arrays()
            slot_parts.append(slots)
            frequency_parts.append(frequencies)
        if not idfs:
            return found
        # Every posting of every term at once, in term order: each node's sum then adds its
        # terms' scores in the same order as a running total per node would.
        slots = np.concatenate(slot_parts)
        frequencies = np.concatenate(frequency_parts)
        idf = np.repeat(np.asarray(idfs), [len(part) for part in slot_parts])
        where = self._row_of_slot[slots]
        live = where >= 0
        if not live.all():
            slots, frequencies, idf, where = slots[live], frequencies[live], idf[live], where[live]
        lengths = self._length_of_slot[slots]
        norm = frequencies + BM25_K1 * (1 - BM25_B + BM25_B * lengths / average)
        found += np.bincount(where, idf * frequencies * (BM25_K1 + 1) / norm, minlength=rows)
        return found

    def _compact(self) -> None:
        """Rebuild the postings from the live nodes only, slots renumbered in their order."""
        live = sorted(self._slot_of.items(), key=lambda item: item[1])
        rows = [int(self._row_of_slot[slot]) for _, slot in live]
        terms = [self._terms[node_id] for node_id, _ in live]
        self._reset()
        for (node_id, _), row, counts in zip(live, rows, terms, strict=True):
            self.add(node_id, row, counts.elements())
