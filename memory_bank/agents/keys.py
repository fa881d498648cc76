"""API keys: who may read, write or administer a store, and which part of it they see.

A key is `mbk_<id>_<secret>`: the id names it in listings and logs, the secret (256 random bits)
is shown once, when the key is made, and only its SHA-256 is kept. A fast hash is enough: the
secret is random, not a password, so there is nothing to guess from the digest. Keys live beside
the store in `.<name>.keys.json` (not inside it: the store path is a link each commit moves),
written atomically; a server reads the file again when it changes, so a revoked key stops
working at the next request.

Permissions nest: `read` (search, ask, ls/cat/grep, recall), `write` (also add, remove, turns,
sessions), `admin` (also rebuild and the job list of every key). A key may be limited to part of
the store (`KeyScope`): some documents (source paths as ingested, folders holding them, or
document ids) and/or one store directory's subtree; `visibility.py` works out what that lets it
see.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory_bank.errors import ConfigError
from memory_bank.store.atomic import atomic_write_text

Permission = Literal["read", "write", "admin"]
PERMISSIONS: tuple[Permission, ...] = ("read", "write", "admin")
TOKEN_PREFIX = "mbk_"
_ID_BYTES = 6
_SECRET_BYTES = 32


class KeyScope(BaseModel):
    """The part of a store a key sees; empty: all of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    documents: tuple[str, ...] = ()
    directory: str | None = None

    @field_validator("directory")
    @classmethod
    def _normalized(cls, directory: str | None) -> str | None:
        if directory is None or directory.strip("/ ") == "":
            return None
        return "/" + directory.strip().strip("/")

    @property
    def is_whole_store(self) -> bool:
        return not self.documents and self.directory is None


class ApiKey(BaseModel):
    """One key as kept on disk (never the secret itself)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    permission: Permission
    scope: KeyScope = KeyScope()
    sha256: str
    created_at: str
    revoked_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class Caller(BaseModel):
    """Who is asking: a key's id, permission and scope, or the local owner (no key)."""

    model_config = ConfigDict(frozen=True)

    key_id: str | None = None  # None: the local owner, on loopback without a key
    name: str = "local"
    permission: Permission = "admin"
    scope: KeyScope = KeyScope()

    def allows(self, needed: Permission) -> bool:
        return PERMISSIONS.index(self.permission) >= PERMISSIONS.index(needed)


LOCAL_OWNER = Caller()


class _KeyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKey] = Field(default_factory=list)


def keys_path(store: str | Path) -> Path:
    """`.<name>.keys.json` beside the store (see `store/location.py` for the siblings)."""
    path = Path(store).expanduser().absolute()
    return path.parent / f".{path.name}.keys.json"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class KeyRing:
    """The keys of one store: made, listed and revoked by the CLI, checked by the server."""

    def __init__(self, store: str | Path) -> None:
        self.path = keys_path(store)
        self._lock = threading.Lock()
        self._keys: list[ApiKey] = []
        self._stamp: tuple[int, int, int] | None = None

    def keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first (re-read when the file changed)."""
        with self._lock:
            return list(self._load())

    def has_active_keys(self) -> bool:
        return any(key.active for key in self.keys())

    def create(
        self, name: str, permission: Permission, scope: KeyScope = KeyScope()
    ) -> tuple[ApiKey, str]:
        """A new key and its token; the token is not kept and cannot be shown again."""
        if not name.strip():
            raise ConfigError("a key needs a name")
        if permission not in PERMISSIONS:
            raise ConfigError(f"permission must be one of {', '.join(PERMISSIONS)}")
        key_id = secrets.token_hex(_ID_BYTES)
        token = f"{TOKEN_PREFIX}{key_id}_{secrets.token_urlsafe(_SECRET_BYTES)}"
        key = ApiKey(
            id=key_id,
            name=name.strip(),
            permission=permission,
            scope=scope,
            sha256=digest(token),
            created_at=_now(),
        )
        with self._lock:
            self._save([*self._load(), key])
        return key, token

    def revoke(self, key_id_or_name: str) -> ApiKey:
        """Revoke the active key with this id (or this name, when only one has it)."""
        with self._lock:
            keys = self._load()
            matches = [k for k in keys if k.active and key_id_or_name in (k.id, k.name)] or [
                k for k in keys if k.active and k.id.startswith(key_id_or_name)
            ]
            if len(matches) != 1:
                found = "no active key" if not matches else f"{len(matches)} active keys"
                raise ConfigError(f"{found} named or numbered {key_id_or_name!r}")
            revoked = matches[0].model_copy(update={"revoked_at": _now()})
            self._save([revoked if k.id == revoked.id else k for k in keys])
            return revoked

    def authenticate(self, token: str) -> Caller | None:
        """The caller a token stands for; None when it is malformed, unknown or revoked."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        key_id, _, secret = token.removeprefix(TOKEN_PREFIX).partition("_")
        if not secret:
            return None
        presented = digest(token)
        for key in self.keys():
            if key.id == key_id and key.active and hmac.compare_digest(key.sha256, presented):
                return Caller(
                    key_id=key.id, name=key.name, permission=key.permission, scope=key.scope
                )
        return None

    def _load(self) -> list[ApiKey]:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._keys, self._stamp = [], None
            return self._keys
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            try:
                parsed = _KeyFile.model_validate_json(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read the keys file {self.path}: {exc}") from exc
            self._keys, self._stamp = parsed.keys, stamp
        return self._keys

    def _save(self, keys: list[ApiKey]) -> None:
        text = json.dumps(_KeyFile(keys=keys).model_dump(mode="json"), indent=2)
        atomic_write_text(self.path, text + "\n")
        os.chmod(self.path, 0o600)  # digests only, but nobody else needs to read them
        self._keys, self._stamp = keys, None


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()
