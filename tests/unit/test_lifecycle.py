"""A store's life after its first build, tried the way several users at once would: concurrent
`memory-bank add` processes, a reader asking during commits, an ingest killed with SIGKILL and
started again, removal, and rebuilds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memory_bank.app.service import QueryService
from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.journal import IngestJournal
from memory_bank.ingest.runner import local_runner
from memory_bank.ingest.work import memory_recipe
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
CLI = Path(sys.executable).parent / "memory-bank"
BASE = sorted((SAMPLE / "articles").rglob("*.md"))[:8]
ADDITIONS = [
    sorted((SAMPLE / "notes" / "home").glob("*.md")),
    sorted((SAMPLE / "notes" / "engineering").glob("*.md")),
    [SAMPLE / "notes" / "hobbies" / "birdwatching_and_migration.md"]
    + sorted((SAMPLE / "stories").glob("*")),
    sorted((SAMPLE / "support").glob("*")) + sorted((SAMPLE / "journal").glob("*")),
]

pytestmark = pytest.mark.slow


def _chunk_ids(store: Path) -> list[str]:
    return StoreReader(store).chunks().column("chunk_id").to_pylist()


def _sources(store: Path) -> set[str]:
    return {Path(source).name for source in StoreReader(store).meta["source_files"]}


def _assert_verified(store: Path, config: AppConfig | None = None) -> None:
    report = verify_store(store, (config or AppConfig()).taxonomy)
    assert report.ok, report.problems


def test_four_concurrent_add_processes_lose_no_document(tmp_path: Path, embedder: Embedder) -> None:
    store = tmp_path / "shared"
    local_runner(AppConfig(), embedder).run(store, [str(path) for path in BASE])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    adders = [
        subprocess.Popen(
            [str(CLI), "add", *map(str, paths), "--store", str(store), "--local", "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for paths in ADDITIONS
    ]
    outputs = [adder.communicate(timeout=600) for adder in adders]
    for adder, (_, err) in zip(adders, outputs, strict=True):
        assert adder.returncode == 0, err
    summaries = [json.loads(out) for out, _ in outputs]
    expected = {path.name for path in BASE} | {p.name for paths in ADDITIONS for p in paths}
    assert _sources(store) == expected
    assert sum(summary["documents"] for summary in summaries) == sum(map(len, ADDITIONS))
    _assert_verified(store)


def test_a_reader_sees_no_error_while_twenty_commits_land(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "busy"
    runner = local_runner(AppConfig(), embedder)
    runner.run(store, [str(path) for path in BASE])
    service = QueryService(store, AppConfig(), embedder)
    errors: list[BaseException] = []
    versions: set[str] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                service.search("how does photosynthesis store energy", top_k=3)
                result = service.ask("What did the Apollo 11 crew bring back?", max_iterations=3)
                assert result.sources
                versions.add(service.store_version)
            except BaseException as exc:  # every failure is a finding
                errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for number in range(20):
            note = f"Field note {number}: the heron count at pond {number} was {number * 3 + 1}."
            runner.run(store, text=note)
    finally:
        stop.set()
        reader.join()
    assert errors == []
    assert len(versions) >= 2  # the reader did follow the commits
    assert StoreReader(store).meta["total_documents"] == len(BASE) + 20
    _assert_verified(store)


_KILLABLE_INGEST = """
import sys
from pathlib import Path
from memory_bank.config import AppConfig
from memory_bank.ingest.runner import local_runner
config = AppConfig.model_validate({"store": {"journal_tokens": 1000}})
local_runner(config).run(Path(sys.argv[1]), sys.argv[2:])
"""


def test_an_ingest_killed_midway_resumes_without_redoing_finished_batches(
    tmp_path: Path, embedder: Embedder
) -> None:
    config = AppConfig.model_validate({"store": {"journal_tokens": 1000}})
    sources = [str(SAMPLE / "articles"), str(SAMPLE / "notes")]
    store = tmp_path / "resumed"
    journal = IngestJournal(store, memory_recipe(config))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    ingest = subprocess.Popen(
        [sys.executable, "-c", _KILLABLE_INGEST, str(store), *sources],
        env=env,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while len(journal.batches()) < 2 and ingest.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    ingest.send_signal(signal.SIGKILL)
    ingest.wait()
    assert ingest.returncode == -signal.SIGKILL, "the ingest finished before it could be killed"
    assert not store.exists()
    journaled = {chunk.document_id for chunk in journal.load(_all_document_ids(journal))[0].chunks}
    assert journaled

    summary = local_runner(config, embedder).run(store, sources)
    assert summary.resumed_documents == len(journaled)
    assert journal.batches() == []  # committed batches are forgotten

    clean = tmp_path / "clean"
    local_runner(config, embedder).run(clean, sources)
    assert _chunk_ids(store) == _chunk_ids(clean)
    assert StoreReader(store).meta["total_chunks"] == StoreReader(clean).meta["total_chunks"]
    _assert_verified(store, config)


def _all_document_ids(journal: IngestJournal) -> set[str]:
    import pyarrow.parquet as pq

    return {
        document_id
        for path in journal.batches()
        for document_id in pq.read_table(path, columns=["document_id"]).column(0).to_pylist()
    }


def test_remove_then_verify_keeps_every_other_path(tmp_path: Path, embedder: Embedder) -> None:
    store = tmp_path / "pruned"
    runner = local_runner(AppConfig(), embedder)
    runner.run(store, [str(SAMPLE / "articles"), str(SAMPLE / "notes")])
    old = StoreReader(store)
    before = old.memories().to_pylist()
    target = SAMPLE / "notes" / "home" / "sourdough_baking.md"
    result = runner.remove(store, [str(target)])
    assert result.removed_documents == 1 and result.removed_chunks > 0
    new = StoreReader(store)
    after = new.memories().to_pylist()
    # The sentences (most of a store's bytes) are not rewritten: tombstones on the same file.
    (old_sentences,) = old.table_manifest().tables["sentences"].segments
    (new_sentences,) = new.table_manifest().tables["sentences"].segments
    assert new_sentences.file == old_sentences.file and new_sentences.deleted
    assert new_sentences.live_rows == new.sentences().num_rows < old.sentences().num_rows
    assert not any(row["source"].endswith("sourdough_baking.md") for row in after)
    kept = {row["chunk_id"]: row["path"] for row in before if "sourdough" not in row["source"]}
    assert {row["chunk_id"]: row["path"] for row in after} == kept
    assert result.readmes_regenerated and "/" in result.readmes_regenerated
    _assert_verified(store)
    with pytest.raises(Exception, match="not in the store"):
        runner.remove(store, [str(target)])


def test_rebuild_keeps_every_chunk_and_twice_is_a_no_op(tmp_path: Path, embedder: Embedder) -> None:
    store = tmp_path / "rebuilt"
    runner = local_runner(AppConfig(), embedder)
    runner.run(store, [str(SAMPLE / "articles")])
    runner.run(store, [str(SAMPLE / "support")])  # placed: the tree is no longer a fresh plan
    chunk_ids = sorted(_chunk_ids(store))
    first = runner.run(store, replan=True)
    assert sorted(_chunk_ids(store)) == chunk_ids
    version = StoreReader(store).store_version
    second = runner.run(store, replan=True)
    assert first.commit is not None and second.commit is not None
    assert second.commit.written is False and second.commit.readmes_regenerated == []
    assert StoreReader(store).store_version == version
    _assert_verified(store)


def test_an_add_links_the_files_it_keeps_and_old_readers_keep_their_version(
    tmp_path: Path, embedder: Embedder
) -> None:
    store = tmp_path / "linked"
    runner = local_runner(AppConfig(), embedder)
    runner.run(store, [str(path) for path in BASE])
    old = StoreReader(store)
    old_rows = {
        row["chunk_id"]: row for row in old.memories().drop_columns(["embedding"]).to_pylist()
    }
    old_texts = {
        chunk_id: old.path(row["path"]).read_text("utf-8") for chunk_id, row in old_rows.items()
    }

    result = runner.run(store, [str(SAMPLE / "notes" / "home" / "sourdough_baking.md")])

    new = StoreReader(store)
    assert new.root != old.root and result.documents == 1
    new_rows = [c for c in new.memories().column("chunk_id").to_pylist() if c not in old_rows]
    same_inode = moved = 0
    for row in new.memories().drop_columns(["embedding"]).to_pylist():
        before = old_rows.get(row["chunk_id"])
        if before is None:
            continue
        linked = os.stat(new.path(row["path"])).st_ino == os.stat(old.path(before["path"])).st_ino
        if before["path"] == row["path"] and before["index"] == row["index"]:
            assert linked, row["path"]  # unchanged: the published file itself, not a copy
            same_inode += 1
        else:
            assert not linked
            moved += 1
    assert same_inode > 0 and same_inode + moved == len(old_rows)
    # Every table segment of the old version is linked, and the new rows are new segments.
    for table, entry in old.table_manifest().tables.items():
        new_entry = new.table_manifest().tables[table]
        for segment in entry.segments:
            where = f".bank/tables/{segment.file}"
            assert os.stat(new.path(where)).st_ino == os.stat(old.path(where)).st_ino
        if table in ("memories", "chunks", "paths"):
            assert sum(s.rows for s in new_entry.segments[len(entry.segments) :]) == len(new_rows)
    # The version a reader opened before the add is intact.
    assert {
        cid: old.path(row["path"]).read_text("utf-8") for cid, row in old_rows.items()
    } == old_texts
    _assert_verified(store)
