"""Write failures a person can act on: disk full, permission denied, a read-only file system and
a lock held by another writer end in one line naming the path and what to do, exit status 1 and
no traceback (`--debug` shows it); a failed ingest says what it left, the old store stays valid."""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

import faiss
import numpy as np
import pytest
from typer.testing import CliRunner

from memory_bank.app.bank import MemoryBank
from memory_bank.cli.main import app
from memory_bank.errors import StorageError
from memory_bank.store.disk import storage_error, writing
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store

OLD_TEXT = (
    "# Tides\n\nSpring tides come twice a month, at new and full moon, when the pull adds up."
)
NEW_TEXT = "# Bread\n\nA sourdough starter doubles within six hours of a feeding when it is ready."


@pytest.fixture
def store(tmp_path, embedder) -> Path:
    path = tmp_path / "store"
    MemoryBank(path, embedder=embedder).add(text=OLD_TEXT)
    return path


@pytest.fixture
def new_file(tmp_path) -> Path:
    path = tmp_path / "bread.md"
    path.write_text(NEW_TEXT, encoding="utf-8")
    return path


def fail_store_writes(monkeypatch, code: int, after: int = 0) -> None:
    """Writing a file of a new store version fails with `code` from its `after`-th file on, as
    on a full disk: an OSError that names no file, as a failed write() raises."""
    real_write = Path.write_text
    calls = {"n": 0}

    def write_text(self, *args, **kwargs):
        if ".building-" in str(self):
            calls["n"] += 1
            if calls["n"] > after:
                raise OSError(code, os.strerror(code))
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_disk_full_during_add_is_one_line_and_the_old_store_stays(store, new_file, monkeypatch):
    before = StoreReader(store).store_version
    fail_store_writes(monkeypatch, errno.ENOSPC, after=1)

    result = CliRunner().invoke(app, ["add", str(new_file), "--store", str(store), "--local"])

    assert result.exit_code == 1
    lines = error_lines(result)
    assert len(lines) <= 3 and "Traceback" not in result.output
    error = lines[-1]
    assert error.startswith("error: no space left on the device of ")
    assert f".{store.name}.versions" in error and "MB free" in error
    assert f"the journal {store.parent / ('.' + store.name + '.journal')} keeps 1 finished" in error
    assert StoreReader(store).store_version == before
    assert verify_store(store).ok
    assert not list((store.parent / f".{store.name}.versions").glob(".building-*"))


def test_disk_full_on_a_first_ingest_leaves_nothing_behind(tmp_path, new_file, monkeypatch):
    store = tmp_path / "fresh"
    fail_store_writes(monkeypatch, errno.ENOSPC)

    result = CliRunner().invoke(app, ["ingest", str(new_file), "--store", str(store), "--local"])

    assert result.exit_code == 1
    assert "; the journal " in error_lines(result)[-1]  # the memories were journaled first
    assert not store.exists()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".fresh."))
    assert leftovers == [".fresh.graph.lock", ".fresh.journal", ".fresh.lock"]


def test_a_first_ingest_that_cannot_journal_keeps_nothing(tmp_path, new_file, monkeypatch):
    store = tmp_path / "fresh"
    from memory_bank.ingest import journal

    def full(path, write):
        raise storage_error(OSError(errno.ENOSPC, "No space left on device"), path)

    monkeypatch.setattr(journal, "atomic_write_with", full)
    result = CliRunner().invoke(app, ["ingest", str(new_file), "--store", str(store), "--local"])

    assert result.exit_code == 1
    assert error_lines(result)[-1].endswith("; no finished work was kept (nothing to resume)")
    assert not (tmp_path / ".fresh.journal").exists()


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (errno.EACCES, "permission denied writing "),
        (errno.EROFS, "is on a read-only file system: remount it read-write"),
    ],
)
def test_permission_and_read_only_failures_name_the_path(store, new_file, monkeypatch, code, says):
    fail_store_writes(monkeypatch, code)

    result = CliRunner().invoke(app, ["add", str(new_file), "--store", str(store), "--local"])

    assert result.exit_code == 1 and "Traceback" not in result.output
    assert says in error_lines(result)[-1]
    assert verify_store(store).ok


def test_debug_shows_the_traceback(store, new_file, monkeypatch):
    fail_store_writes(monkeypatch, errno.ENOSPC)
    monkeypatch.setenv("MEMORY_BANK_DEBUG", "0")  # undone after the test: --debug sets it

    result = CliRunner().invoke(
        app, ["--debug", "add", str(new_file), "--store", str(store), "--local"]
    )

    assert result.exit_code == 1
    assert isinstance(result.exception, StorageError)
    assert result.exception.errno == errno.ENOSPC


def test_a_held_lock_names_its_holder_and_what_to_do(store, new_file, tmp_path):
    config = tmp_path / "impatient.yaml"
    config.write_text("store:\n  lock_wait_s: 0.3\n", encoding="utf-8")
    lock_path = store.parent / f".{store.name}.lock"
    with open(lock_path, "r+") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        holder.truncate()
        holder.write("4242 memory-bank add notes/ --store store\n")
        holder.flush()
        result = CliRunner().invoke(
            app,
            ["add", str(new_file), "--store", str(store), "--local", "--config", str(config)],
        )

    assert result.exit_code == 1
    error = error_lines(result)[-1]
    assert f"the store {store} is locked by pid 4242: memory-bank add notes/ --store store" in error
    assert "let that process finish (or stop it), then run this again" in error
    assert "the same command resumes from it" in error


def test_a_taken_lock_says_who_holds_it(store):
    from memory_bank.store.location import StoreLocation

    location = StoreLocation(store)
    with location.lock():
        holder = location.lock_path.read_text(encoding="utf-8")
    assert holder.split()[0] == str(os.getpid())


def test_a_failed_faiss_write_is_a_storage_error(tmp_path):
    def full_disk_faiss_write():
        raise RuntimeError(
            "Error in void faiss::write_index(...): write error in v.faiss: 10 != 40 "
            "(No space left on device)"
        )

    with pytest.raises(StorageError, match="no space left on the device of .*v.faiss"):
        with writing(tmp_path / "v.faiss"):
            full_disk_faiss_write()
    with pytest.raises(RuntimeError, match="not a write"):
        with writing(tmp_path / "v.faiss"):
            raise RuntimeError("not a write error")
    index = faiss.IndexFlatIP(4)
    index.add(np.eye(4, dtype=np.float32))
    with writing(tmp_path / "ok.faiss"):
        faiss.write_index(index, str(tmp_path / "ok.faiss"))


def test_an_os_error_naming_its_file_is_reported_about_that_file(tmp_path):
    exc = OSError(errno.EACCES, "Permission denied", str(tmp_path / "x.parquet"))
    message = str(storage_error(exc, tmp_path))
    assert message.startswith(f"permission denied writing {tmp_path / 'x.parquet'}")
