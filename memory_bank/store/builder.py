"""Build a complete store next to the live one, then swap it in with renames.

Readers therefore see the old store or the new one, never a mix. The build happens in a hidden
sibling directory (`.<name>.building-<random>`) so the final rename stays on one filesystem. The
swap, and any read of the previous store that the new one depends on (its `created_at`), happen
under an exclusive `flock` on `<parent>/.<name>.lock`, so concurrent builds serialize.

A build holds a `flock` on a file inside its directory for as long as it runs; the kernel drops
it when the process dies, so the next build can tell a build directory left by a crash (lock
free: removed) from one that is still being written (lock held: kept).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import numpy as np

from memory_bank.errors import StoreError
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.atomic import fsync_directory, safe_join
from memory_bank.store.tables import (
    SentenceRecord,
    build_faiss_index,
    chunks_table,
    documents_table,
    memories_table,
    readmes_table,
    sentences_table,
    write_faiss_index,
    write_parquet,
)

_OWNER_FILE = ".owner.lock"  # inside a build directory, locked by the process writing it


class StoreBuilder:
    """Writes a new store into a temporary directory; `commit()` makes it the live store.

    Use as a context manager: an exception inside the block, or leaving it without `commit()`,
    removes the temporary directory and leaves the previous store untouched.
    """

    def __init__(self, store_dir: str | os.PathLike[str]) -> None:
        # Resolve symlinks so the build directory and the lock sit next to the real store and a
        # symlink to the store keeps pointing at it after the swap.
        self.store_dir = Path(store_dir).expanduser().resolve()
        if not self.store_dir.name:
            raise StoreError(f"cannot use {os.fspath(store_dir)!r} as a store directory")
        _refuse_foreign_directory(self.store_dir)
        self.store_dir.parent.mkdir(parents=True, exist_ok=True)
        self.build_dir = _make_build_dir(self.store_dir)
        self._owner = _claim(self.build_dir)
        self._committed = False
        self._lock_depth = 0

    def __enter__(self) -> StoreBuilder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._committed:
            self.abort()

    # --- writing into the build directory ---------------------------------------------------

    def write_file(self, relative: str, text: str) -> Path:
        """Write a UTF-8 text file at a store-relative path (no fsync: `commit` syncs once)."""
        path = safe_join(self.build_dir, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="")
        return path

    def write_tables(
        self,
        *,
        documents: Sequence[Document],
        chunks: Sequence[Chunk],
        memories: Sequence[MemorizedChunk],
        memory_vectors: np.ndarray,
        sentences: Sequence[SentenceRecord],
        sentence_vectors: np.ndarray,
        chunk_paths: Mapping[int, str],
    ) -> None:
        """Write the four Parquet tables of `.bank/`."""
        token_counts: Counter[str] = Counter()
        for chunk in chunks:
            token_counts[chunk.document_id] += chunk.token_count
        tables = {
            layout.DOCUMENTS_FILE: documents_table(documents, token_counts),
            layout.CHUNKS_FILE: chunks_table(chunks),
            layout.MEMORIES_FILE: memories_table(memories, memory_vectors, chunk_paths),
            layout.SENTENCES_FILE: sentences_table(sentences, sentence_vectors),
        }
        for relative, table in tables.items():
            write_parquet(table, self._bank_path(relative))

    def write_readme_vectors(
        self, readmes: Mapping[str, str], vectors: Mapping[str, np.ndarray]
    ) -> None:
        """Write `.bank/readmes.parquet`: each directory's README text and vector."""
        write_parquet(readmes_table(readmes, vectors), self._bank_path(layout.READMES_FILE))

    def write_tree(self, tree: DirectoryNode) -> None:
        self._write_json(layout.TREE_FILE, tree.model_dump(mode="json"))

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        self._write_json(layout.META_FILE, dict(meta))

    def write_manifest(self, store_version: str, documents: Mapping[str, str]) -> None:
        """Write `.bank/manifest.json`; `documents` maps document_id to its source."""
        self._write_json(
            layout.MANIFEST_FILE,
            {
                "schema_version": layout.MANIFEST_SCHEMA_VERSION,
                "store_version": store_version,
                "documents": dict(sorted(documents.items())),
            },
        )

    def write_faiss(self, vectors: np.ndarray) -> None:
        write_faiss_index(build_faiss_index(vectors), self._bank_path(layout.FAISS_FILE))

    def _write_json(self, relative: str, value: Any) -> None:
        self.write_file(relative, json.dumps(value, indent=2, ensure_ascii=False) + "\n")

    def _bank_path(self, relative: str) -> Path:
        path = safe_join(self.build_dir, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    # --- the live store ---------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's exclusive lock; `commit()` inside the block reuses it.

        Wrap "read the previous store, write what depends on it, commit" in one `locked()` so a
        concurrent build cannot slip in between.
        """
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield
            finally:
                self._lock_depth -= 1
            return
        with store_lock(self.store_dir):
            self._lock_depth = 1
            try:
                _recover_interrupted_swap(self.store_dir)
                _remove_abandoned_builds(self.store_dir, keep=self.build_dir)
                yield
            finally:
                self._lock_depth = 0

    def previous_meta(self) -> dict[str, Any] | None:
        """The live store's `.gam_meta.json`, or None if there is no (readable) previous store.

        A damaged meta file counts as absent: the build that is about to replace it is the fix.
        """
        try:
            meta = json.loads((self.store_dir / layout.META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None

    def commit(self) -> Path:
        """Make the build directory the live store; returns the store path."""
        if self._committed:
            raise StoreError(f"store build for {self.store_dir} was already committed")
        with self.locked():
            _refuse_foreign_directory(self.store_dir)
            # One sync for the whole build: cheaper than an fsync per chunk file, and it must
            # happen before the rename so a crash cannot leave a live store of empty files.
            self._release()  # under the store lock, so no cleanup can take the build for dead
            os.sync()
            try:
                _swap_in(self.build_dir, self.store_dir)
            except OSError as exc:
                raise StoreError(
                    f"could not swap the new store into {self.store_dir}: {exc}"
                ) from exc
            self._committed = True
        return self.store_dir

    def abort(self) -> None:
        """Throw the build away (idempotent); the live store is not touched."""
        if not self._committed:
            shutil.rmtree(self.build_dir, ignore_errors=True)
            self._release()

    def _release(self) -> None:
        if self._owner is not None:
            with contextlib.suppress(OSError):
                (self.build_dir / _OWNER_FILE).unlink()
            self._owner.close()  # closing drops the flock
            self._owner = None


@contextlib.contextmanager
def store_lock(store_dir: str | os.PathLike[str]) -> Iterator[None]:
    """Exclusive cross-process lock for swapping `store_dir` (blocks until it is free).

    flock locks belong to an open file description, so two threads of one process that each
    enter this also exclude each other. The lock file is never deleted: deleting it would let a
    waiter lock a file that a newcomer no longer sees.
    """
    resolved = Path(store_dir).expanduser().resolve()
    lock_path = resolved.parent / f".{resolved.name}.lock"
    with open(lock_path, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _make_build_dir(store_dir: Path) -> Path:
    # Not tempfile.mkdtemp: its mode 0700 would become the live store's mode after the rename,
    # hiding the store from other users (a query server, a shared cluster volume).
    while True:
        candidate = store_dir.with_name(f".{store_dir.name}.building-{secrets.token_hex(6)}")
        try:
            candidate.mkdir(mode=0o777)  # minus the umask, like any other directory
        except FileExistsError:
            continue
        return candidate


def _claim(build_dir: Path) -> IO[str]:
    """Open and lock the build's owner file; the lock lasts while the handle is open."""
    handle = open(build_dir / _OWNER_FILE, "w")  # noqa: SIM115 - held for the build's lifetime
    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    return handle


def _remove_abandoned_builds(store_dir: Path, keep: Path) -> None:
    """Delete build directories whose builder died. Caller holds the store lock."""
    for build_dir in store_dir.parent.glob(f".{store_dir.name}.building-*"):
        if build_dir == keep or not build_dir.is_dir():
            continue
        try:
            handle = open(build_dir / _OWNER_FILE, "a")  # noqa: SIM115 - closed below
        except OSError:
            continue  # no owner file: a build made before this scheme, or one just starting
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its builder is alive
            shutil.rmtree(build_dir, ignore_errors=True)


def _aside_dirs(store_dir: Path) -> list[Path]:
    return sorted(store_dir.parent.glob(f".{store_dir.name}.old-*"))


def _swap_in(build_dir: Path, store_dir: Path) -> None:
    if not store_dir.exists():
        os.rename(build_dir, store_dir)
        fsync_directory(store_dir.parent)
        return
    aside = store_dir.parent / f".{store_dir.name}.old-{secrets.token_hex(6)}"
    os.rename(store_dir, aside)
    try:
        os.rename(build_dir, store_dir)
    except BaseException:
        os.rename(aside, store_dir)
        raise
    fsync_directory(store_dir.parent)
    # The new store is live; failing to delete the old copy must not fail the commit. A copy
    # left behind is removed by the next build (see _recover_interrupted_swap).
    shutil.rmtree(aside, ignore_errors=True)


def _recover_interrupted_swap(store_dir: Path) -> None:
    """Repair what a crash during `_swap_in` left behind. Caller holds the store lock.

    Aside copies only exist while a swap runs under the lock, so any found now are left over:
    with no live store, the newest aside copy is the previous store and goes back in place;
    otherwise they are garbage.
    """
    leftovers = _aside_dirs(store_dir)
    if not leftovers:
        return
    if not store_dir.exists():
        newest = max(leftovers, key=lambda path: path.stat().st_mtime)
        os.rename(newest, store_dir)
        leftovers.remove(newest)
    for leftover in leftovers:
        shutil.rmtree(leftover, ignore_errors=True)


def _refuse_foreign_directory(store_dir: Path) -> None:
    """Never replace (and so delete) a directory that holds something other than a store."""
    if store_dir.exists() and not store_dir.is_dir():
        raise StoreError(f"{store_dir} exists and is not a directory")
    if store_dir.is_dir() and any(store_dir.iterdir()) and not layout.looks_like_store(store_dir):
        raise StoreError(f"{store_dir} is a non-empty directory that is not a memory store")
