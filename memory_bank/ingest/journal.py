"""The ingest journal: finished memories saved as they come, so a killed ingest resumes.

Chunking, embedding and memorizing a large corpus takes minutes; the commit at the end takes
seconds. While an ingest runs, every batch of finished documents (their chunks, memories,
vectors and sentences) is written to `.<store>.journal/<memory recipe>/batch-*.parquet` beside
the store, atomically. An ingest started again over the same sources takes the documents it
finds there instead of processing them again; the recipe in the path makes sure only memories
made with the same settings are reused. Once a commit holds a batch's documents, the batch is
deleted. Memory indices in the journal are provisional: the commit numbers memories anew.

A batch may end inside a document (a huge file is journaled every `store.journal_tokens` too):
each row says whether its document was complete by then, and a resumed ingest takes the chunks
it finds, makes only the rest of such a document, and so redoes at most one batch of work.

The journal is also where an ingest's work waits for its commit: what the commit is given is
read back from it, without the sentences (a vector per sentence, most of the bytes), which
the commit reads batch file by batch file as it writes them (`JournalSentences`). So neither
making a huge file's memories nor committing them holds all of its sentences at once.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import secrets
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from memory_bank.errors import StoreError
from memory_bank.index.embedding import EMBEDDING_DIM
from memory_bank.schemas import Chunk, Document, MemorizedChunk
from memory_bank.store.atomic import atomic_write_with
from memory_bank.store.location import StoreLocation
from memory_bank.store.snapshot import MemoryParts
from memory_bank.store.tables import SentenceRecord, sentence_rows_table

_SCHEMA = pa.schema(
    [
        ("document_id", pa.string()),
        ("chunk_id", pa.string()),
        ("chunk", pa.string()),
        ("memory", pa.string()),
        ("vector", pa.binary()),
        ("sentences", pa.string()),
        ("sentence_vectors", pa.binary()),
        ("complete", pa.bool_()),  # the document's last chunk is journaled (here or before)
    ]
)


class IngestJournal:
    """The journal of one store and one memory recipe."""

    def __init__(self, store: Path, recipe: str) -> None:
        location = StoreLocation(store)
        self.directory = location.parent / f".{location.name}.journal" / recipe

    def batches(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        return sorted(self.directory.glob("batch-*.parquet"))

    def save(self, parts: MemoryParts) -> Path | None:
        """Journal the memories of whole documents (all chunks of each document in `parts`)."""
        if not parts.memories:
            return None
        rows: dict[str, list] = {name: [] for name in _SCHEMA.names}
        sentences_of: dict[int, list[tuple[SentenceRecord, np.ndarray]]] = {}
        for sentence, vector in zip(parts.sentences, parts.sentence_vectors, strict=True):
            sentences_of.setdefault(sentence.index, []).append((sentence, vector))
        for chunk, memory, vector in zip(
            parts.chunks, parts.memories, parts.memory_vectors, strict=True
        ):
            own = sentences_of.get(memory.index, [])
            rows["document_id"].append(chunk.document_id)
            rows["chunk_id"].append(chunk.chunk_id)
            rows["chunk"].append(chunk.model_dump_json())
            rows["memory"].append(memory.model_dump_json())
            rows["vector"].append(np.asarray(vector, dtype=np.float32).tobytes())
            rows["sentences"].append(json.dumps([s.model_dump() for s, _ in own]))
            rows["sentence_vectors"].append(
                np.asarray([v for _, v in own], dtype=np.float32)
                .reshape(-1, EMBEDDING_DIM)
                .tobytes()
            )
            rows["complete"].append(chunk.document_id not in parts.partial_documents)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"batch-{secrets.token_hex(8)}.parquet"
        table = pa.table(rows, schema=_SCHEMA)
        atomic_write_with(path, lambda temp_path: pq.write_table(table, temp_path))
        return path

    def finished(self, document_ids: Iterable[str]) -> tuple[dict[str, str], set[str]]:
        """The journaled chunks of the given documents (chunk id -> document id), and the
        documents whose last chunk is journaled (read from the small columns only)."""
        wanted = set(document_ids)
        chunk_ids: dict[str, str] = {}
        complete: set[str] = set()
        for _, table in self._tables(["document_id", "chunk_id", "complete"]):
            for document_id, chunk_id, done in zip(
                *(table.column(name).to_pylist() for name in table.column_names), strict=True
            ):
                if document_id in wanted:
                    chunk_ids[chunk_id] = document_id
                    if done:
                        complete.add(document_id)
        return chunk_ids, complete

    def load(self, document_ids: Iterable[str]) -> tuple[MemoryParts, list[Path]]:
        """Journaled memories of the given documents (each chunk once, in journal order), and
        the batch files they came from; documents whose last chunk is not among them are in
        `partial_documents`. The sentences stay in the files: `sentence_source` reads them.
        Unreadable batch files (or of an older layout) are ignored."""
        wanted = set(document_ids)
        parts = MemoryParts()
        used: list[Path] = []
        file_of: dict[str, Path] = {}
        complete: set[str] = set()
        vectors: list[np.ndarray] = []
        columns = ["document_id", "chunk_id", "chunk", "memory", "vector", "complete"]
        for path, table in self._tables(columns):
            taken = [
                row
                for row in table.to_pylist()
                if row["document_id"] in wanted and row["chunk_id"] not in file_of
            ]
            if not taken:
                continue
            used.append(path)
            for row in taken:
                file_of[row["chunk_id"]] = path
                if row["complete"]:
                    complete.add(row["document_id"])
                # Numbered anew as loaded: batches of different runs each counted from 0.
                memory = MemorizedChunk.model_validate_json(row["memory"])
                parts.memories.append(memory.model_copy(update={"index": len(parts.memories)}))
                parts.chunks.append(Chunk.model_validate_json(row["chunk"]))
                vectors.append(np.frombuffer(row["vector"], dtype=np.float32))
        parts.partial_documents = {chunk.document_id for chunk in parts.chunks} - complete
        if vectors:
            parts.memory_vectors = np.stack(vectors).astype(np.float32)
            parts.sentence_source = JournalSentences(file_of)
        return parts, used

    def _tables(self, columns: list[str]) -> Iterator[tuple[Path, pa.Table]]:
        """Each readable batch file's `columns`, one file at a time."""
        for path in self.batches():
            try:
                table = pq.read_table(path, columns=columns)
            except (OSError, pa.ArrowException, ValueError):
                continue
            if table.schema.equals(pa.schema([_SCHEMA.field(name) for name in columns])):
                yield path, table

    def forget(self, committed_document_ids: Iterable[str]) -> int:
        """Delete batch files whose documents are all committed; returns how many went."""
        committed = set(committed_document_ids)
        removed = 0
        for path in self.batches():
            try:
                ids = pq.read_table(path, columns=["document_id"]).column(0).to_pylist()
            except (OSError, pa.ArrowException, ValueError):
                ids = []
            if set(ids) <= committed:
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed += 1
        self.discard_if_empty()
        return removed

    def kept(self) -> tuple[int, int]:
        """How many finished chunks the journal holds, and its size in bytes."""
        chunks = size = 0
        for path in self.batches():
            with contextlib.suppress(OSError, pa.ArrowException):
                size += path.stat().st_size
                chunks += pq.ParquetFile(path).metadata.num_rows
        return chunks, size

    def discard_if_empty(self) -> None:
        """Remove the journal's folders when they hold nothing (a failed first write leaves
        them empty)."""
        with contextlib.suppress(OSError):
            self.directory.rmdir()  # only when empty
            self.directory.parent.rmdir()

    def fate(self) -> str:
        """What the journal keeps for the next run, said for a person; an empty one is removed."""
        chunks, size = self.kept()
        if not chunks:
            self.discard_if_empty()
            return "no finished work was kept (nothing to resume)"
        return (
            f"the journal {self.directory.parent} keeps {chunks:,} finished chunks "
            f"({size / 2**20:.1f} MB): the same command resumes from it (delete it to free "
            "the space instead)"
        )


class JournalSentences:
    """The sentences of journaled chunks, read from their batch files when the commit writes
    them (a `SentenceSource`), a batch file at a time. It names only files, so a writer in
    another process on the same storage reads them itself."""

    def __init__(self, file_of: Mapping[str, Path]) -> None:
        self.file_of = dict(file_of)  # chunk id -> the batch file holding it

    def batches(self, chunk_ids: Sequence[str]) -> Iterator[pa.Table]:
        for path, run in itertools.groupby(chunk_ids, key=self._file):
            sentences = _batch_sentences(path)
            rows: list[dict] = []
            vectors: list[np.ndarray] = []
            for chunk_id in run:
                own, own_vectors = sentences[chunk_id]
                rows += own
                vectors.append(own_vectors)
            yield sentence_rows_table(rows, np.concatenate(vectors))

    def vectors(self, chunk_id: str) -> Mapping[str, np.ndarray]:
        return _ChunkSentenceVectors(self._file(chunk_id), chunk_id)

    def _file(self, chunk_id: str) -> Path:
        try:
            return self.file_of[chunk_id]
        except KeyError:
            raise StoreError(f"the ingest journal holds no sentences of {chunk_id}") from None


class _ChunkSentenceVectors(Mapping[str, np.ndarray]):
    """One journaled chunk's sentence vectors (text -> vector), read when looked into and not
    kept here: the graph holds one of these per memory being committed."""

    def __init__(self, path: Path, chunk_id: str) -> None:
        self.path, self.chunk_id = path, chunk_id

    def __getitem__(self, text: str) -> np.ndarray:
        return _chunk_vectors(self.path, self.chunk_id)[text]

    def __iter__(self) -> Iterator[str]:
        return iter(_chunk_vectors(self.path, self.chunk_id))

    def __len__(self) -> int:
        return len(_chunk_vectors(self.path, self.chunk_id))


# The graph compares two chunks' sentences pair by pair, chunk after chunk in commit order:
# a few decoded files and chunks serve it without holding a huge ingest's sentences.
@functools.lru_cache(maxsize=8)
def _chunk_vectors(path: Path, chunk_id: str) -> dict[str, np.ndarray]:
    own, vectors = _batch_sentences(path)[chunk_id]
    return {row["text"].strip(): vector for row, vector in zip(own, vectors, strict=True)}


@functools.lru_cache(maxsize=4)
def _batch_sentences(path: Path) -> dict[str, tuple[list[dict], np.ndarray]]:
    """chunk id -> its sentences and their vectors, of one journal batch file (never changed
    once written: a new batch gets a new name)."""
    try:
        table = pq.read_table(path, columns=["chunk_id", "sentences", "sentence_vectors"])
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"the ingest journal's {path} went away or is unreadable: {exc}") from exc
    return {
        chunk_id: (
            json.loads(sentences),
            np.frombuffer(vectors, dtype=np.float32).reshape(-1, EMBEDDING_DIM),
        )
        for chunk_id, sentences, vectors in zip(
            *(table.column(name).to_pylist() for name in table.column_names), strict=True
        )
    }


def ordered_by_documents(
    documents: Sequence[Document], pieces: Sequence[MemoryParts]
) -> MemoryParts:
    """`pieces` joined in the order a single uninterrupted run would have made them (document
    order, then chunk order), memories numbered 0..n-1; `documents` become the documents."""
    rank = {doc.document_id: position for position, doc in enumerate(documents)}
    rows = []
    for number, piece in enumerate(pieces):
        chunks = _chunks_by_memory(piece)
        sentences: dict[int, list[int]] = {}
        for row, sentence in enumerate(piece.sentences):
            sentences.setdefault(sentence.index, []).append(row)
        for row, chunk in enumerate(chunks):
            key = (rank[chunk.document_id], chunk.position)
            rows.append((key, number, chunk, row, sentences.get(piece.memories[row].index, [])))
    rows.sort(key=lambda entry: entry[0])
    joined = MemoryParts(documents=list(documents))
    for piece in pieces:  # the sentences not held are read by chunk id: order is free
        joined.extend(MemoryParts(sentence_source=piece.sentence_source))
    vectors: list[np.ndarray] = []
    sentence_vectors: list[np.ndarray] = []
    for new_index, (_, number, chunk, row, sentence_rows) in enumerate(rows):
        piece = pieces[number]
        joined.chunks.append(chunk)
        joined.memories.append(piece.memories[row].model_copy(update={"index": new_index}))
        vectors.append(piece.memory_vectors[row])
        for sentence_row in sentence_rows:
            sentence = piece.sentences[sentence_row]
            joined.sentences.append(sentence.model_copy(update={"index": new_index}))
            sentence_vectors.append(piece.sentence_vectors[sentence_row])
    if vectors:
        joined.memory_vectors = np.stack(vectors).astype(np.float32)
    if sentence_vectors:
        joined.sentence_vectors = np.stack(sentence_vectors).astype(np.float32)
    return joined


def _chunks_by_memory(parts: MemoryParts) -> list[Chunk]:
    """The chunk of each memory, row for row (parts may list chunks in another order)."""
    by_id = {chunk.chunk_id: chunk for chunk in parts.chunks}
    return [by_id[str(memory.metadata["chunk_id"])] for memory in parts.memories]
