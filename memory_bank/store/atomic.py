"""Crash-safe file writes and store-confined path joining.

A reader must never see a half-written file: every write goes to a temporary file in the same
directory (so the final rename stays on one filesystem), is fsynced, then renamed over the target.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from memory_bank.errors import StoreError
from memory_bank.store.disk import writing


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` so that readers see either the old or the new content."""

    atomic_write_with(path, lambda temp_path: temp_path.write_bytes(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace `path` with UTF-8 `text` atomically (see `atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_with(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Let `write` fill a temporary sibling of `path`, then rename it over `path`.

    For writers that insist on a file name (pyarrow, faiss). The temporary file is fsynced here
    because such writers do not do it themselves; it is removed if `write` fails, and a failure
    to write is a StorageError naming `path`.
    """
    target = Path(path)
    with writing(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        temp_path = _create_temp_sibling(target)
        try:
            write(temp_path)
            _fsync_file(temp_path)
            os.replace(temp_path, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                temp_path.unlink()
            raise
        fsync_directory(target.parent)


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename inside `directory` durable (its entry table must reach the disk too)."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _create_temp_sibling(target: Path) -> Path:
    # Not tempfile.mkstemp: it creates files with mode 0600, which the rename would carry over to
    # the target. os.open with 0o666 applies the process umask like a plain open() would.
    while True:
        candidate = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return candidate


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def safe_join(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Path:
    """Join a "/"-separated relative path onto `root`, refusing anything that leaves `root`.

    Refused: absolute paths, `..` components, NUL bytes, and paths that resolve outside `root`
    through a symlink. The returned path need not exist. An empty path or "." means `root`.
    """
    text = os.fspath(relative)
    root_path = Path(root).resolve()
    joined = root_path.joinpath(*relative_parts(text))
    # resolve() follows every symlink that exists, so a link pointing elsewhere is caught here.
    if not joined.resolve().is_relative_to(root_path):
        raise StoreError(f"path escapes the store through a symlink: {text!r}")
    return joined


def relative_parts(relative: str) -> tuple[str, ...]:
    """The parts of a "/"-separated store-relative path; StoreError for an absolute path, a
    `..` component or a NUL byte. A lexical check only: `safe_join` also follows symlinks."""
    if "\x00" in relative:
        raise StoreError(f"path contains a NUL byte: {relative!r}")
    pure = PurePosixPath(relative)
    if pure.is_absolute():
        raise StoreError(f"absolute paths are not allowed here: {relative!r}")
    if ".." in pure.parts:
        raise StoreError(f"'..' is not allowed in a store path: {relative!r}")
    return pure.parts
