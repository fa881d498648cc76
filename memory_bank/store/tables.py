"""The `.bank/` tables: Parquet schemas, model <-> table conversion, and the faiss index builder.

Embeddings are stored as `fixed_size_list<float32>[384]`, which maps onto an (n, 384) numpy
array without copying.

A faiss index (one per memories segment, `store/vectors.py`) is exact (IndexFlatIP) below
HNSW_MIN_VECTORS vectors, where a flat scan is still cheap, and an HNSW graph from there on;
hybrid search re-scores every candidate exactly, so a neighbour the graph misses near rank 50
rarely changes the top 5 (docs/benchmarks.md, "Search", has the measurements). The graph is
built on one OpenMP thread so the same vectors always give the same index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from memory_bank.config import STORE_VECTOR_DIM
from memory_bank.errors import StoreError
from memory_bank.schemas import Chunk, Document, MemorizedChunk
from memory_bank.store.atomic import atomic_write_with

EMBEDDING_DIM = STORE_VECTOR_DIM  # the width of every vector column and index
EMBEDDING_TYPE = pa.list_(pa.float32(), EMBEDDING_DIM)

HNSW_MIN_VECTORS = 20_000  # from this many memories on, the faiss index is HNSW
HNSW_NEIGHBORS = 32  # M: links per vector in the graph
HNSW_EF_CONSTRUCTION = 100
HNSW_EF_SEARCH = 128  # candidates explored per query; faiss raises it to k when k is larger


def _required(name: str, type_: pa.DataType) -> pa.Field:
    return pa.field(name, type_, nullable=False)


DOCUMENTS_SCHEMA = pa.schema(
    [
        _required("document_id", pa.string()),
        _required("source", pa.string()),
        _required("title", pa.string()),
        _required("kind", pa.string()),
        _required("text", pa.string()),
        _required("token_count", pa.int64()),
        # Conversations only (empty lists otherwise): enough to chunk the document again on turn
        # boundaries when the store is rebuilt from its own tables.
        _required(
            "turns",
            pa.list_(
                pa.struct(
                    [
                        _required("speaker", pa.string()),
                        _required("text", pa.string()),
                        pa.field("timestamp", pa.string()),
                    ]
                )
            ),
        ),
        _required("turn_offsets", pa.list_(pa.int64())),
    ]
)

CHUNKS_SCHEMA = pa.schema(
    [
        _required("chunk_id", pa.string()),
        _required("document_id", pa.string()),
        _required("source", pa.string()),
        _required("position", pa.int64()),
        _required("text", pa.string()),
        _required("token_count", pa.int64()),
        _required("start_char", pa.int64()),
        _required("end_char", pa.int64()),
        pa.field("section", pa.string()),
        _required("speakers", pa.list_(pa.string())),
        _required("timestamps", pa.list_(pa.string())),
        pa.field("first_turn", pa.int64()),
        pa.field("last_turn", pa.int64()),
    ]
)

MEMORIES_SCHEMA = pa.schema(
    [
        _required("index", pa.int64()),
        _required("chunk_id", pa.string()),
        _required("document_id", pa.string()),
        _required("source", pa.string()),
        _required("title", pa.string()),
        _required("memory", pa.string()),
        _required("tldr", pa.string()),
        _required("keywords", pa.list_(pa.string())),
        _required("context", pa.string()),
        _required("path", pa.string()),
        _required("directory", pa.string()),
        pa.field("token_count", pa.int64()),
        _required("embedding", EMBEDDING_TYPE),
    ]
)

SENTENCES_SCHEMA = pa.schema(
    [
        _required("chunk_id", pa.string()),
        _required("index", pa.int64()),
        _required("sentence", pa.int64()),
        _required("start_char", pa.int64()),
        _required("end_char", pa.int64()),
        _required("text", pa.string()),
        _required("embedding", EMBEDDING_TYPE),
    ]
)


READMES_SCHEMA = pa.schema(
    [
        _required("directory", pa.string()),  # tree path: "/" or "/a/b"
        _required("text", pa.string()),
        _required("embedding", EMBEDDING_TYPE),
    ]
)


# What segments hold (memory_bank/store/segments.py): the logical tables above without the
# columns a reader derives. A memory's `index` is its row in the logical table; a sentence's is
# its chunk's memory index; `path` and `directory` are where the memory lives now (placement,
# which a re-plan changes) and sit in their own table, so that moving a memory does not rewrite
# its row and removing one does not renumber the rows after it.
DERIVED_MEMORY_COLUMNS = ("index", "path", "directory")
MEMORY_SEGMENT_SCHEMA = pa.schema(
    [f for f in MEMORIES_SCHEMA if f.name not in DERIVED_MEMORY_COLUMNS]
)
SENTENCE_SEGMENT_SCHEMA = pa.schema([f for f in SENTENCES_SCHEMA if f.name != "index"])
PATHS_SCHEMA = pa.schema([_required("path", pa.string())])  # row i: memory i's chunk file


class SentenceRecord(BaseModel):
    """One sentence of a chunk, with offsets into the chunk text (for sentence-level search)."""

    chunk_id: str
    index: int  # memory index of the chunk
    sentence: int  # 0-based sentence number within the chunk
    start_char: int
    end_char: int
    text: str


# --- embeddings -----------------------------------------------------------------------------


def embedding_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    """Wrap an (n, 384) array as a fixed-size-list column (no copy when already float32)."""
    matrix = check_vectors(vectors, len(vectors) if np.ndim(vectors) == 2 else -1, "embeddings")
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), EMBEDDING_DIM)


def embeddings_to_numpy(table: pa.Table, column: str = "embedding") -> np.ndarray:
    """The embedding column of `table` as an (n, 384) float32 array (zero-copy for one chunk)."""
    chunked = table.column(column)
    # combine_chunks always copies, even a single chunk; avoid it in the common case.
    values = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    if len(values) == 0:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    flat = values.flatten().to_numpy(zero_copy_only=False)
    return flat.reshape(len(values), EMBEDDING_DIM)


def check_vectors(vectors: np.ndarray, expected_rows: int, what: str) -> np.ndarray:
    """Return `vectors` as a C-contiguous float32 (expected_rows, 384) array, or raise."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != EMBEDDING_DIM or matrix.shape[0] != expected_rows:
        raise StoreError(
            f"{what}: expected shape ({expected_rows}, {EMBEDDING_DIM}), got {np.shape(vectors)}"
        )
    if not np.isfinite(matrix).all():
        raise StoreError(f"{what}: vectors contain NaN or infinite values")
    return matrix


# --- models -> tables -----------------------------------------------------------------------


def documents_table(documents: Sequence[Document], token_counts: Mapping[str, int]) -> pa.Table:
    """Build documents.parquet; `token_counts` maps document_id to its tokens (sum of chunks)."""
    return pa.Table.from_pylist(
        [
            {
                "document_id": doc.document_id,
                "source": doc.source,
                "title": doc.title,
                "kind": doc.kind,
                "text": doc.text,
                "token_count": int(token_counts.get(doc.document_id, 0)),
                "turns": [turn.model_dump() for turn in doc.turns],
                "turn_offsets": doc.turn_offsets,
            }
            for doc in documents
        ],
        schema=DOCUMENTS_SCHEMA,
    )


def chunks_table(chunks: Sequence[Chunk]) -> pa.Table:
    return pa.Table.from_pylist(
        [chunk.model_dump(include=set(CHUNKS_SCHEMA.names)) for chunk in chunks],
        schema=CHUNKS_SCHEMA,
    )


def memories_table(
    memories: Sequence[MemorizedChunk], vectors: np.ndarray, chunk_paths: Mapping[int, str]
) -> pa.Table:
    """The logical memories table. Memories must be indices 0..n-1; they are written in that
    order."""
    ordered = sorted(memories, key=lambda memory: memory.index)
    if [memory.index for memory in ordered] != list(range(len(ordered))):
        raise StoreError("memory indices must be exactly 0..n-1 (row number = memory index)")
    matrix = check_vectors(vectors, len(ordered), "memory vectors")
    lacking = [memory.index for memory in ordered if memory.index not in chunk_paths]
    if lacking:
        raise StoreError(f"memory {lacking[0]} has no chunk file path")
    paths = [chunk_paths[memory.index] for memory in ordered]
    return with_placement(memory_segment_table(ordered, matrix), paths)


def memory_segment_table(memories: Sequence[MemorizedChunk], vectors: np.ndarray) -> pa.Table:
    """Memories' rows as a segment holds them (no index, path, directory), in the given order."""
    matrix = check_vectors(vectors, len(memories), "memory vectors")
    rows = [
        {
            "chunk_id": _metadata_str(memory, "chunk_id"),
            "document_id": _metadata_str(memory, "document_id"),
            "source": _metadata_str(memory, "source"),
            "title": memory.title,
            "memory": memory.memory,
            "tldr": memory.tldr,
            "keywords": list(memory.keywords),
            "context": memory.context,
            "token_count": memory.metadata.get("token_count"),
        }
        for memory in memories
    ]
    return _table_with_embeddings(rows, matrix, MEMORY_SEGMENT_SCHEMA)


def with_placement(rows: pa.Table, paths: Sequence[str]) -> pa.Table:
    """The logical memories table from segment rows and each memory's path (row i: memory i)."""
    if len(paths) != rows.num_rows:
        raise StoreError(f"{rows.num_rows} memories but {len(paths)} chunk file paths")
    columns = {name: rows.column(name) for name in rows.column_names}
    columns["index"] = pa.array(range(rows.num_rows), type=pa.int64())
    columns["path"] = pa.array(paths, type=pa.string())
    columns["directory"] = pa.array([directory_of(path) for path in paths], type=pa.string())
    return pa.table([columns[field.name] for field in MEMORIES_SCHEMA], schema=MEMORIES_SCHEMA)


def sentences_table(sentences: Sequence[SentenceRecord], vectors: np.ndarray) -> pa.Table:
    matrix = check_vectors(vectors, len(sentences), "sentence vectors")
    return _table_with_embeddings([s.model_dump() for s in sentences], matrix, SENTENCES_SCHEMA)


def sentence_segment_table(sentences: Sequence[SentenceRecord], vectors: np.ndarray) -> pa.Table:
    """Sentences' rows as a segment holds them (no memory index)."""
    return sentences_table(sentences, vectors).select(SENTENCE_SEGMENT_SCHEMA.names)


def sentence_rows_table(rows: Sequence[Mapping[str, object]], vectors: np.ndarray) -> pa.Table:
    """Sentences' segment rows from plain mappings holding the segment's columns (a journal's
    JSON), without a model object per sentence."""
    matrix = check_vectors(vectors, len(rows), "sentence vectors")
    return _table_with_embeddings(list(rows), matrix, SENTENCE_SEGMENT_SCHEMA)


def with_memory_index(rows: pa.Table, memory_chunk_ids: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The logical sentences table: each row's `index` is the memory index of its chunk
    (row i of `memory_chunk_ids` is memory i's chunk id); -1 for a chunk no memory has."""
    if isinstance(memory_chunk_ids, pa.ChunkedArray):
        memory_chunk_ids = memory_chunk_ids.combine_chunks()
    found = pc.index_in(rows.column("chunk_id"), value_set=memory_chunk_ids)
    index = pc.fill_null(found, -1).cast(pa.int64())
    columns = {name: rows.column(name) for name in rows.column_names}
    columns["index"] = index
    return pa.table([columns[field.name] for field in SENTENCES_SCHEMA], schema=SENTENCES_SCHEMA)


def readmes_table(readmes: Mapping[str, str], vectors: Mapping[str, np.ndarray]) -> pa.Table:
    """Build readmes.parquet: every directory's README text and vector, sorted by path."""
    if set(vectors) != set(readmes):
        unmatched = sorted(set(vectors) ^ set(readmes))
        raise StoreError(f"README vectors and READMEs differ in directories: {unmatched[:5]}")
    directories = sorted(readmes)
    shapes = sorted({np.shape(vectors[directory]) for directory in directories})
    if any(shape != (EMBEDDING_DIM,) for shape in shapes):
        raise StoreError(f"README vectors must have shape ({EMBEDDING_DIM},), got {shapes}")
    stacked = np.array([vectors[directory] for directory in directories], dtype=np.float32)
    stacked = stacked.reshape(len(directories), EMBEDDING_DIM)
    matrix = check_vectors(stacked, len(directories), "README vectors")
    rows = [{"directory": directory, "text": readmes[directory]} for directory in directories]
    return _table_with_embeddings(rows, matrix, READMES_SCHEMA)


def _table_with_embeddings(rows: list[dict], matrix: np.ndarray, schema: pa.Schema) -> pa.Table:
    # The vectors go in as one column built from the array, not through Python lists per row.
    embedding_index = schema.get_field_index("embedding")
    columns = pa.Table.from_pylist(rows, schema=schema.remove(embedding_index))
    return columns.append_column(schema.field(embedding_index), embedding_array(matrix))


def directory_of(chunk_path: str) -> str:
    """Tree directory ("/" or "/a/b") of a store-relative chunk path ("a/b/title.md")."""
    parent = PurePosixPath(chunk_path).parent.as_posix()
    return "/" if parent == "." else f"/{parent}"


def _metadata_str(memory: MemorizedChunk, key: str) -> str:
    value = memory.metadata.get(key)
    if not value:
        raise StoreError(f"memory {memory.index} lacks metadata[{key!r}]")
    return str(value)


# --- tables -> models -----------------------------------------------------------------------


def documents_from_table(table: pa.Table) -> list[Document]:
    """Rebuild documents (a store written before turns were stored gives conversations without
    them)."""
    return [Document.model_validate(row) for row in table.drop_columns(["token_count"]).to_pylist()]


def chunks_from_table(table: pa.Table) -> list[Chunk]:
    return [Chunk.model_validate(row) for row in table.to_pylist()]


def memories_from_table(table: pa.Table) -> list[MemorizedChunk]:
    """Rebuild memories (without embeddings; see `embeddings_to_numpy`)."""
    memories = []
    for row in table.drop_columns(["embedding"]).to_pylist():
        metadata = {key: row[key] for key in ("source", "document_id", "chunk_id")}
        if row["token_count"] is not None:
            metadata["token_count"] = row["token_count"]
        memories.append(
            MemorizedChunk(
                index=row["index"],
                title=row["title"],
                memory=row["memory"],
                tldr=row["tldr"],
                keywords=row["keywords"],
                context=row["context"],
                metadata=metadata,
            )
        )
    return memories


def sentences_from_table(table: pa.Table) -> list[SentenceRecord]:
    rows = table.drop_columns(["embedding"]).to_pylist()
    return [SentenceRecord.model_validate(row) for row in rows]


# --- files ----------------------------------------------------------------------------------


def write_parquet(table: pa.Table, path: Path) -> None:
    atomic_write_with(path, lambda temp_path: pq.write_table(table, temp_path))


def read_parquet(path: Path, schema: pa.Schema) -> pa.Table:
    """Read a store table and check it has the expected columns and types."""
    try:
        table = pq.read_table(path)
    except FileNotFoundError as exc:
        raise StoreError(f"store table {path} is missing") from exc
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"store table {path} is unreadable: {exc}") from exc
    return conform_table(table, schema, str(path))


def conform_table(table: pa.Table, schema: pa.Schema, where: str) -> pa.Table:
    """`table` with exactly the columns and types of `schema` (list columns added since the
    table was written come back empty), or StoreError naming `where`."""
    table = _with_later_columns(table, schema)
    if table.schema.names != schema.names:
        raise StoreError(
            f"store table {where} has columns {table.schema.names}, expected {schema.names}"
        )
    if not table.schema.equals(schema, check_metadata=False):
        try:
            table = table.cast(schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise StoreError(f"store table {where} has unexpected column types: {exc}") from exc
    return table


def _with_later_columns(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A table written before some list columns existed, with those columns empty, so stores of
    an earlier version stay readable (e.g. documents.parquet before `turns`)."""
    for field in schema:
        if field.name not in table.schema.names and pa.types.is_list(field.type):
            empty = pa.array([[]] * table.num_rows, type=field.type)
            table = table.append_column(field, empty)
    return table


def build_faiss_index(vectors: np.ndarray, hnsw_min_vectors: int = HNSW_MIN_VECTORS) -> faiss.Index:
    """Inner-product index (cosine on L2-normalized vectors); row i = memory index i.

    Exact (IndexFlatIP) below `hnsw_min_vectors` vectors, an HNSW graph from there on.
    """
    matrix = check_vectors(vectors, len(vectors) if np.ndim(vectors) == 2 else -1, "faiss vectors")
    if len(matrix) < hnsw_min_vectors:
        index = faiss.IndexFlatIP(EMBEDDING_DIM)
        index.add(matrix)
        return index
    index = faiss.IndexHNSWFlat(EMBEDDING_DIM, HNSW_NEIGHBORS, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    index.hnsw.efSearch = HNSW_EF_SEARCH
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # parallel insertion may link the graph differently each run
    try:
        index.add(matrix)
    finally:
        faiss.omp_set_num_threads(threads)
    return index


def write_faiss_index(index: faiss.Index, path: Path) -> None:
    atomic_write_with(path, lambda temp_path: faiss.write_index(index, str(temp_path)))


def read_faiss_index(path: Path) -> faiss.Index:
    if not path.is_file():
        raise StoreError(f"faiss index {path} is missing")
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:  # faiss reports every I/O and format problem as RuntimeError
        raise StoreError(f"faiss index {path} is unreadable: {exc}") from exc
    if isinstance(index, faiss.IndexHNSW):
        # Set on load, not only at build time, so a changed setting applies to existing stores.
        index.hnsw.efSearch = HNSW_EF_SEARCH
    return index
