"""What a failed write means to a person: one line that names the path and says what to do.

Disk full, permission denied and a read-only file system are the failures a person can act on;
`writing(path)` turns them (and any other OSError) into a `StorageError` naming `path` where the
error itself does not name a file (a failed `write()` never does, nor do pyarrow and faiss).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory_bank.errors import MemoryBankError, StorageError

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_DENIED = (errno.EACCES, errno.EPERM)
_KNOWN = (*_NO_SPACE, *_DENIED, errno.EROFS)


@contextmanager
def writing(path: str | os.PathLike[str]) -> Iterator[None]:
    """Run a write; an OSError (or faiss's RuntimeError for a failed write) becomes a
    StorageError that names the file it names, else `path`."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        raise storage_error(exc, path) from exc
    except RuntimeError as exc:  # faiss reports a failed write as RuntimeError with strerror
        code = _errno_in_text(str(exc))
        if code is None:
            raise
        raise storage_error(OSError(code, os.strerror(code)), path) from exc


def storage_error(exc: OSError, path: str | os.PathLike[str] | None = None) -> StorageError:
    """The one-line StorageError for `exc`, about the file it names (else `path`)."""
    code = exc.errno if exc.errno is not None else _errno_in_text(str(exc))
    named = exc.filename or path
    where = os.fsdecode(named) if named is not None else ""
    if code in _NO_SPACE:
        device = f"the device of {where}{_free_space(where)}" if where else "device"
        message = f"no space left on {device}: free some space, then run the same command again"
    elif code in _DENIED:
        message = (
            f"permission denied writing {where}: run as a user who may write there, "
            f"or change the permissions of {_parent(where)}"
            if where
            else "permission denied: run as a user who may write to the store and its folder"
        )
    elif code == errno.EROFS:
        message = (
            f"{where or 'the store'} is on a read-only file system: remount it read-write, "
            "or use a store on a writable disk"
        )
    else:
        message = f"cannot write {where or 'a file'}: {exc.strerror or exc}"
    return StorageError(message, where, code)


def error_line(exc: MemoryBankError | OSError) -> str:
    """What an edge (CLI, job) says of an error: its message, an OSError as `storage_error`
    words it, then its notes (e.g. what a failed ingest left)."""
    message = str(storage_error(exc)) if isinstance(exc, OSError) else str(exc)
    return "; ".join([message, *getattr(exc, "__notes__", [])])


def is_storage_failure(exc: BaseException) -> bool:
    """Whether `exc` is a disk-full, permission or read-only failure (the ones a person fixes)."""
    code = getattr(exc, "errno", None)
    return code in _KNOWN or _errno_in_text(str(exc)) in _KNOWN


def _errno_in_text(text: str) -> int | None:
    """The errno whose message a library put in its own error text (pyarrow, faiss)."""
    for code in _KNOWN:
        if os.strerror(code) in text:
            return code
    return None


def _free_space(where: str) -> str:
    path = Path(where)
    for candidate in (path, *path.parents):
        try:
            free = shutil.disk_usage(candidate).free
        except OSError:
            continue
        return f" ({free / 2**20:.1f} MB free)"
    return ""


def _parent(where: str) -> str:
    path = Path(where)
    return str(path if path.is_dir() else path.parent)
