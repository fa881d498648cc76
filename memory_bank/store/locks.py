"""The store's locks: an `flock` on a file beside the store, exclusive across processes and
threads, re-entrant within a thread, that says who holds it.

The holder writes its pid and command into the lock file, so a process that has to wait can
say for whom ("held by pid 4121: memory-bank add notes/ --store mem") and, when it gives up
after its `wait_s`, tell the person what to do. The lock file is never deleted: a waiter would
lock a file a newcomer no longer sees.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from memory_bank.errors import StoreLockedError
from memory_bank.store.disk import writing

logger = logging.getLogger(__name__)

SAY_WAITING_AFTER_S = 2.0  # a lock taken and given back within this is not worth a line
_POLL_S = (0.02, 0.5)  # first and longest pause between attempts to take a busy lock
_HOLDER_CHARS = 200

# flock belongs to an open file description: each holder opens its own, so two threads of one
# process exclude each other too. Re-entry within a thread reuses the handle it holds.
_held = threading.local()


@contextlib.contextmanager
def file_lock(lock_path: Path, what: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock `lock_path` of `what` (e.g. "the store /data/mem"); wait for it
    at most `wait_s` seconds (None: as long as it takes)."""
    held: dict[Path, int] = _held.__dict__.setdefault("depth", {})
    if held.get(lock_path):
        held[lock_path] += 1
        try:
            yield
        finally:
            held[lock_path] -= 1
        return
    with writing(lock_path):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.fdopen(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666), "r+")
    with handle:
        _acquire(handle, lock_path, what, wait_s)
        held[lock_path] = 1
        try:
            _say_who_holds(handle)
            yield
        finally:
            held[lock_path] = 0
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _acquire(handle: IO[str], lock_path: Path, what: str, wait_s: float | None) -> None:
    started = time.monotonic()
    pause, said = _POLL_S[0], False
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        waited = time.monotonic() - started
        if wait_s is not None and waited >= wait_s:
            raise StoreLockedError(
                f"{what} is locked by {_holder(lock_path)} ({lock_path}), still after "
                f"{waited:.0f} s: let that process finish (or stop it), then run this again"
            )
        if not said and waited >= SAY_WAITING_AFTER_S:
            logger.warning("waiting for %s: locked by %s (%s)", what, _holder(lock_path), lock_path)
            said = True
        time.sleep(pause)
        pause = min(pause * 2, _POLL_S[1])


def _say_who_holds(handle: IO[str]) -> None:
    """Write this process into the lock file (best effort: the lock holds without it)."""
    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
    with contextlib.suppress(OSError):
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()} {command[:_HOLDER_CHARS]}\n")
        handle.flush()


def _holder(lock_path: Path) -> str:
    try:
        line = lock_path.read_text(encoding="utf-8", errors="replace").partition("\n")[0]
        pid, _, command = line.partition(" ")
    except OSError:
        return "another process"
    pid, command = pid.strip(), command.strip()
    if not pid.isdigit():
        return "another process"
    return f"pid {pid}" + (f": {command}" if command else "")
