"""A store version as one value: `StoreSnapshot` is what `write_store` writes and `load_snapshot`
reads back. `MemoryParts` is its table part: documents, chunks, memories and sentences with
their vectors, in memory-index order. The sentences of an ingest (most of its bytes: a vector
per sentence) may stay out of memory in a `SentenceSource`, read a batch at a time when the
commit writes them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pyarrow as pa

from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.files import readme_relative_path
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import (
    EMBEDDING_DIM,
    SentenceRecord,
    chunks_from_table,
    documents_from_table,
    memories_from_table,
    sentences_from_table,
)

_Indexed = TypeVar("_Indexed", MemorizedChunk, SentenceRecord)

# Keys of .gam_meta.json that writing computes; a snapshot's `meta` holds the rest.
COMPUTED_META_KEYS = (
    "version",
    "store_version",
    "created_at",
    "updated_at",
    "total_documents",
    "total_chunks",
    "total_directories",
    "source_files",
)
# The `.bank/` JSON files every version has; any other is one of a snapshot's `bank_json`.
_STANDARD_BANK_JSON = {
    Path(layout.MANIFEST_FILE).name,
    Path(layout.TREE_FILE).name,
    Path(layout.TABLES_FILE).name,
}


class SentenceSource(Protocol):
    """Sentences of some chunks kept out of memory (an ingest's, in its journal)."""

    def batches(self, chunk_ids: Sequence[str]) -> Iterator[pa.Table]:
        """The sentences of `chunk_ids` as segment rows (`SENTENCE_SEGMENT_SCHEMA`), chunk by
        chunk in that order, a bounded batch at a time; StoreError for a chunk it lacks."""

    def vectors(self, chunk_id: str) -> Mapping[str, np.ndarray]:
        """Sentence text -> vector of one of its chunks, read when first looked into."""


@dataclass
class MemoryParts:
    """Everything a store holds about a set of documents, in memory-index order. The
    sentences of chunks not in `sentences` come from `sentence_source`, when there is one."""

    documents: list[Document] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    memories: list[MemorizedChunk] = field(default_factory=list)
    memory_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())
    sentences: list[SentenceRecord] = field(default_factory=list)
    sentence_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())
    # Documents only some of whose chunks are here (a huge file journaled as it goes).
    partial_documents: set[str] = field(default_factory=set)
    sentence_source: SentenceSource | None = None

    def extend(self, other: MemoryParts) -> None:
        if other.sentence_source is not None:
            if self.sentence_source not in (None, other.sentence_source):
                raise ValueError("parts with two sentence sources cannot be joined")
            self.sentence_source = other.sentence_source
        self.documents.extend(other.documents)
        self.chunks.extend(other.chunks)
        self.memories.extend(other.memories)
        self.memory_vectors = np.concatenate([self.memory_vectors, other.memory_vectors])
        self.sentences.extend(other.sentences)
        self.sentence_vectors = np.concatenate([self.sentence_vectors, other.sentence_vectors])


class BankPart(Protocol):
    """State a version keeps in a directory of its own under `.bank/` (the Query Graph's
    snapshot); written into the new version before it is published."""

    def write(self, bank_dir: Path) -> None: ...


@dataclass(frozen=True)
class StoreSnapshot:
    """One store version: everything written into it, nothing computed on writing."""

    parts: MemoryParts
    tree: DirectoryNode
    readmes: dict[str, str]  # tree path ("/", "/a/b") -> README text
    meta: dict[str, Any]  # .gam_meta.json without COMPUTED_META_KEYS
    # memory index -> store-relative file path; None: as `assign_chunk_paths` places them
    chunk_paths: dict[int, str] | None = None
    # tree path -> the README's vector (`.bank/readmes.parquet`); None: no such table
    readme_vectors: dict[str, np.ndarray] | None = None
    bank_json: dict[str, Any] = field(default_factory=dict)  # further `.bank/` JSON files
    # Written with the version, never read back into a snapshot: the graph's own storage
    # loads it (with the checkpoints written after it).
    graph: BankPart | None = None
    version: str = ""  # the content hash; "" until written
    # Documents (id -> source) whose rows this version keeps from the live one without holding
    # them: `parts` then has only the other documents' rows, and every memory. A version read
    # from a store with segments lends all its documents so (its documents', chunks' and
    # sentences' rows stay on disk); None: `parts` holds every row.
    stored_documents: dict[str, str] | None = None

    def documents(self) -> dict[str, str]:
        """Every document of this version: id -> source."""
        listed = dict(self.stored_documents or {})
        listed.update({doc.document_id: doc.source for doc in self.parts.documents})
        return listed


def load_snapshot(store: Path) -> StoreSnapshot | None:
    """The live version of `store` (None when there is no store yet), read as one version even
    if a commit follows."""
    if not layout.is_store(store):
        return None
    reader = StoreReader(Path(store).resolve())
    memories = reader.memories()
    tree = reader.tree()
    readmes: dict[str, str] = {}
    vectors: dict[str, np.ndarray] | None = None
    table = reader.readmes()
    if table is not None:
        directories = table.column("directory").to_pylist()
        readmes = dict(zip(directories, table.column("text").to_pylist(), strict=True))
        vectors = dict(zip(directories, reader.readme_vectors(), strict=True))
    for node in tree.iter_nodes():  # a store written without readmes.parquet
        if node.path not in readmes:
            readme = reader.root / readme_relative_path(node.path)
            readmes[node.path] = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    bank = reader.root / layout.BANK_DIR
    documents = {str(k): str(v) for k, v in dict(reader.manifest.get("documents", {})).items()}
    return StoreSnapshot(
        parts=load_memories(reader) if reader.segmented else load_parts(reader),
        stored_documents=documents if reader.segmented else None,
        tree=tree,
        readmes=readmes,
        meta={k: v for k, v in reader.meta.items() if k not in COMPUTED_META_KEYS},
        chunk_paths=dict(
            zip(
                memories.column("index").to_pylist(),
                memories.column("path").to_pylist(),
                strict=True,
            )
        ),
        readme_vectors=vectors,
        bank_json={
            path.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(bank.glob("*.json"))
            if path.name not in _STANDARD_BANK_JSON
        },
        version=reader.store_version,
    )


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


def load_memories(reader: StoreReader) -> MemoryParts:
    """Only the memories and their vectors of an opened store (what a commit plans with)."""
    return MemoryParts(
        memories=memories_from_table(reader.memories()), memory_vectors=reader.memory_vectors()
    )


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
        sentence_source=parts.sentence_source,  # asked only for the selected chunks
    )
    return selected, renumber


def _renumbered(record: _Indexed, renumber: dict[int, int]) -> _Indexed:
    """`record` with its index renumbered; the same object when the number stays (a commit
    keeps most of a store's records as they are)."""
    index = renumber[record.index]
    return record if index == record.index else record.model_copy(update={"index": index})


def concatenate(first: MemoryParts, second: MemoryParts) -> MemoryParts:
    joined = MemoryParts(
        documents=list(first.documents),
        chunks=list(first.chunks),
        memories=list(first.memories),
        memory_vectors=first.memory_vectors,
        sentences=list(first.sentences),
        sentence_vectors=first.sentence_vectors,
        sentence_source=first.sentence_source,
    )
    joined.extend(second)
    return joined


def _empty_vectors() -> np.ndarray:
    return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
