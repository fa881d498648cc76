"""What the graph needs to know of a store's memories: the raw text behind a memory node, its
document's title, its sentence vectors and its sentences' stored facts, read from one store
version on demand.

Only the memories asked for are read (a store's segments are read by key), and what was read
is kept: a commit's graph step asks for its candidates' rows in one `prefetch`, never for the
whole store's chunks or sentences."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.stored_facts import stored_facts
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import EMBEDDING_DIM, embeddings_to_numpy


class MemorySource:
    """Chunk texts, titles and sentence vectors of one store version (None: no store)."""

    def __init__(self, version_dir: Path | None) -> None:
        self.version_dir = version_dir
        self._store: StoreReader | None = None
        self._texts: dict[str, str] = {}
        self._titles: dict[str, str | None] = {}
        self._sentences: dict[str, dict[str, np.ndarray]] = {}
        self._facts: dict[str, dict[str, SentenceFacts]] = {}
        self.extra_texts: dict[str, str] = {}  # memories being committed, not yet stored
        self.extra_titles: dict[str, str] = {}
        self.extra_sentences: dict[str, dict[str, np.ndarray]] = {}

    def text(self, chunk_id: str) -> str:
        if chunk_id in self.extra_texts:
            return self.extra_texts[chunk_id]
        self.prefetch([chunk_id])
        return self._texts.get(chunk_id, "")

    def title(self, chunk_id: str) -> str | None:
        if chunk_id in self.extra_titles:
            return self.extra_titles[chunk_id]
        self.prefetch([chunk_id])
        return self._titles.get(chunk_id)

    def sentence_vectors(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, np.ndarray]]:
        """Sentence text -> vector, per chunk id."""
        chunk_ids = list(chunk_ids)
        self.prefetch(chunk_ids)
        return {c: self.extra_sentences.get(c) or self._sentences.get(c, {}) for c in chunk_ids}

    def known_facts(self, chunk_id: str) -> dict[str, SentenceFacts]:
        """The stored facts of a stored chunk's sentences, by sentence (`stored_facts`)."""
        if chunk_id in self.extra_texts:
            return {}
        self.prefetch([chunk_id])
        return self._facts.get(chunk_id, {})

    def prefetch(self, chunk_ids: Iterable[str]) -> None:
        """Read the text, title and sentences of the stored chunks not read yet, in one pass."""
        wanted = [
            c
            for c in dict.fromkeys(chunk_ids)
            if c not in self._texts and c not in self.extra_texts
        ]
        reader = self._reader()
        for chunk_id in wanted:  # also what the store lacks: asked once
            self._texts[chunk_id], self._titles[chunk_id] = "", None
            self._sentences[chunk_id] = {}
        if not wanted or reader is None:
            return
        chunks = reader.rows("chunks", ["chunk_id", "document_id", "text"], ("chunk_id", wanted))
        ids = chunks.column("chunk_id").to_pylist()
        document_of = dict(zip(ids, chunks.column("document_id").to_pylist(), strict=True))
        self._texts.update(zip(ids, chunks.column("text").to_pylist(), strict=True))
        documents = reader.rows(
            "documents",
            ["document_id", "title"],
            ("document_id", sorted(set(document_of.values()))),
        )
        title_of = {row["document_id"]: row["title"] for row in documents.to_pylist()}
        for chunk_id, document_id in document_of.items():
            self._titles[chunk_id] = title_of.get(document_id)
        table = reader.rows("sentences", ["chunk_id", "text", "embedding"], ("chunk_id", wanted))
        vectors = (
            embeddings_to_numpy(table)
            if table.num_rows
            else np.zeros((0, EMBEDDING_DIM), np.float32)
        )
        self._facts.update(stored_facts(self.version_dir, wanted))
        for chunk_id, text, vector in zip(
            table.column("chunk_id").to_pylist(),
            table.column("text").to_pylist(),
            vectors,
            strict=True,
        ):
            self._sentences[chunk_id][text.strip()] = vector

    def _reader(self) -> StoreReader | None:
        if self.version_dir is None or not is_store(self.version_dir):
            return None
        if self._store is None:
            self._store = StoreReader(self.version_dir)
        return self._store
