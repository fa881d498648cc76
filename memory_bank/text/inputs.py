"""The inputs of an ingest: the files under the paths a user gives, then read into documents.

Finding them never fails as a whole. A directory is walked in sorted order; hidden entries and
files of unsupported types are passed over (they are not sources). Anything else that cannot be
read is skipped with a reason, as an unreadable file is: a symlink loop, a broken link, a link
that leaves the input (to a system file or folder, say), a directory that cannot be listed.

Symlinks: a link to a file inside the input is read (once, under the first path that reaches
it). A link to a directory is entered only with `follow_links`, and only when it stays inside
the input; each directory is walked once, and a link back to a directory that holds it is
skipped as a loop. A path named explicitly is taken as given, wherever its links lead.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from memory_bank.errors import SourceError
from memory_bank.schemas import Document
from memory_bank.text.sources import (
    DEFAULT_MAX_BYTES,
    SUPPORTED_SUFFIXES,
    FileReader,
    SkippedSource,
    read_files_serially,
    unsupported_reason,
)

FOLLOW_LINKS_HINT = "not followed (--follow-links follows links that stay inside the input)"


class SourceLoad(BaseModel):
    """The documents read from a set of paths, and the sources that were skipped (with why)."""

    documents: list[Document] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)  # "path: reason"


# In walk order: a file to read, or a path skipped with why.
Found = Path | SkippedSource


def discover(paths: Iterable[str | Path], *, follow_links: bool = False) -> list[Found]:
    """Every supported file under `paths` and every path skipped with its reason, in the order
    given (each directory's entries sorted by path). Each file is listed once."""
    found: list[Found] = []
    seen: set[Path] = set()
    for given in [paths] if isinstance(paths, (str, Path)) else paths:
        for entry in _expand(Path(given), follow_links):
            if isinstance(entry, SkippedSource):
                found.append(entry)
                continue
            key = _identity(entry)
            if key not in seen:
                seen.add(key)
                found.append(entry)
    return found


def discover_files(paths: Iterable[str | Path], *, follow_links: bool = False) -> list[Path]:
    """The supported files under `paths` (see `discover`); a given path that cannot be used at
    all (missing, unsupported) raises SourceError, skipped entries inside a directory do not."""
    found = []
    for given in [paths] if isinstance(paths, (str, Path)) else paths:
        entries = discover([given], follow_links=follow_links)
        whole = entries[0] if len(entries) == 1 else None
        if isinstance(whole, SkippedSource) and whole.source == str(given):
            raise SourceError(whole.source, whole.reason)
        found += [entry for entry in entries if isinstance(entry, Path)]
    return list(dict.fromkeys(found))


def load_sources(
    paths: Iterable[str | Path],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    read_files: FileReader | None = None,
    follow_links: bool = False,
) -> SourceLoad:
    """Read every supported file under `paths`; bad sources are reported, never raised.

    A file reached twice (named and inside a given directory) is read once; a file with the same
    content as an earlier one is skipped as "same content as <earlier>". `read_files` reads the
    discovered files (default: one after the other, in this process).
    """
    entries = discover(paths, follow_links=follow_links)
    files = [entry for entry in entries if isinstance(entry, Path)]
    if read_files is None:
        read = iter(read_files_serially(files, max_bytes=max_bytes))
    else:
        read = iter(read_files(files))
    outcomes = [next(read) if isinstance(entry, Path) else entry for entry in entries]
    result = SourceLoad()
    first_source_by_id: dict[str, str] = {}
    for outcome in outcomes:
        if isinstance(outcome, SkippedSource):
            result.skipped.append(str(outcome))
            continue
        first = first_source_by_id.setdefault(outcome.document_id, outcome.source)
        if first != outcome.source:
            result.skipped.append(f"{outcome.source}: same content as {first}")
            continue
        result.documents.append(outcome)
    return result


# --- one given path ---------------------------------------------------------------------------


def _expand(path: Path, follow_links: bool) -> list[Found]:
    if path.is_symlink() and not path.exists():
        return [SkippedSource(source=str(path), reason=_unfollowable_link(path))]
    if not path.exists():
        return [SkippedSource(source=str(path), reason="does not exist")]
    if path.is_dir():
        return _Walk(path, follow_links).run()
    if path.suffix.lower() in SUPPORTED_SUFFIXES:
        return [path]
    return [SkippedSource(source=str(path), reason=unsupported_reason(path))]


class _Walk:
    """One input directory, walked depth first (see the module docstring)."""

    def __init__(self, root: Path, follow_links: bool) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.follow_links = follow_links
        self.found: list[Found] = []
        self.walked: set[Path] = set()

    def run(self) -> list[Found]:
        self._directory(self.root, self.real_root)
        return sorted(self.found, key=_sort_key)

    def _directory(self, directory: Path, real: Path) -> None:
        self.walked.add(real)
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            self._skip(directory, f"cannot list this directory: {exc.strerror or exc}")
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = directory / entry.name
            try:
                if entry.is_symlink():
                    self._link(path, real)
                elif entry.is_dir(follow_symlinks=False):
                    self._directory(path, real / entry.name)
                elif path.suffix.lower() in SUPPORTED_SUFFIXES:
                    self.found.append(path)  # the reader refuses what is not a regular file
            except OSError as exc:
                self._skip(path, f"cannot be read: {exc.strerror or exc}")

    def _link(self, link: Path, holder: Path) -> None:
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            self._skip(link, _unfollowable_link(link))
            return
        is_directory = target.is_dir()
        if not is_directory and link.suffix.lower() not in SUPPORTED_SUFFIXES:
            return  # not a source whatever it points to
        if not target.is_relative_to(self.real_root):
            kind = "a directory" if is_directory else "a file"
            self._skip(link, f"symlink to {kind} outside the input ({target}): not followed")
        elif not is_directory:
            self.found.append(link)
        elif holder.is_relative_to(target):
            self._skip(link, f"symlink loop: it leads back to {target}, which holds it")
        elif not self.follow_links:
            self._skip(link, f"symlink to a directory: {FOLLOW_LINKS_HINT}")
        elif target not in self.walked:
            self._directory(link, target)
        # else: that directory was walked under another path; its files are listed there

    def _skip(self, path: Path, reason: str) -> None:
        self.found.append(SkippedSource(source=str(path), reason=reason))


def _unfollowable_link(link: Path) -> str:
    """Why a symlink cannot be followed: a loop, a missing target, or another error."""
    try:
        os.stat(link)
    except FileNotFoundError:
        return f"broken symlink (its target {os.readlink(link)} does not exist)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symlink loop (following it never reaches a file)"
        return f"symlink that cannot be followed: {exc.strerror or exc}"
    return "symlink loop (following it never reaches a file)"  # Path.resolve found the cycle


def _identity(path: Path) -> Path:
    """What a file is, for listing it once: its real path where it can be resolved."""
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return path.absolute()


def _sort_key(entry: Found) -> Path:
    return Path(entry.source) if isinstance(entry, SkippedSource) else entry
