"""What a store version recorded of its own files, and reads checked against it.

A commit records the SHA-256 of every file it puts into a version (chunk files, READMEs, the
meta file and everything under `.bank/` at that moment) in `.bank/hashes.parquet`, the table
itself excepted; files linked unchanged from the previous version keep their recorded hash.
Whatever is written into a version later (the query side's BM25 cache) is not recorded and not
checked.

A reader checks each table it loads whole (each of its segments) and the vector index's files,
and the query service the memory files an answer read,
against that record (`StoreIntegrity`): a mismatch (a chunk file edited by hand, vectors
rewritten) becomes a warning in the answer and a problem in `verify`, never silence. A file's
hash is computed once per process while its stat (inode, size, mtime) stays the same, so the
check costs a stat per file read, not a read.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memory_bank.store.layout import BANK_DIR

HASHES_FILE = f"{BANK_DIR}/hashes.parquet"
_SCHEMA = pa.schema([("path", pa.string()), ("sha256", pa.string())])
_BLOCK = 1 << 20
_CACHED_HASHES = 1 << 16


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, from this process's cache while its stat is unchanged."""
    stat = os.stat(path)
    return _hash_of(os.fspath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=_CACHED_HASHES)
def _hash_of(path: str, inode: int, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def read_hashes(root: Path) -> dict[str, str] | None:
    """The hashes a version recorded (store-relative path -> SHA-256); None for a version
    written before hashes were recorded."""
    path = root / HASHES_FILE
    if not path.is_file():
        return None
    table = pq.read_table(path, schema=_SCHEMA)
    return dict(
        zip(table.column("path").to_pylist(), table.column("sha256").to_pylist(), strict=True)
    )


class RecordedHashes:
    """The builder's side: the hash of each file put into a new version."""

    def __init__(self, previous: Path | None, store_path: Path) -> None:
        """`previous`: the live version's directory (files linked from it keep its record);
        `store_path`: the store's path, through which linked files are named."""
        self._previous = previous
        self._store_path = store_path
        self._previous_hashes: dict[str, str] | None = None
        self._hashes: dict[str, str] = {}

    def wrote_text(self, relative: str, text: str) -> None:
        self._hashes[relative] = text_sha256(text)

    def linked(self, relative: str, source: Path) -> None:
        """`relative` is a link to (or a copy of) `source`, a file of the live version."""
        recorded = self._previously_recorded(source)
        self._hashes[relative] = recorded if recorded is not None else file_sha256(source)

    def write(self, build_dir: Path) -> None:
        """Record what was put under `.bank/` without passing through here (table segments and
        their index files, the graph snapshot's layers, the JSON files), then write the record
        into the build. A file that is the live version's own file at the same path (a hard
        link: a kept segment, a linked layer) keeps its record unread, so a commit hashes what
        it wrote, not the whole store."""
        for directory, _, names in os.walk(build_dir / BANK_DIR):
            for name in names:
                path = Path(directory) / name
                relative = path.relative_to(build_dir).as_posix()
                if relative not in self._hashes and relative != HASHES_FILE:
                    self._hashes[relative] = self._kept(relative, path) or file_sha256(path)
        paths = sorted(self._hashes)
        table = pa.table(
            {"path": paths, "sha256": [self._hashes[path] for path in paths]}, schema=_SCHEMA
        )
        pq.write_table(table, build_dir / HASHES_FILE)

    def _previously_recorded(self, source: Path) -> str | None:
        if self._previous is None:
            return None
        for root in (self._store_path, self._previous):
            if Path(source).is_relative_to(root):
                return self._previous_record().get(Path(source).relative_to(root).as_posix())
        return None

    def _kept(self, relative: str, path: Path) -> str | None:
        """The live version's record of `relative` when `path` is that version's file."""
        if self._previous is None:
            return None
        try:
            if not os.path.samefile(path, self._previous / relative):
                return None
        except OSError:
            return None
        return self._previous_record().get(relative)

    def _previous_record(self) -> dict[str, str]:
        if self._previous_hashes is None:
            try:
                self._previous_hashes = read_hashes(self._previous) or {}
            except (OSError, pa.ArrowException):
                self._previous_hashes = {}
        return self._previous_hashes


class StoreIntegrity:
    """The reader's side: files of one version checked against what it recorded."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._recorded: dict[str, str] | None = None
        self._loaded = False
        self._lock = threading.Lock()
        self._standing: dict[str, str] = {}  # loaded files found changed -> their warning

    @property
    def recorded(self) -> dict[str, str]:
        """The record ({} for a version written before hashes were recorded)."""
        with self._lock:
            if not self._loaded:
                try:
                    self._recorded = read_hashes(self.root)
                except (OSError, pa.ArrowException, ValueError):
                    self._recorded = None
                self._loaded = True
            return self._recorded or {}

    def check(self, relative: str) -> str | None:
        """A warning when `relative` is not what the version recorded (None: it is, or the
        version recorded nothing for it)."""
        expected = self.recorded.get(relative)
        if expected is None:
            return None
        try:
            actual = file_sha256(self.root / relative)
        except OSError:
            actual = None
        if actual == expected:
            return None
        return (
            f"{relative} is not what the store wrote (changed by hand or damaged): what rests "
            "on it may be wrong; `memory-bank verify` lists every such file"
        )

    def check_loaded(self, relative: str) -> None:
        """Check a file everything read from this version rests on (a table, the index): a
        warning about it goes with every answer."""
        warning = self.check(relative)
        if warning is not None:
            with self._lock:
                self._standing[relative] = warning

    def warnings(self, relatives: Iterable[str] = ()) -> list[str]:
        """The warnings about the loaded files and about `relatives` (e.g. the memory files
        an answer read), each once."""
        with self._lock:
            found = dict(self._standing)
        for relative in dict.fromkeys(relatives):
            if relative not in found and (warning := self.check(relative)) is not None:
                found[relative] = warning
        return list(found.values())
