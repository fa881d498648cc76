"""The memories' vector index in a store whose tables grow by segments.

Each memories segment of at least `HNSW_MIN_VECTORS` rows carries an HNSW graph of its vectors
as an attachment (`<segment>.hnsw`), built once when the segment is written (a first build, or a
compaction that merged segments); smaller segments, typically the latest adds, have none and are
searched exactly. So a commit that adds memories writes an index only for what it adds, never
the whole store's again. A search asks every part for its k best, maps segment rows to memory
indices (skipping tombstoned rows: an HNSW search is told to ignore them) and keeps the k best
overall. Inner product on L2-normalized vectors, as everywhere in the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa

from memory_bank.store.segments import Segment, SegmentHook, live_mask, segment_path
from memory_bank.store.tables import (
    EMBEDDING_DIM,
    HNSW_MIN_VECTORS,
    build_faiss_index,
    embeddings_to_numpy,
    read_faiss_index,
    write_faiss_index,
)

MEMORIES_TABLE = "memories"
HNSW_SUFFIX = ".hnsw"


def hnsw_attachments(min_rows: int = HNSW_MIN_VECTORS) -> SegmentHook:
    """The segment hook that gives every memories segment of `min_rows` rows or more its HNSW
    graph (built on one thread, so the same rows always give the same graph)."""

    def attach(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
        if table != MEMORIES_TABLE or rows.num_rows < min_rows:
            return []
        name = path.with_suffix(HNSW_SUFFIX).name
        index = build_faiss_index(embeddings_to_numpy(rows), hnsw_min_vectors=min_rows)
        write_faiss_index(index, path.parent / name)
        return [name]

    return attach


def attachment_path(bank: Path, segment: Segment) -> Path | None:
    """The HNSW attachment of a memories segment, None for a segment searched exactly."""
    names = [name for name in segment.attachments if name.endswith(HNSW_SUFFIX)]
    if not names:
        return None
    return segment_path(bank, segment.file).parent / names[0]


class SegmentedVectorIndex:
    """Search over the memory vectors of a segmented store (see the module docstring); ids are
    memory indices, as with a faiss index over the whole table."""

    d = EMBEDDING_DIM

    def __init__(self, bank: Path, segments: list[Segment], vectors: np.ndarray) -> None:
        self._graphs: list[tuple[faiss.Index, np.ndarray, tuple[object, object]]] = []
        exact: list[np.ndarray] = []
        offset = 0
        for segment in segments:
            mask = live_mask(segment)
            live = segment.live_rows
            graph_path = attachment_path(bank, segment)
            if graph_path is None:
                exact.append(np.arange(offset, offset + live))
            else:
                graph = read_faiss_index(graph_path)
                logical = np.full(segment.rows, -1, dtype=np.int64)
                logical[mask if mask is not None else slice(None)] = np.arange(
                    offset, offset + live
                )
                self._graphs.append((graph, logical, _search_parameters(mask)))
            offset += live
        self.ntotal = offset
        self._exact_ids = np.concatenate(exact) if exact else np.zeros(0, dtype=np.int64)
        self._exact = faiss.IndexFlatIP(EMBEDDING_DIM)
        if len(self._exact_ids):
            self._exact.add(np.ascontiguousarray(vectors[self._exact_ids], dtype=np.float32))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, memory indices), each (len(queries), k), best first; -1 pads a short list."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        scores, ids = [], []
        if self._exact.ntotal:
            found_scores, rows = self._exact.search(queries, min(k, self._exact.ntotal))
            scores.append(found_scores)
            ids.append(np.where(rows >= 0, self._exact_ids[np.maximum(rows, 0)], -1))
        for graph, logical, (parameters, _) in self._graphs:
            found_scores, rows = graph.search(queries, min(k, graph.ntotal), params=parameters)
            scores.append(found_scores)
            ids.append(np.where(rows >= 0, logical[np.maximum(rows, 0)], -1))
        if not scores:
            return np.zeros((len(queries), k), np.float32), np.full((len(queries), k), -1)
        all_scores = np.concatenate(scores, axis=1)
        all_ids = np.concatenate(ids, axis=1)
        all_scores = np.where(all_ids >= 0, all_scores, -np.inf)
        order = np.argsort(-all_scores, axis=1, kind="stable")[:, :k]
        best_scores = np.take_along_axis(all_scores, order, axis=1)
        best_ids = np.take_along_axis(all_ids, order, axis=1)
        best_ids = np.where(np.isfinite(best_scores), best_ids, -1)
        width = best_ids.shape[1]
        if width < k:  # fewer vectors than k
            best_scores = np.pad(best_scores, ((0, 0), (0, k - width)), constant_values=-np.inf)
            best_ids = np.pad(best_ids, ((0, 0), (0, k - width)), constant_values=-1)
        return best_scores.astype(np.float32), best_ids


def _search_parameters(mask: np.ndarray | None) -> tuple[object, object]:
    """HNSW search parameters that skip the segment's tombstoned rows (None: none are), and the
    objects they point to, which must outlive them."""
    if mask is None:
        return None, None
    from memory_bank.store.tables import HNSW_EF_SEARCH

    dead = np.flatnonzero(~mask).astype(np.int64)
    batch = faiss.IDSelectorBatch(len(dead), faiss.swig_ptr(dead))
    selector = faiss.IDSelectorNot(batch)
    parameters = faiss.SearchParametersHNSW()
    parameters.sel = selector
    parameters.efSearch = HNSW_EF_SEARCH
    return parameters, (dead, batch, selector)  # faiss keeps raw pointers to these


def attachment_problems(bank: Path, segment: Segment, vectors: np.ndarray) -> list[str]:
    """What is wrong with a memories segment's HNSW attachment, given the segment's vectors
    (all its rows, tombstoned ones included)."""
    path = attachment_path(bank, segment)
    if path is None:
        return []
    where = f"{path.name} of {segment.file}"
    if not path.is_file():
        return [f"{where} is missing"]
    index = read_faiss_index(path)
    if index.d != EMBEDDING_DIM or index.ntotal != segment.rows:
        return [f"{where} holds {index.ntotal} vectors of {index.d}, the segment {segment.rows}"]
    stored = index.reconstruct_n(0, index.ntotal)
    if not np.array_equal(stored, vectors):
        row = int(np.flatnonzero((stored != vectors).any(1))[0])
        return [f"{where}: row {row} is not the segment's vector"]
    return []
