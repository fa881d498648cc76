"""Where a store lives on disk, and how a new version of it becomes the live one.

The store path the user names (`.memory/sample`) is a relative symlink into a hidden sibling,
`.sample.versions/000007-3fa2c1d0`; every commit writes a complete new version directory and
then replaces the link with `os.replace`, which is atomic. A reader therefore resolves the path
to one whole version, old or new, and the path exists at every instant (the former
rename-aside-then-rename-in swap left a window where it did not).

A store written before versions existed is a plain directory: its first commit exchanges it
with the new link in one `renameat2(RENAME_EXCHANGE)` (Linux), so that switch is atomic too,
and the old directory is then deleted.

Old versions are removed by the next commit, except the previous one and any version that was
still live less than `GRACE_SECONDS` ago: a reader that resolved it just before a commit can
finish its request. All of this happens under the store's lock, `.sample.lock`, an `flock` that
serializes commits across processes (and threads) and is re-entrant within one thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from memory_bank.errors import StoreError
from memory_bank.store.atomic import fsync_directory
from memory_bank.store.locks import file_lock

GRACE_SECONDS = 60.0
_VERSION_NAME = re.compile(r"(?P<number>\d{6})-(?P<version>[0-9a-f]{1,16})")
_BUILD_PREFIX = ".building-"
_OWNER_FILE = ".owner.lock"  # inside a build directory, locked by the process writing it
_RENAME_EXCHANGE = 2  # linux/fs.h
# What lies beside a store `<name>` as `.<name>.<kind>` (journal: memory_bank/ingest/journal.py;
# conversations: memory_bank/conversation/memory.py; keys, write jobs and uploads:
# memory_bank/agents/), and the prefixes of its temporary links.
_SIBLINGS = (
    "versions", "lock", "graph", "graph.lock", "journal", "conversations",
    "keys.json", "jobs", "uploads",
)  # fmt: skip
_SIBLING_PREFIXES = ("link-", "legacy-")


class StoreLocation:
    """One store path: its versions, its lock, its build area."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        given = Path(path).expanduser().absolute()
        if not given.name:
            raise StoreError(f"cannot use {os.fspath(path)!r} as a store directory")
        # A symlink we did not make (e.g. `current -> stores/prod`) stands for its target.
        self.path = _followed_to_store(given)
        self.name = self.path.name
        self.parent = self.path.parent
        self.versions_dir = self.parent / f".{self.name}.versions"
        self.lock_path = self.parent / f".{self.name}.lock"
        # The Query Graph's checkpoints since the live version's snapshot, and their lock
        # (taken after the store lock, never before it: see memory_bank/graph/storage.py).
        self.graph_log_dir = self.parent / f".{self.name}.graph"
        self.graph_lock_path = self.parent / f".{self.name}.graph.lock"

    # --- reading --------------------------------------------------------------------------

    def live_directory(self) -> Path | None:
        """The directory that holds the live store now (a version, or a legacy directory)."""
        try:
            resolved = self.path.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        return resolved if resolved.is_dir() else None

    def versions(self) -> list[Path]:
        """Version directories, oldest first."""
        if not self.versions_dir.is_dir():
            return []
        found = [p for p in self.versions_dir.iterdir() if _VERSION_NAME.fullmatch(p.name)]
        return sorted(found, key=lambda path: path.name)

    def delete(self) -> None:
        """Delete the store: its path (link or directory) and everything beside it that is its
        own (`.<name>.versions`, `.lock`, `.graph`, `.journal`, ...). Only for a path that
        `looks_like_store`, or that is already gone."""
        if self.path.is_symlink() or self.path.is_file():
            self.path.unlink()
        elif self.path.is_dir():
            shutil.rmtree(self.path)
        prefix = f".{self.name}."
        for sibling in self.parent.iterdir():
            kind = sibling.name.removeprefix(prefix)
            if not sibling.name.startswith(prefix) or not (
                kind in _SIBLINGS or kind.startswith(_SIBLING_PREFIXES)
            ):
                continue  # another store's, e.g. `.<name>.old.versions` of store `<name>.old`
            if sibling.is_dir() and not sibling.is_symlink():
                shutil.rmtree(sibling)
            else:
                sibling.unlink()

    # --- locking ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, wait_s: float | None = None) -> Iterator[None]:
        """Hold the store's exclusive lock; re-entrant within a thread. Waits until it is free,
        or at most `wait_s` seconds (then StoreLockedError names who holds it)."""
        self._refuse_a_version()
        with file_lock(self.lock_path, f"the store {self.path}", wait_s):
            yield

    @contextlib.contextmanager
    def graph_lock(self) -> Iterator[None]:
        """Hold the lock of the store's Query Graph (re-entrant within a thread)."""
        self._refuse_a_version()
        with file_lock(self.graph_lock_path, f"the Query Graph of {self.path}"):
            yield

    # --- writing ----------------------------------------------------------------------------

    def new_build_directory(self) -> tuple[Path, IO[str]]:
        """A fresh directory to write a version into, and the handle whose `flock` marks it as
        being written (close it to release; a build whose writer died is removed later)."""
        self.parent.mkdir(parents=True, exist_ok=True)
        self.versions_dir.mkdir(exist_ok=True)
        while True:
            # Not tempfile.mkdtemp: its mode 0700 would hide the store from other users.
            candidate = self.versions_dir / f"{_BUILD_PREFIX}{secrets.token_hex(6)}"
            try:
                candidate.mkdir(mode=0o777)
            except FileExistsError:
                continue
            handle = open(candidate / _OWNER_FILE, "w")  # noqa: SIM115 - held while building
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return candidate, handle

    def publish(self, build_dir: Path, store_version: str) -> Path:
        """Make `build_dir` (from `new_build_directory`, complete and synced) the live store;
        returns its version directory. Takes the lock (re-entrantly) for the switch."""
        with self.lock():
            self.refuse_foreign_path()
            numbers = [int(_VERSION_NAME.fullmatch(p.name)["number"]) for p in self.versions()]
            final = self.versions_dir / f"{max(numbers, default=0) + 1:06d}-{store_version[:8]}"
            os.rename(build_dir, final)
            os.utime(final)  # the time it went live: garbage collection counts from it
            fsync_directory(self.versions_dir)
            link = self.parent / f".{self.name}.link-{secrets.token_hex(6)}"
            os.symlink(os.path.relpath(final, self.parent), link)
            try:
                if self.path.is_dir() and not self.path.is_symlink():
                    self._exchange_legacy_directory(link)
                else:
                    _switch_link(link, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    link.unlink()
                raise
            fsync_directory(self.parent)
            self.collect_garbage()
            return final

    def collect_garbage(self, now: float | None = None) -> list[Path]:
        """Remove dead builds and versions nobody can still be reading; returns what went.
        Caller holds the lock (or accepts that a concurrent commit may race it)."""
        removed: list[Path] = []
        if not self.versions_dir.is_dir():
            return removed
        for build in self.versions_dir.glob(f"{_BUILD_PREFIX}*"):
            if _writer_is_gone(build):
                shutil.rmtree(build, ignore_errors=True)
                removed.append(build)
        for stray in self.parent.glob(f".{self.name}.link-*"):
            with contextlib.suppress(OSError):
                stray.unlink()
        versions = self.versions()
        live = self.live_directory()
        if live not in versions:
            return removed  # a legacy store, or none: nothing here is known to be unused
        now = time.time() if now is None else now
        # Kept: the live version, the one before it, and any version that stopped being live
        # (when its successor was published: the successor's mtime) less than GRACE ago.
        for position, version in enumerate(versions[: max(versions.index(live) - 1, 0)]):
            if now - _mtime(versions[position + 1]) >= GRACE_SECONDS:
                shutil.rmtree(version, ignore_errors=True)
                removed.append(version)
        return removed

    def remove_unborn(self) -> None:
        """After a first commit failed: remove what it left beside a store that never came to
        be (dead builds, the empty versions area, its graph step's checkpoints). The lock file
        stays (see `locks.py`)."""
        if not self.versions_dir.is_dir() and not self.graph_log_dir.is_dir():
            return
        with self.lock():
            if self.live_directory() is not None:
                return
            self.collect_garbage()
            with contextlib.suppress(OSError):
                self.versions_dir.rmdir()  # only when empty: a live writer's build stays
            shutil.rmtree(self.graph_log_dir, ignore_errors=True)

    # --- helpers ----------------------------------------------------------------------------

    def _refuse_a_version(self) -> None:
        """A link copied from a store (`cp -a`) still names one of its versions: writing there
        would turn a published version of that store into a store of its own (and put locks
        and graph checkpoints among its versions)."""
        owner = _owner_of_version(self.path)
        if owner is not None:
            raise StoreError(
                f"{self.path} is a version of the store {owner}, not a store of its own: write "
                f"to {owner}, or copy the store with its files (`cp -rL`)"
            )

    def _exchange_legacy_directory(self, link: Path) -> None:
        """Swap a pre-versions store directory with the new link, then delete it."""
        if _rename_exchange(link, self.path):
            shutil.rmtree(link, ignore_errors=True)  # `link` now names the old directory
            return
        # No renameat2 (another OS or filesystem): a short window without a store, once.
        aside = self.parent / f".{self.name}.legacy-{secrets.token_hex(6)}"
        os.rename(self.path, aside)
        os.replace(link, self.path)
        shutil.rmtree(aside, ignore_errors=True)

    def refuse_foreign_path(self) -> None:
        """Never replace (and so delete) something that is not a store."""
        from memory_bank.store.layout import looks_like_store

        path = self.path
        if path.is_symlink():
            if not _is_managed_link(path):
                raise StoreError(f"{path} is a symlink this store did not make")
            return
        if path.exists() and not path.is_dir():
            raise StoreError(f"{path} exists and is not a directory")
        self._refuse_a_version()
        if path.is_dir() and any(path.iterdir()) and not looks_like_store(path):
            raise StoreError(f"{path} is a non-empty directory that is not a memory store")


def _switch_link(link: Path, path: Path) -> None:
    os.replace(link, path)  # atomic: a reader sees the old target or the new one


def _followed_to_store(path: Path) -> Path:
    """`path` with the symlinks we did not make followed, up to a store's own link (followed
    further, it would name one of its versions rather than the store)."""
    for _ in range(40):  # the kernel's own limit on links in a row
        if not path.is_symlink() or _is_managed_link(path):
            return path
        target = path.parent.resolve() / os.readlink(path)
        path = target.resolve() if target.name == ".." else target.parent.resolve() / target.name
    raise StoreError(f"{path}: too many levels of symbolic links")


def _owner_of_version(path: Path) -> Path | None:
    """The store whose version directory `path` is (None: it is none)."""
    versions = re.fullmatch(r"\.(?P<name>.+)\.versions", path.parent.name)
    if versions is None or _VERSION_NAME.fullmatch(path.name) is None:
        return None
    return path.parent.parent / versions["name"]


def _is_managed_link(path: Path) -> bool:
    try:
        target = os.readlink(path)
    except OSError:
        return False
    parts = Path(target).parts
    return len(parts) == 2 and parts[0] == f".{path.name}.versions"


def _writer_is_gone(build: Path) -> bool:
    try:
        handle = open(build / _OWNER_FILE, "a")  # noqa: SIM115 - closed below
    except OSError:
        # No owner file: it is being created this instant, or a crash came before it.
        return time.time() - _mtime(build) > GRACE_SECONDS
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _rename_exchange(first: Path, second: Path) -> bool:
    """Atomically exchange two paths (Linux renameat2); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    result = renameat2(
        at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result != 0:
        errno = ctypes.get_errno()
        if errno in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: not on this filesystem
            return False
        raise OSError(errno, os.strerror(errno), os.fspath(second))
    return True
