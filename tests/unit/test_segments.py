"""Tables that grow by appending (memory_bank/store/segments.py) and the memories' vector index
over segments (memory_bank/store/vectors.py): versions, tombstones, compaction, search."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from memory_bank.store.segment_writer import TableSetWriter
from memory_bank.store.segments import (
    DEAD_SHARE,
    read_manifest,
    read_table,
    segment_path,
    segment_problems,
)
from memory_bank.store.tables import EMBEDDING_TYPE, embedding_array
from memory_bank.store.vectors import SegmentedVectorIndex, hnsw_attachments

ROWS = pa.schema([("key", pa.string()), ("value", pa.int64())])


def rows(keys: list[str]) -> pa.Table:
    return pa.table({"key": keys, "value": [len(key) for key in keys]}, schema=ROWS)


def version(root: Path, number: int) -> Path:
    bank = root / f"v{number}" / ".bank"
    bank.mkdir(parents=True)
    return bank


def keys_of(bank: Path, name: str = "t") -> list[str]:
    return read_table(bank, name).column("key").to_pylist()


def test_an_append_links_the_old_segment_and_writes_only_the_new_rows(tmp_path: Path) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    with TableSetWriter(None, first) as writer:
        writer.replace("t", rows(["a", "b", "c"]))
    with TableSetWriter(first, second) as writer:
        writer.append("t", rows(["d"]))
    assert keys_of(first) == ["a", "b", "c"]
    assert keys_of(second) == ["a", "b", "c", "d"]
    old = read_manifest(first).tables["t"].segments[0]
    assert read_manifest(second).tables["t"].segments[0] == old
    assert (
        segment_path(first, old.file).stat().st_ino == segment_path(second, old.file).stat().st_ino
    )
    assert (
        writer.written_bytes
        == segment_path(second, read_manifest(second).tables["t"].segments[1].file).stat().st_size
    )


def test_deleted_rows_are_tombstones_and_no_file_changes(tmp_path: Path) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    with TableSetWriter(None, first) as writer:
        writer.replace("t", rows([f"k{n}" for n in range(10)]))
    before = {p: p.read_bytes() for p in first.rglob("*") if p.is_file()}
    with TableSetWriter(first, second) as writer:
        assert writer.delete("t", "key", {"k2", "k7", "absent"}) == 2  # below DEAD_SHARE
    assert {p: p.read_bytes() for p in first.rglob("*") if p.is_file()} == before
    assert writer.written_bytes == 0
    (segment,) = read_manifest(second).tables["t"].segments
    assert segment.deleted == [(2, 3), (7, 8)]
    assert keys_of(second) == ["k0", "k1", "k3", "k4", "k5", "k6", "k8", "k9"]
    picked = read_table(second, "t", where=("key", ["k1", "k2", "k9"]))
    assert picked.column("key").to_pylist() == ["k1", "k9"]
    assert segment_problems(second, read_manifest(second)) == []


def test_a_segment_with_enough_tombstones_is_rewritten_without_them(tmp_path: Path) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    keys = [f"k{n}" for n in range(8)]
    with TableSetWriter(None, first) as writer:
        writer.replace("t", rows(keys))
        writer.replace("u", rows(["x"]))
    doomed = keys[: int(np.ceil(DEAD_SHARE * len(keys)))]
    with TableSetWriter(first, second) as writer:
        writer.delete("t", "key", doomed)
        writer.delete("u", "key", ["x"])
    (segment,) = read_manifest(second).tables["t"].segments
    assert segment.deleted == [] and segment.rows == len(keys) - len(doomed)
    assert keys_of(second) == keys[len(doomed) :]
    assert read_manifest(second).tables["u"].segments == []  # nothing left: dropped


def test_beyond_the_limit_the_smallest_neighbours_merge_in_order(tmp_path: Path) -> None:
    banks = [version(tmp_path, n) for n in range(6)]
    with TableSetWriter(None, banks[0], max_segments=3) as writer:
        writer.replace("t", rows([f"base{n}" for n in range(20)]))
    expected = [f"base{n}" for n in range(20)]
    for number in range(1, 6):
        added = [f"add{number}-{n}" for n in range(number)]
        with TableSetWriter(banks[number - 1], banks[number], max_segments=3) as writer:
            writer.append("t", rows(added))
        expected += added
        assert keys_of(banks[number]) == expected
        segments = read_manifest(banks[number]).tables["t"].segments
        assert len(segments) <= 3
    assert segments[0].rows == 20  # the large first segment was never rewritten


def test_compact_folds_a_table_into_one_segment(tmp_path: Path) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    with TableSetWriter(None, first) as writer:
        writer.replace("t", rows(["a", "b"]))
        writer.append("t", rows(["c"]))
    with TableSetWriter(first, second) as writer:
        writer.delete("t", "key", ["b"])
        writer.compact("t")
    (segment,) = read_manifest(second).tables["t"].segments
    assert (segment.rows, segment.deleted) == (2, [])
    assert keys_of(second) == ["a", "c"]


def test_the_tail_of_small_segments_merges_once_it_is_large(tmp_path: Path) -> None:
    banks = [version(tmp_path, n) for n in range(4)]
    with TableSetWriter(None, banks[0]) as writer:
        writer.replace("t", rows([f"b{n}" for n in range(10)]))
    for number in range(1, 4):
        with TableSetWriter(banks[number - 1], banks[number]) as writer:
            writer.append("t", rows([f"a{number}-{n}" for n in range(2)]))
            writer.merge_tail("t", 5)
    counts = [s.rows for s in read_manifest(banks[3]).tables["t"].segments]
    assert counts == [10, 6]  # three adds of 2: merged once the tail held 6 >= 5


def test_rows_given_in_batches_become_one_segment_read_like_any_other(tmp_path: Path) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    with TableSetWriter(None, first) as writer:
        writer.replace("t", rows(["a"]))
    batches = [rows(["b", "c"]), rows([]), rows(["d", "e", "f"])]
    with TableSetWriter(first, second) as writer:
        assert writer.append_batches("t", iter(batches), ROWS) == 5
        assert writer.keys("t", "key") == ["a", "b", "c", "d", "e", "f"]
        writer.delete("t", "key", {"c"})  # a fifth: a tombstone, not a rewrite
    assert keys_of(second) == ["a", "b", "d", "e", "f"]
    segments = read_manifest(second).tables["t"].segments
    assert [(s.rows, s.deleted) for s in segments] == [(1, []), (5, [(1, 2)])]
    assert segment_problems(second, read_manifest(second)) == []  # no stray file either


def test_a_batched_segment_merged_or_replaced_leaves_no_file_behind(tmp_path: Path) -> None:
    bank = version(tmp_path, 1)
    with TableSetWriter(None, bank, max_segments=1) as writer:
        writer.replace("t", rows(["a"]))
        writer.append_batches("t", iter([rows(["b"])]), ROWS)
        writer.append_batches("u", iter([rows(["x"])]), ROWS)
        writer.replace("u", rows(["y"]))
        writer.append_batches("v", iter([rows(["z"])]), ROWS)
        writer.delete("v", "key", {"z"})
    assert keys_of(bank) == ["a", "b"] and keys_of(bank, "u") == ["y"]
    assert read_manifest(bank).tables["v"].segments == []
    assert len(read_manifest(bank).tables["t"].segments) == 1
    assert segment_problems(bank, read_manifest(bank)) == []


def test_segment_problems_name_a_tombstone_out_of_range(tmp_path: Path) -> None:
    bank = version(tmp_path, 1)
    with TableSetWriter(None, bank) as writer:
        writer.replace("t", rows(["a", "b"]))
    manifest = read_manifest(bank)
    manifest.tables["t"].segments[0].deleted = [(1, 5)]
    assert any("tombstones" in p for p in segment_problems(bank, manifest))


# --- the vector index over segments ------------------------------------------------------------


def unit_vectors(count: int, seed: int) -> np.ndarray:
    matrix = np.random.default_rng(seed).standard_normal((count, 384)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def memory_rows(keys: list[str], vectors: np.ndarray) -> pa.Table:
    return pa.table(
        [pa.array(keys), embedding_array(vectors)],
        schema=pa.schema(
            [pa.field("chunk_id", pa.string()), pa.field("embedding", EMBEDDING_TYPE)]
        ),
    )


@pytest.mark.parametrize("graph_min_rows", [10_000, 50])
def test_vector_search_over_segments_gives_memory_indices_and_skips_tombstones(
    tmp_path: Path, graph_min_rows: int
) -> None:
    first, second = version(tmp_path, 1), version(tmp_path, 2)
    base, added = unit_vectors(120, seed=1), unit_vectors(30, seed=2)
    hook = hnsw_attachments(graph_min_rows)
    with TableSetWriter(None, first, on_segment=hook) as writer:
        writer.replace("memories", memory_rows([f"m{n}" for n in range(120)], base))
    with TableSetWriter(first, second, on_segment=hook) as writer:
        writer.append("memories", memory_rows([f"n{n}" for n in range(30)], added))
        writer.delete("memories", "chunk_id", ["m3", "m4"])
    segments = read_manifest(second).tables["memories"].segments
    assert bool(segments[0].attachments) == (graph_min_rows <= 120)
    live = np.concatenate([np.delete(base, [3, 4], axis=0), added])  # row i: memory i
    index = SegmentedVectorIndex(second, segments, live)
    assert index.ntotal == len(live)
    scores, ids = index.search(live, 1)
    assert ids[:, 0].tolist() == list(range(len(live)))
    np.testing.assert_allclose(scores[:, 0], 1.0, rtol=1e-5)
    _, near = index.search(base[[3, 4]], 10)  # the deleted memories' own vectors
    assert (near >= 0).all() and (near < len(live)).all()
    exact = np.argsort(-(live @ base[3]))[:10]
    assert set(near[0]) == set(exact.tolist())


def test_segments_keep_statistics_and_dictionaries_for_keys_only(tmp_path: Path) -> None:
    """Readers skip row groups by key; running text and vectors get neither statistics nor a
    dictionary (writing them would copy a whole document's text several times), streamed or
    not, and read back the same."""
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("chunk_id", pa.string()),
            ("text", pa.string()),
            ("turns", pa.list_(pa.struct([("speaker", pa.string()), ("text", pa.string())]))),
            ("embedding", EMBEDDING_TYPE),
        ]
    )
    turns = [[{"speaker": "Ann", "text": "Hello there."}], []]
    vectors = np.ones((2, 384), np.float32)
    table = pa.table(
        {
            "chunk_id": ["c1", "c2"],
            "text": ["A long text.", "Another."],
            "turns": turns,
            "embedding": embedding_array(vectors),
        },
        schema=schema,
    )
    bank = version(tmp_path, 1)
    with TableSetWriter(None, bank) as writer:
        writer.replace("whole", table)
        writer.append_batches("streamed", iter([table]), schema)
    for name in ("whole", "streamed"):
        [segment] = read_manifest(bank).tables[name].segments
        path = segment_path(bank, segment.file)
        columns = pq.ParquetFile(path).metadata.row_group(0)
        by_path = {c.path_in_schema: c for c in map(columns.column, range(columns.num_columns))}
        assert by_path["chunk_id"].statistics is not None
        assert by_path["chunk_id"].has_dictionary_page
        for unkeyed in ("text", "turns.list.element.text", "embedding.list.element"):
            assert by_path[unkeyed].statistics is None, unkeyed
            assert not by_path[unkeyed].has_dictionary_page, unkeyed
        assert by_path["turns.list.element.speaker"].statistics is not None
        assert read_table(bank, name).equals(table)
