"""What an ingest starts from: the parts a store already holds, and what to do with them.

An ingest keeps the stored documents, memories and vectors and processes only documents whose
content hash is new, unless the store was made with another *memory recipe* (chunking, memorize
or embedding settings, or a new version of those stages): then every stored document is processed
again, from documents.parquet when it is not given again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.index.embedding import EMBEDDING_DIM, EMBEDDING_MODEL_NAME
from memory_bank.schemas import Chunk, Document, MemorizedChunk
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import (
    SentenceRecord,
    chunks_from_table,
    documents_from_table,
    memories_from_table,
    sentences_from_table,
)
from memory_bank.text.inputs import SourceLoad

_Indexed = TypeVar("_Indexed", MemorizedChunk, SentenceRecord)


@dataclass
class MemoryParts:
    """Everything a store holds about a set of documents, in memory-index order."""

    documents: list[Document] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    memories: list[MemorizedChunk] = field(default_factory=list)
    memory_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())
    sentences: list[SentenceRecord] = field(default_factory=list)
    sentence_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())
    # Documents only some of whose chunks are here (a huge file journaled as it goes).
    partial_documents: set[str] = field(default_factory=set)

    def extend(self, other: MemoryParts) -> None:
        self.documents.extend(other.documents)
        self.chunks.extend(other.chunks)
        self.memories.extend(other.memories)
        self.memory_vectors = np.concatenate([self.memory_vectors, other.memory_vectors])
        self.sentences.extend(other.sentences)
        self.sentence_vectors = np.concatenate([self.sentence_vectors, other.sentence_vectors])


def select_documents(
    parts: MemoryParts, keep: Callable[[str], bool], first_index: int
) -> tuple[MemoryParts, dict[int, int]]:
    """The parts of the documents `keep` accepts, memories numbered from `first_index` in their
    current order; also old memory index -> new index for the memories kept."""
    documents = [doc for doc in parts.documents if keep(doc.document_id)]
    rows = [
        row
        for row, memory in enumerate(parts.memories)
        if keep(str(memory.metadata["document_id"]))
    ]
    renumber = {parts.memories[row].index: first_index + n for n, row in enumerate(rows)}
    kept_chunk_ids = {parts.memories[row].metadata["chunk_id"] for row in rows}
    sentence_rows = [n for n, s in enumerate(parts.sentences) if s.index in renumber]
    selected = MemoryParts(
        documents=documents,
        chunks=[chunk for chunk in parts.chunks if chunk.chunk_id in kept_chunk_ids],
        memories=[_renumbered(parts.memories[row], renumber) for row in rows],
        memory_vectors=parts.memory_vectors[rows],
        sentences=[_renumbered(parts.sentences[n], renumber) for n in sentence_rows],
        sentence_vectors=parts.sentence_vectors[sentence_rows],
    )
    return selected, renumber


def _renumbered(record: _Indexed, renumber: dict[int, int]) -> _Indexed:
    """`record` with its index renumbered; the same object when the number stays (a commit
    keeps most of a store's tens of thousands of records as they are)."""
    index = renumber[record.index]
    return record if index == record.index else record.model_copy(update={"index": index})


def join_parts(pieces: Sequence[MemoryParts]) -> MemoryParts:
    """`pieces` one after the other, their vectors copied once (not once per piece)."""
    joined = MemoryParts()
    for piece in pieces:
        joined.documents.extend(piece.documents)
        joined.chunks.extend(piece.chunks)
        joined.memories.extend(piece.memories)
        joined.sentences.extend(piece.sentences)
    if pieces:
        joined.memory_vectors = np.concatenate([piece.memory_vectors for piece in pieces])
        joined.sentence_vectors = np.concatenate([piece.sentence_vectors for piece in pieces])
    return joined


def concatenate(first: MemoryParts, second: MemoryParts) -> MemoryParts:
    joined = MemoryParts(
        documents=list(first.documents),
        chunks=list(first.chunks),
        memories=list(first.memories),
        memory_vectors=first.memory_vectors,
        sentences=list(first.sentences),
        sentence_vectors=first.sentence_vectors,
    )
    joined.extend(second)
    return joined


def _empty_vectors() -> np.ndarray:
    return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


def load_parts(reader: StoreReader) -> MemoryParts:
    """Everything an opened store holds about its documents."""
    return MemoryParts(
        documents=documents_from_table(reader.documents()),
        chunks=chunks_from_table(reader.chunks()),
        memories=memories_from_table(reader.memories()),
        memory_vectors=reader.memory_vectors(),
        sentences=sentences_from_table(reader.sentences()),
        sentence_vectors=reader.sentence_vectors(),
    )


# Bump when a change to chunking, memorize or the embedding of chunks changes what a document
# becomes, so that stores made before it are rebuilt on their next ingest.
MEMORY_RECIPE_VERSION = 2  # 2: chunks keep a lead-in line with the list it announces


def memory_recipe(config: AppConfig) -> str:
    """A fingerprint of everything that decides a document's chunks, memories and vectors."""
    recipe = {
        "version": MEMORY_RECIPE_VERSION,
        "chunking": config.chunking.model_dump(mode="json"),
        "memorize": config.memorize.model_dump(mode="json"),
        # Not precision or threads: they change vectors by rounding only.
        # Keyed as before the model stopped being a setting, so existing stores keep their recipe.
        "embedding": {
            "model_name": EMBEDDING_MODEL_NAME,
            "window_tokens": config.embedding.window_tokens,
        },
    }
    if config.llm.backend != "offline":  # offline stores keep the recipe they always had
        recipe["memorizer"] = f"{config.llm.backend}:{config.llm.build_model or config.llm.model}"
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()[:16]


@dataclass
class IngestWork:
    """What an ingest has to process, judged from the store as it was when the ingest began
    (the commit re-checks against the store as it is then; see `commit.py`)."""

    documents: list[Document]  # to chunk, embed and memorize
    new: int  # given documents the store did not hold
    unchanged: int  # given documents already stored and current
    rebuilt: int  # stored documents processed again (another memory recipe)
    replace_all: bool = False  # the documents are the whole store, made anew
    base_version: str | None = None  # the store version this was judged from


def plan_work(loaded: SourceLoad, store: Path, config: AppConfig) -> IngestWork:
    """Which documents need processing: the given ones the store lacks, or, when the store was
    made with another memory recipe (or before recipes were recorded), every stored document
    too (from documents.parquet when not given again)."""
    if not is_store(store):
        return IngestWork(list(loaded.documents), len(loaded.documents), 0, 0)
    reader = StoreReader(Path(store).resolve())
    table = reader.documents()
    stored_ids = set(table.column("document_id").to_pylist())
    fresh = [doc for doc in loaded.documents if doc.document_id not in stored_ids]
    unchanged = len(loaded.documents) - len(fresh)
    if reader.meta.get("memory_recipe") == memory_recipe(config) or not stored_ids:
        return IngestWork(fresh, len(fresh), unchanged, 0, base_version=reader.store_version)
    # Only a rebuild needs the stored documents themselves (their text, turns, metadata).
    stored = documents_from_table(table)
    given = {doc.document_id: doc for doc in loaded.documents}
    everything = list(given.values()) + [doc for doc in stored if doc.document_id not in given]
    return IngestWork(
        everything,
        new=len(fresh),
        unchanged=0,
        rebuilt=len(stored),
        replace_all=True,
        base_version=reader.store_version,
    )
