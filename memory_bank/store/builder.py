"""Build a complete store version next to the live one, then publish it in one atomic switch.

The build happens in the store's version area (see `location.py`), so readers see the old
version or the new one, never a mix, and the store path never goes missing. Anything read from
the previous store that the new one depends on (its `created_at`, its tree) is read under the
store's lock, held across "read, write, publish" with `locked()`, so concurrent commits
serialize. A build whose process died is removed by the next commit.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
from memory_bank.store.atomic import relative_parts
from memory_bank.store.disk import is_storage_failure, storage_error, writing
from memory_bank.store.integrity import HASHES_FILE, RecordedHashes
from memory_bank.store.location import StoreLocation
from memory_bank.store.segments import SegmentHook
from memory_bank.store.snapshot import MemoryParts
from memory_bank.store.table_changes import write_version_tables


class StoreBuilder:
    """Writes a new store into a temporary directory; `commit()` makes it the live store.

    Use as a context manager: an exception inside the block, or leaving it without `commit()`,
    removes the temporary directory and leaves the previous store untouched.
    """

    def __init__(self, store_dir: str | os.PathLike[str]) -> None:
        self.location = StoreLocation(store_dir)
        self.store_dir = self.location.path
        self.location.refuse_foreign_path()
        with writing(self.location.versions_dir):
            self.build_dir, self._owner = self.location.new_build_directory()
        self.hashes = RecordedHashes(self.location.live_directory(), self.store_dir)
        self._committed = False
        self.version_dir: Path | None = None
        self._made_directories: set[Path] = set()

    def __enter__(self) -> StoreBuilder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self._committed:
            self.abort()

    # --- writing into the build directory ---------------------------------------------------

    def write_file(self, relative: str, text: str) -> Path:
        """Write a UTF-8 text file at a store-relative path (no fsync: `commit` syncs once)."""
        with writing(self.build_dir / relative):
            path = self._build_path(relative)
            path.write_text(text, encoding="utf-8", newline="")
        self.hashes.wrote_text(relative, text)
        return path

    def link_file(self, relative: str, source: Path) -> Path:
        """Put the published file `source` (of an earlier version: never changed in place)
        at a store-relative path as a hard link, or a copy where links cannot be made."""
        with writing(self.build_dir / relative):
            path = self._build_path(relative)
            try:
                os.link(source, path)
            except OSError:
                shutil.copyfile(source, path)
            self.hashes.linked(relative, source)
        return path

    def _build_path(self, relative: str) -> Path:
        # The build directory is new and holds only what this builder put there (no symlinks),
        # so the lexical check of the path is enough: no per-file resolve.
        path = self.build_dir.joinpath(*relative_parts(relative))
        if path.parent not in self._made_directories:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made_directories.add(path.parent)
        return path

    def write_tables(
        self,
        parts: MemoryParts,
        chunk_paths: Mapping[int, str],
        *,
        base: Path | None,
        compact: bool,
        document_ids: set[str],
        readmes: Mapping[str, str] | None = None,
        readme_vectors: Mapping[str, np.ndarray] | None = None,
        attachments: SegmentHook | None = None,
    ) -> int:
        """Write the tables of `.bank/` as segments, with the memories' vector index: with
        `base` (a published version directory holding the same kind of rows), only what changed
        since it, linking the rest, folded into one segment per table when `compact`; without,
        everything anew. `document_ids`: every document of the new version (with a base,
        `parts` may hold only the new documents' rows). Returns the number of sentences the
        version holds."""
        manifest, _ = write_version_tables(
            self._build_path(layout.TABLES_FILE).parent,  # .bank/, made if missing
            base / layout.BANK_DIR if base is not None else None,
            compact=compact,
            document_ids=document_ids,
            documents=parts.documents,
            chunks=parts.chunks,
            memories=parts.memories,
            memory_vectors=parts.memory_vectors,
            sentences=parts.sentences,
            sentence_vectors=parts.sentence_vectors,
            sentence_source=parts.sentence_source,
            chunk_paths=chunk_paths,
            readmes=readmes,
            readme_vectors=readme_vectors,
            attachments=attachments,
        )
        return sum(s.live_rows for s in manifest.tables["sentences"].segments)

    def write_tree(self, tree: DirectoryNode) -> None:
        self._write_json(layout.TREE_FILE, tree.model_dump(mode="json"))

    def write_bank_json(self, name: str, value: Any) -> None:
        """A JSON file of `.bank/` beyond the standard ones (e.g. the reorganization log)."""
        if "/" in name or not name.endswith(".json"):
            raise StoreError(f"not a .bank JSON file name: {name!r}")
        self._write_json(f"{layout.BANK_DIR}/{name}", value)

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        self._write_json(layout.META_FILE, dict(meta))

    def write_manifest(self, store_version: str, documents: Mapping[str, str]) -> None:
        """Write `.bank/manifest.json`; `documents` maps document_id to its source."""
        self._write_json(
            layout.MANIFEST_FILE,
            {
                "schema_version": layout.MANIFEST_SCHEMA_VERSION,
                "store_version": store_version,
                "documents": dict(sorted(documents.items())),
            },
        )

    def _write_json(self, relative: str, value: Any) -> None:
        self.write_file(relative, json.dumps(value, indent=2, ensure_ascii=False) + "\n")

    # --- the live store ---------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store's exclusive lock; `commit()` inside the block reuses it.

        Wrap "read the previous store, write what depends on it, commit" in one `locked()` so a
        concurrent commit cannot slip in between.
        """
        with self.location.lock():
            yield

    def previous_meta(self) -> dict[str, Any] | None:
        """The live store's `.gam_meta.json`, or None if there is no (readable) previous store.

        A damaged meta file counts as absent: the build that is about to replace it is the fix.
        """
        try:
            meta = json.loads((self.store_dir / layout.META_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None

    def commit(self) -> Path:
        """Publish the build as the live store; returns the store path."""
        if self._committed:
            raise StoreError(f"store build for {self.store_dir} was already committed")
        missing = layout.missing_store_files(self.build_dir)
        if missing:
            raise StoreError(f"refusing to publish an incomplete store; missing: {missing}")
        meta = json.loads((self.build_dir / layout.META_FILE).read_text(encoding="utf-8"))
        with writing(self.build_dir / HASHES_FILE):
            self.hashes.write(self.build_dir)
        with self.locked():
            # One sync for the whole build: cheaper than an fsync per chunk file, and it must
            # happen before the switch so a crash cannot leave a live store of empty files.
            self._release()
            os.sync()
            try:
                self.version_dir = self.location.publish(self.build_dir, meta["store_version"])
            except OSError as exc:
                if is_storage_failure(exc):
                    raise storage_error(exc, self.store_dir) from exc
                raise StoreError(
                    f"could not publish the new store at {self.store_dir}: {exc}"
                ) from exc
            self._committed = True
        return self.store_dir

    def abort(self) -> None:
        """Throw the build away (idempotent); the live store is not touched."""
        if not self._committed:
            self._release()
            shutil.rmtree(self.build_dir, ignore_errors=True)

    def _release(self) -> None:
        if self._owner is not None:
            with contextlib.suppress(OSError):
                (self.build_dir / ".owner.lock").unlink()
            self._owner.close()  # closing drops the flock
            self._owner = None


@contextlib.contextmanager
def store_lock(store_dir: str | os.PathLike[str]) -> Iterator[None]:
    """The store's exclusive cross-process lock (see `StoreLocation.lock`)."""
    with StoreLocation(store_dir).lock():
        yield
