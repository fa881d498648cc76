"""What the graph needs to know of a store's memories: the raw text behind a memory node, its
document's title and its sentence vectors, read from one store version on demand."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_bank.store import layout
from memory_bank.store.tables import embeddings_to_numpy


class MemorySource:
    """Chunk texts, titles and sentence vectors of one store version (None: no store)."""

    def __init__(self, version_dir: Path | None) -> None:
        self.version_dir = version_dir
        self._texts: dict[str, str] | None = None
        self._titles: dict[str, str] = {}
        self._document_of: dict[str, str] = {}
        self._sentences: dict[str, dict[str, np.ndarray]] = {}
        self.extra_texts: dict[str, str] = {}  # memories being committed, not yet stored
        self.extra_titles: dict[str, str] = {}
        self.extra_sentences: dict[str, dict[str, np.ndarray]] = {}

    def chunk_ids(self) -> set[str]:
        return set(self._chunk_texts()) | set(self.extra_texts)

    def text(self, chunk_id: str) -> str:
        return self.extra_texts.get(chunk_id) or self._chunk_texts().get(chunk_id, "")

    def title(self, chunk_id: str) -> str | None:
        if chunk_id in self.extra_titles:
            return self.extra_titles[chunk_id]
        self._chunk_texts()
        return self._titles.get(self._document_of.get(chunk_id, ""))

    def sentence_vectors(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, np.ndarray]]:
        """Sentence text -> vector, per chunk id (read for the chunks not yet cached)."""
        wanted = [
            c for c in set(chunk_ids) if c not in self._sentences and c not in self.extra_sentences
        ]
        path = self._path(layout.SENTENCES_FILE)
        if wanted and path is not None:
            table = pq.read_table(path, columns=["chunk_id", "text", "embedding"])
            table = table.filter(pc.is_in(table.column("chunk_id"), value_set=_array(wanted)))
            vectors = (
                embeddings_to_numpy(table) if table.num_rows else np.zeros((0, 384), np.float32)
            )
            for chunk_id, text, vector in zip(
                table.column("chunk_id").to_pylist(),
                table.column("text").to_pylist(),
                vectors,
                strict=True,
            ):
                self._sentences.setdefault(chunk_id, {})[text.strip()] = vector
        for chunk_id in wanted:
            self._sentences.setdefault(chunk_id, {})
        return {c: self.extra_sentences.get(c) or self._sentences.get(c, {}) for c in chunk_ids}

    def _chunk_texts(self) -> dict[str, str]:
        if self._texts is None:
            self._texts = {}
            chunks = self._path(layout.CHUNKS_FILE)
            if chunks is not None:
                table = pq.read_table(chunks, columns=["chunk_id", "document_id", "text"])
                ids = table.column("chunk_id").to_pylist()
                self._texts = dict(zip(ids, table.column("text").to_pylist(), strict=True))
                self._document_of = dict(
                    zip(ids, table.column("document_id").to_pylist(), strict=True)
                )
            documents = self._path(layout.DOCUMENTS_FILE)
            if documents is not None:
                table = pq.read_table(documents, columns=["document_id", "title"])
                self._titles = dict(
                    zip(
                        table.column("document_id").to_pylist(),
                        table.column("title").to_pylist(),
                        strict=True,
                    )
                )
        return self._texts

    def _path(self, relative: str) -> Path | None:
        if self.version_dir is None:
            return None
        path = self.version_dir / relative
        return path if path.is_file() else None


def _array(values: list[str]):
    import pyarrow as pa

    return pa.array(values, type=pa.string())
