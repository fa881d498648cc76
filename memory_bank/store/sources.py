"""Which stored documents a user's names for them mean (remove, scoped search).

A document is named by its source path as ingested, by a file or folder path that resolves to
it (a folder names every document below it), or by its document id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from memory_bank.errors import StoreError


def resolve_documents(source_of: Mapping[str, str], names: Sequence[str]) -> list[str]:
    """The ids of the documents (`source_of`: document id -> source as ingested) that `names`
    name, in the order named; StoreError naming every name that matches none."""
    matcher = _Matcher(source_of)
    ids: list[str] = []
    unknown: list[str] = []
    for name in names:
        matches = matcher.named(name)
        if matches:
            ids.extend(match for match in matches if match not in ids)
        else:
            unknown.append(name)
    if unknown:
        raise StoreError("not in the store: " + ", ".join(unknown))
    return ids


def documents_named(source_of: Mapping[str, str], names: Sequence[str]) -> set[str]:
    """The ids of the documents any of `names` names (as `resolve_documents`); a name that
    matches nothing adds nothing (a folder may hold no document yet)."""
    matcher = _Matcher(source_of)
    return {document_id for name in names for document_id in matcher.named(name)}


class _Matcher:
    def __init__(self, source_of: Mapping[str, str]) -> None:
        self.source_of = source_of
        self._resolved: dict[str, Path] | None = None  # only when a name needs them (syscalls)

    def named(self, name: str) -> list[str]:
        matches = [
            document_id
            for document_id, source in self.source_of.items()
            if name in (source, document_id)
        ]
        if matches:
            return matches
        if self._resolved is None:
            self._resolved = {
                document_id: path
                for document_id, source in self.source_of.items()
                if (path := _resolved(source)) is not None
            }
        target = _resolved(name)
        if target is None:
            return []
        return [
            document_id
            for document_id, path in self._resolved.items()
            if path == target or path.is_relative_to(target)
        ]


def _resolved(source: str) -> Path | None:
    """The real path `source` names; None when it can name none (a NUL byte, a symlink loop, an
    unknown user's home): then it matches only as given, by source or id."""
    try:
        return Path(source).expanduser().resolve()
    except (OSError, ValueError, RuntimeError):
        return None
