"""Reads checked against what the store recorded: a chunk file edited by hand or vectors
rewritten is a warning in the answer and a problem in `verify`, never silent."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.app.service import QueryService
from memory_bank.store import integrity
from memory_bank.store.integrity import HASHES_FILE, RecordedHashes, read_hashes
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store

NOTES = {
    "lighthouse.md": "# Lighthouse\n\nThe Fastnet lighthouse keeper lit the lamp at dusk; the "
    "light could be seen twenty-seven nautical miles out to sea on a clear night.",
    "ferry.md": "# Night ferry\n\nThe night ferry to the islands leaves the harbour at eleven "
    "and docks at six in the morning, after a crossing of seven hours.",
    "bread.md": "# Sourdough\n\nA sourdough starter is fed twice a day with flour and water "
    "and is ready to bake with once it doubles within six hours.",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory, embedder) -> Path:
    folder = tmp_path_factory.mktemp("integrity")
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = folder / "store"
    MemoryBank(store, embedder=embedder).add(files=sorted(folder.glob("*.md")))
    return store


@pytest.fixture
def store(built, tmp_path) -> Path:
    """A plain-directory copy of the built version, safe to damage."""
    copy = tmp_path / "copy"
    shutil.copytree(built.resolve(), copy)
    return copy


def ask(store: Path, embedder, question: str):
    from memory_bank.config import AppConfig

    return QueryService(store, AppConfig(), embedder).ask(question)


def test_a_commit_records_every_file_it_writes(built):
    root = built.resolve()
    recorded = read_hashes(root)
    reader = StoreReader(root)
    for path in reader.memories().column("path").to_pylist():
        assert path in recorded
    assert {"README.md", ".gam_meta.json", ".bank/tables.json"} <= set(recorded)
    assert set(_segment_files(root)) <= set(recorded)
    assert HASHES_FILE not in recorded
    assert verify_store(built).ok


def test_an_untouched_store_answers_without_warnings(built, embedder):
    result = ask(built, embedder, "When does the night ferry leave the harbour?")
    assert result.files_read and result.warnings == []


def test_a_chunk_file_edited_by_hand_is_a_warning_in_the_answer_and_in_verify(store, embedder):
    rows = StoreReader(store).memories().select(["path", "source"]).to_pylist()
    ferry = next(row["path"] for row in rows if row["source"].endswith("ferry.md"))
    edited = store / ferry
    edited.write_text(edited.read_text().replace("eleven", "noon"), encoding="utf-8")

    result = ask(store, embedder, "When does the night ferry leave the harbour?")

    assert ferry in result.files_read
    assert [w for w in result.warnings if w.startswith(f"{ferry} is not what the store wrote")]
    report = verify_store(store)
    assert any(f"{ferry} was changed after the store wrote it" in p for p in report.problems)


def test_zeroed_vectors_are_a_warning_in_every_answer(store, embedder):
    segment, *attachments = _segment_files(store, "memories")  # its index words beside it
    assert segment.endswith(".parquet") and not segment.endswith(".words.parquet")
    path = store / segment
    table = pq.read_table(path)
    column = table.schema.get_field_index("embedding")
    zeros = np.zeros((table.num_rows, 384), dtype=np.float32)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(zeros.ravel()), 384)
    pq.write_table(
        table.set_column(
            column, table.schema.field(column), vectors.cast(table.schema.field(column).type)
        ),
        path,
    )

    result = ask(store, embedder, "How far out to sea can the lighthouse be seen?")

    assert any(w.startswith(f"{segment} is not what the store wrote") for w in result.warnings)
    assert not verify_store(store).ok


def test_a_file_is_hashed_once_while_its_stat_stays(built):
    reader = StoreReader(built.resolve())
    first = reader.memories().column("path").to_pylist()[0]
    assert reader.integrity.warnings([first]) == []
    before = integrity._hash_of.cache_info()
    assert reader.integrity.warnings([first]) == []
    after = integrity._hash_of.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (1, 0)


def test_a_file_linked_into_the_next_version_keeps_its_record(built, tmp_path):
    """Carried over, not hashed again: an edit made in place (shared by the hard link) is
    still caught in the next version."""
    live = built.resolve()
    recorded = read_hashes(live)
    path = StoreReader(live).memories().column("path").to_pylist()[0]
    hashes = RecordedHashes(live, built)
    hashes.linked(path, built / path)
    build = tmp_path / "build"
    (build / ".bank").mkdir(parents=True)
    hashes.write(build)
    assert read_hashes(build) == {path: recorded[path]}


def test_a_segment_the_next_commit_keeps_keeps_its_record_unread(tmp_path, embedder):
    """The next version hard-links the segments it keeps and carries their hashes over, so an
    add hashes only what it wrote, and a kept segment changed in place (shared by the link)
    before that commit is still caught in the new version."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = tmp_path / "store"
    bank = MemoryBank(store, embedder=embedder)
    bank.add(files=[folder / "ferry.md", folder / "bread.md"])
    (kept,) = _segment_files(store.resolve(), "documents")
    recorded = read_hashes(store.resolve())[kept]
    path = store.resolve() / kept
    table = pq.read_table(path)
    titles = table.column("title").to_pylist()
    changed = table.set_column(
        table.schema.get_field_index("title"), "title", pa.array([t + "!" for t in titles])
    )
    scratch = tmp_path / "changed.parquet"
    pq.write_table(changed, scratch)
    with path.open("r+b") as handle:  # in place: the same inode the next version links
        handle.write(scratch.read_bytes())
        handle.truncate()

    bank.add(files=[folder / "lighthouse.md"])

    live = store.resolve()
    assert kept in _segment_files(live, "documents") and (live / kept).samefile(path)
    assert read_hashes(live)[kept] == recorded
    report = verify_store(store)
    assert any(f"{kept} was changed after the store wrote it" in p for p in report.problems)


def _segment_files(root: Path, table: str | None = None) -> list[str]:
    """The store-relative paths of a version's segment files and their attachments."""
    manifest = StoreReader(root).table_manifest()
    files = []
    for name, entry in manifest.tables.items():
        for segment in entry.segments if table in (None, name) else []:
            files.append(f".bank/tables/{segment.file}")
            parent = segment.file.rsplit("/", 1)[0]
            files += [f".bank/tables/{parent}/{a}" for a in segment.attachments]
    return files
