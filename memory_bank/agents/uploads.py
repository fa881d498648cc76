"""What an add may take: files on the server under `agents.add_roots` (and, for a key limited
to documents, inside them), or files sent over HTTP, kept under `.<name>.uploads/<key>/`."""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from pydantic import BaseModel

from memory_bank.agents.jobs import uploads_directory
from memory_bank.agents.keys import Caller
from memory_bank.errors import AccessDenied, ToolError
from memory_bank.store.disk import writing
from memory_bank.text.sources import SUPPORTED_SUFFIXES

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class Upload(BaseModel):
    """A file sent to be added: its name (suffix picks the reader) and its bytes."""

    name: str
    data: bytes


def uploads_folder(store: Path, caller: Caller) -> Path:
    """Where `caller`'s uploads go: one folder per key, so a key limited to documents sees its
    own uploads (`MemoryGateway` adds the folder to its documents)."""
    return uploads_directory(store) / (f"k{caller.key_id}" if caller.key_id else "local")


def allowed_paths(roots: list[str], caller: Caller, paths: tuple[str, ...]) -> list[Path]:
    """`paths` resolved, each under one of `roots` (and the caller's documents); else refused."""
    resolved_roots = [Path(root).expanduser().resolve() for root in roots]
    allowed: list[Path] = []
    for given in paths:
        path = Path(given).expanduser().resolve()
        if not any(path == root or path.is_relative_to(root) for root in resolved_roots):
            raise AccessDenied(
                f"{given} is not under a directory this server adds from "
                "(agents.add_roots); upload the file instead"
            )
        if caller.scope.documents and not _inside_named(path, caller.scope.documents):
            raise AccessDenied(f"{given} is outside the documents this key is limited to")
        if not path.exists():
            raise ToolError(f"{given} does not exist on the server")
        allowed.append(path)
    return allowed


def save_uploads(folder: Path, uploads: tuple[Upload, ...]) -> list[Path]:
    """Each upload written under a fresh subfolder of `folder`, named safely."""
    batch = folder / secrets.token_hex(6)
    saved = []
    for upload in uploads:
        name = _SAFE_NAME.sub("_", Path(upload.name).name).lstrip(".") or "upload.md"
        if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
            raise ToolError(
                f"{upload.name}: unsupported type; send one of "
                + ", ".join(sorted(SUPPORTED_SUFFIXES))
            )
        target = batch / name
        with writing(target):  # a full disk is one line, as for every write
            batch.mkdir(parents=True, exist_ok=True)
            target.write_bytes(upload.data)
        saved.append(target)
    return saved


def _inside_named(path: Path, names: tuple[str, ...]) -> bool:
    for name in names:
        target = Path(name).expanduser().resolve()
        if path == target or path.is_relative_to(target):
            return True
    return False
