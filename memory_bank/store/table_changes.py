"""A new version's tables as segments: the previous version's, linked, plus what changed.

`write_version_tables` gets the whole content of the new version (as `write_store` does) and
the previous version's `.bank` directory; it compares keys (document ids, chunk ids,
directories), never whole rows, and writes segments only for rows the previous version lacks,
tombstones for rows it has and the new one does not, and links everything else (see
segments.py). Rows under a kept key are the same rows: documents are named by their content
hash and chunks by their document and position, and `write_store` starts from no base when the
memory recipe changed (then the same chunk id may hold another memory). With no base, or when
compacting (a rebuild), every table is written as one new segment.

The new sentences are written as a stream into one segment: those given as records, then those
of the other new chunks from the `SentenceSource`, a batch at a time, each batch checked as it
comes (its chunk, its spans), so a huge ingest's sentences are never all in memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory_bank.errors import StoreError
from memory_bank.schemas import Chunk, Document, MemorizedChunk
from memory_bank.store.memory_words import with_words
from memory_bank.store.segment_writer import TableSetWriter
from memory_bank.store.segments import SegmentHook, TablesManifest, read_table
from memory_bank.store.snapshot import SentenceSource
from memory_bank.store.tables import (
    HNSW_MIN_VECTORS,
    PATHS_SCHEMA,
    READMES_SCHEMA,
    SENTENCE_SEGMENT_SCHEMA,
    SentenceRecord,
    chunks_table,
    documents_table,
    embeddings_to_numpy,
    memory_segment_table,
    readmes_table,
    sentence_segment_table,
)
from memory_bank.store.vectors import MEMORIES_TABLE, hnsw_attachments

DOCUMENTS, CHUNKS, SENTENCES, READMES, PATHS = (
    "documents",
    "chunks",
    "sentences",
    "readmes",
    "paths",
)


def write_version_tables(
    target: Path,
    base: Path | None,
    *,
    compact: bool = False,
    document_ids: set[str] | None = None,
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    memories: Sequence[MemorizedChunk],
    memory_vectors: np.ndarray,
    sentences: Sequence[SentenceRecord],
    sentence_vectors: np.ndarray,
    chunk_paths: Mapping[int, str],
    readmes: Mapping[str, str] | None = None,
    readme_vectors: Mapping[str, np.ndarray] | None = None,
    hnsw_min_vectors: int = HNSW_MIN_VECTORS,
    sentence_source: SentenceSource | None = None,
    attachments: SegmentHook | None = None,
) -> tuple[TablesManifest, int]:
    """Write the tables of the version being built in `target` (its `.bank`); returns the
    manifest and the bytes of segments written (linked ones not counted).

    With a base, `documents`, `chunks` and `sentences` may be only the new rows: rows of the
    base stay unless their chunk left the memories or their document left `document_ids`
    (every document of the new version; default: those of `documents`). `compact` folds each
    table into one segment afterwards. The sentences of new chunks not among `sentences` come
    from `sentence_source`. `attachments`: files of the caller's own beside each segment
    written, after the store's (the memories' vector index and index words)."""
    document_ids = document_ids if document_ids is not None else {d.document_id for d in documents}
    ordered = sorted(memories, key=lambda memory: memory.index)
    matrix = (
        memory_vectors[[memory.index for memory in ordered]] if len(ordered) else memory_vectors
    )
    paths = [chunk_paths[memory.index] for memory in ordered]
    new_sentences = _NewSentences(sentences, sentence_vectors, sentence_source)
    attach = with_words(hnsw_attachments(hnsw_min_vectors))
    if attachments is not None:
        attach = _both(attach, attachments)
    with TableSetWriter(base, target, on_segment=attach) as writer:
        if writer.base is None:
            _write_whole(writer, documents, chunks, ordered, matrix, new_sentences)
            writer.replace(PATHS, pa.table({"path": paths}, schema=PATHS_SCHEMA))
        else:
            _write_changes(
                writer, documents, document_ids, chunks, ordered, matrix, new_sentences, paths
            )
        if readmes is not None and readme_vectors is not None:
            _write_readmes(writer, readmes, readme_vectors)
        if compact:
            for name in writer.tables():
                writer.compact(name)
        # Memories added since the last HNSW graph are searched exactly; once they are as many
        # as a graph is worth, they become one segment with its own graph.
        writer.merge_tail(MEMORIES_TABLE, hnsw_min_vectors)
    return writer.manifest, writer.written_bytes


class _NewSentences:
    """The sentences a version adds, as one stream of segment rows in memory order: the
    records given, then the source's for the other chunks."""

    def __init__(
        self,
        records: Sequence[SentenceRecord],
        vectors: np.ndarray,
        source: SentenceSource | None,
    ) -> None:
        self.records, self.vectors, self.source = records, vectors, source

    def write(self, writer: TableSetWriter, memories: Sequence[MemorizedChunk]) -> None:
        """Append the sentences of `memories` (in their order) as one segment."""
        chunk_ids = [str(memory.metadata["chunk_id"]) for memory in memories]
        writer.append_batches(SENTENCES, self._batches(chunk_ids), SENTENCE_SEGMENT_SCHEMA)

    def _batches(self, chunk_ids: list[str]) -> Iterator[pa.Table]:
        wanted = set(chunk_ids)
        rows = [n for n, record in enumerate(self.records) if record.chunk_id in wanted]
        if rows:
            yield sentence_segment_table([self.records[n] for n in rows], self.vectors[rows])
        if self.source is None:  # the records are every sentence
            return
        held = {record.chunk_id for record in self.records}
        rest = [chunk_id for chunk_id in chunk_ids if chunk_id not in held]
        for batch in self.source.batches(rest):
            yield _checked_sentences(batch, set(rest))


def _checked_sentences(batch: pa.Table, chunk_ids: set[str]) -> pa.Table:
    """A batch of sentence rows from a source, in the segment's schema, once its chunks and
    spans were found right (else StoreError: nothing is published)."""
    batch = batch.select(SENTENCE_SEGMENT_SCHEMA.names).cast(SENTENCE_SEGMENT_SCHEMA)
    strangers = set(batch.column("chunk_id").to_pylist()) - chunk_ids
    if strangers:
        raise StoreError(f"sentences of chunks that are not new: {sorted(strangers)[:5]}")
    start, end = batch.column("start_char"), batch.column("end_char")
    bad = pc.or_(pc.less(start, 0), pc.greater(start, end))
    if pc.any(bad).as_py():
        raise StoreError("sentences with a span that is not 0 <= start <= end")
    return batch


def _write_whole(writer, documents, chunks, memories, matrix, new_sentences):
    writer.replace(DOCUMENTS, documents_table(documents, _token_counts(chunks)))
    writer.replace(CHUNKS, chunks_table(chunks))
    writer.replace(MEMORIES_TABLE, memory_segment_table(memories, matrix))
    writer.replace(SENTENCES, SENTENCE_SEGMENT_SCHEMA.empty_table())
    new_sentences.write(writer, memories)


def _write_changes(writer, documents, document_ids, chunks, memories, matrix, new_sentences, paths):
    live = writer.keys(MEMORIES_TABLE, "chunk_id")
    wanted = [str(memory.metadata["chunk_id"]) for memory in memories]
    wanted_set, live_set = set(wanted), set(live)
    gone = live_set - wanted_set
    fresh = wanted_set - live_set
    kept = [chunk_id for chunk_id in live if chunk_id in wanted_set]
    if wanted[: len(kept)] == kept:
        # Kept memories keep their order: the new ones go after them, removed ones are
        # tombstoned and the rows after them move up (their memory indices are row numbers).
        writer.delete(MEMORIES_TABLE, "chunk_id", gone)
        tail = slice(len(kept), None)
        writer.append(MEMORIES_TABLE, memory_segment_table(memories[tail], matrix[tail]))
    else:
        writer.replace(MEMORIES_TABLE, memory_segment_table(memories, matrix))
    writer.delete(SENTENCES, "chunk_id", gone)
    new_sentences.write(writer, [m for m in memories if str(m.metadata["chunk_id"]) in fresh])
    writer.delete(CHUNKS, "chunk_id", gone)
    writer.append(CHUNKS, chunks_table([chunk for chunk in chunks if chunk.chunk_id in fresh]))

    stored_documents = set(writer.keys(DOCUMENTS, "document_id"))
    writer.delete(DOCUMENTS, "document_id", stored_documents - document_ids)
    added = [document for document in documents if document.document_id not in stored_documents]
    writer.append(DOCUMENTS, documents_table(added, _token_counts(chunks)))

    stored_paths = writer.keys(PATHS, "path")
    if paths[: len(stored_paths)] == stored_paths:
        writer.append(PATHS, pa.table({"path": paths[len(stored_paths) :]}, schema=PATHS_SCHEMA))
    else:
        writer.replace(PATHS, pa.table({"path": paths}, schema=PATHS_SCHEMA))


def _write_readmes(
    writer: TableSetWriter, readmes: Mapping[str, str], vectors: Mapping[str, np.ndarray]
) -> None:
    """Rows for directories whose README text or vector changed; tombstones for the rest that
    went away or changed."""
    new = readmes_table(readmes, vectors)
    if writer.base is None or READMES not in writer.tables():
        writer.replace(READMES, new)
        return
    stored = read_table(writer.base, READMES, schema=READMES_SCHEMA)
    before = {
        directory: (text, vector)
        for directory, text, vector in zip(
            stored.column("directory").to_pylist(),
            stored.column("text").to_pylist(),
            embeddings_to_numpy(stored),
            strict=True,
        )
    }
    changed = [
        row
        for row, (directory, text) in enumerate(
            zip(new.column("directory").to_pylist(), new.column("text").to_pylist(), strict=True)
        )
        if directory not in before
        or before[directory][0] != text
        or not np.array_equal(before[directory][1], vectors[directory])
    ]
    changed_directories = {new.column("directory")[row].as_py() for row in changed}
    writer.delete(
        READMES, "directory", (set(before) - set(readmes)) | (changed_directories & set(before))
    )
    writer.append(READMES, new.take(pa.array(changed, type=pa.int64())))


def _token_counts(chunks: Sequence[Chunk]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for chunk in chunks:
        counts[chunk.document_id] += chunk.token_count
    return counts


def _both(first: SegmentHook, second: SegmentHook) -> SegmentHook:
    def attach(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
        return [*first(table, rows, path, earlier), *second(table, rows, path, earlier)]

    return attach
