"""Parquet tables and the faiss index of `.bank/`."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa
import pytest

from memory_bank.errors import StoreError
from memory_bank.schemas import MemorizedChunk
from memory_bank.store.tables import (
    EMBEDDING_TYPE,
    HNSW_EF_SEARCH,
    MEMORIES_SCHEMA,
    SENTENCES_SCHEMA,
    SentenceRecord,
    build_faiss_index,
    embedding_array,
    embeddings_to_numpy,
    memories_table,
    read_faiss_index,
    read_parquet,
    sentences_table,
    write_faiss_index,
    write_parquet,
)


def unit_vectors(rows: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(rows, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def memories(count: int) -> list[MemorizedChunk]:
    return [
        MemorizedChunk(
            index=i,
            title=f"t{i}",
            memory=f"m{i}",
            tldr="x",
            keywords=["a", "b"],
            metadata={"source": "s", "document_id": "d", "chunk_id": f"d-{i:05d}"},
        )
        for i in range(count)
    ]


def test_embeddings_round_trip_through_parquet_as_fixed_size_lists(tmp_path: Path) -> None:
    vectors = unit_vectors(5)
    table = memories_table(memories(5), vectors, {i: f"topic/t{i}.md" for i in range(5)})
    assert table.schema.field("embedding").type == EMBEDDING_TYPE
    write_parquet(table, tmp_path / "memories.parquet")
    loaded = read_parquet(tmp_path / "memories.parquet", MEMORIES_SCHEMA)
    assert loaded.schema.equals(MEMORIES_SCHEMA, check_metadata=False)
    restored = embeddings_to_numpy(loaded)
    assert restored.dtype == np.float32 and restored.shape == (5, 384)
    np.testing.assert_array_equal(restored, vectors)
    assert loaded.column("directory").to_pylist() == ["/topic"] * 5


def test_embedding_column_shares_memory_with_the_array() -> None:
    vectors = unit_vectors(3)
    column = embedding_array(vectors)
    assert np.shares_memory(column.flatten().to_numpy(), vectors)
    assert np.shares_memory(embeddings_to_numpy(pa.table({"embedding": column})), vectors)


def test_empty_tables_give_empty_matrices() -> None:
    table = sentences_table([], np.zeros((0, 384), dtype=np.float32))
    assert table.num_rows == 0
    assert embeddings_to_numpy(table).shape == (0, 384)


def test_memories_must_be_numbered_from_zero() -> None:
    gappy = memories(3)[1:]
    with pytest.raises(StoreError, match="0..n-1"):
        memories_table(gappy, unit_vectors(2), {1: "a.md", 2: "b.md"})


@pytest.mark.parametrize(
    "vectors",
    [np.zeros((2, 384)), np.zeros((3, 383)), np.full((3, 384), np.nan), np.zeros(384)],
    ids=["rows", "dims", "nan", "1d"],
)
def test_bad_vectors_are_refused(vectors: np.ndarray) -> None:
    with pytest.raises(StoreError):
        memories_table(memories(3), vectors, {i: f"t{i}.md" for i in range(3)})


def test_read_parquet_refuses_wrong_or_broken_tables(tmp_path: Path) -> None:
    sentence = SentenceRecord(
        chunk_id="d-00000", index=0, sentence=0, start_char=0, end_char=2, text="Hi"
    )
    sentences = [sentence]
    write_parquet(sentences_table(sentences, unit_vectors(1)), tmp_path / "sentences.parquet")
    with pytest.raises(StoreError, match="columns"):
        read_parquet(tmp_path / "sentences.parquet", MEMORIES_SCHEMA)
    (tmp_path / "broken.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(StoreError, match="unreadable"):
        read_parquet(tmp_path / "broken.parquet", SENTENCES_SCHEMA)
    with pytest.raises(StoreError, match="missing"):
        read_parquet(tmp_path / "absent.parquet", SENTENCES_SCHEMA)


def test_faiss_index_round_trips_and_finds_the_right_row(tmp_path: Path) -> None:
    vectors = unit_vectors(50, seed=3)
    write_faiss_index(build_faiss_index(vectors), tmp_path / "vectors.faiss")
    index = read_faiss_index(tmp_path / "vectors.faiss")
    assert index.ntotal == 50
    query = vectors[[17, 42]] + 0.01 * unit_vectors(2, seed=4)
    _, rows = index.search(query.astype(np.float32), 3)
    assert rows[:, 0].tolist() == [17, 42]
    (tmp_path / "broken.faiss").write_bytes(b"garbage")
    with pytest.raises(StoreError, match="unreadable"):
        read_faiss_index(tmp_path / "broken.faiss")
    with pytest.raises(StoreError, match="missing"):
        read_faiss_index(tmp_path / "absent.faiss")


def test_large_stores_get_a_deterministic_hnsw_index_that_finds_the_right_rows(
    tmp_path: Path,
) -> None:
    vectors = unit_vectors(400, seed=5)
    assert isinstance(build_faiss_index(vectors, hnsw_min_vectors=401), faiss.IndexFlatIP)
    index = build_faiss_index(vectors, hnsw_min_vectors=400)
    assert isinstance(index, faiss.IndexHNSWFlat)
    assert index.metric_type == faiss.METRIC_INNER_PRODUCT
    again = build_faiss_index(vectors, hnsw_min_vectors=400)
    assert np.array_equal(faiss.serialize_index(index), faiss.serialize_index(again))

    index.hnsw.efSearch = 16  # the reader sets its own value, whatever was stored
    write_faiss_index(index, tmp_path / "vectors.faiss")
    loaded = read_faiss_index(tmp_path / "vectors.faiss")
    assert isinstance(loaded, faiss.IndexHNSWFlat) and loaded.ntotal == 400
    assert loaded.hnsw.efSearch == HNSW_EF_SEARCH
    query = vectors[[3, 250, 399]] + 0.01 * unit_vectors(3, seed=6)
    scores, rows = loaded.search(query.astype(np.float32), 5)
    assert rows[:, 0].tolist() == [3, 250, 399]
    np.testing.assert_allclose(
        scores[:, 0], np.sum(query * vectors[[3, 250, 399]], axis=1), rtol=1e-5
    )
