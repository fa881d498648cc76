"""Read-only access to a committed store, loading each part on first use and keeping it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import ValidationError

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
from memory_bank.store.atomic import safe_join
from memory_bank.store.integrity import StoreIntegrity
from memory_bank.store.segments import SEGMENTS_DIR, TablesManifest, read_manifest, read_table
from memory_bank.store.tables import (
    CHUNKS_SCHEMA,
    DERIVED_MEMORY_COLUMNS,
    DOCUMENTS_SCHEMA,
    EMBEDDING_DIM,
    MEMORIES_SCHEMA,
    MEMORY_SEGMENT_SCHEMA,
    PATHS_SCHEMA,
    READMES_SCHEMA,
    SENTENCE_SEGMENT_SCHEMA,
    SENTENCES_SCHEMA,
    conform_table,
    directory_of,
    embeddings_to_numpy,
    read_faiss_index,
    read_parquet,
    with_memory_index,
    with_placement,
)
from memory_bank.store.vectors import SegmentedVectorIndex

# A store table's file when the store keeps its tables whole (written before segments).
_WHOLE_FILES = {
    "documents": layout.DOCUMENTS_FILE,
    "chunks": layout.CHUNKS_FILE,
    "memories": layout.MEMORIES_FILE,
    "sentences": layout.SENTENCES_FILE,
    "readmes": layout.READMES_FILE,
}

_T = TypeVar("_T")


class StoreReader:
    """One committed store, opened read-only.

    Opening checks that every required file is there and that the meta and the manifest agree
    on the store version; tables, vectors and the vector index load lazily and are cached. Each
    table reads as one table whether the store keeps it in segments (segments.py) or, written
    before segments, whole. If the store is replaced while a reader is open, later loads fail
    with StoreError: reopen it.
    """

    def __init__(self, store_dir: str | Path) -> None:
        self.root = Path(store_dir).expanduser().resolve()
        if not self.root.is_dir():
            raise StoreError(f"no memory store at {self.root}")
        missing = layout.missing_store_files(self.root)
        if missing:
            raise StoreError(
                f"{self.root} is not a complete memory store; missing: {', '.join(missing)}"
            )
        self.meta: dict[str, Any] = self._read_json(layout.META_FILE)
        self.manifest: dict[str, Any] = self._read_json(layout.MANIFEST_FILE)
        if not isinstance(self.meta, dict) or not isinstance(self.manifest, dict):
            raise StoreError(f"store {self.root}: meta and manifest must be JSON objects")
        if not self.meta.get("store_version"):
            raise StoreError(f"{self.root / layout.META_FILE} has no store_version")
        if self.manifest.get("store_version") != self.meta["store_version"]:
            raise StoreError(
                f"store {self.root} is inconsistent: meta and manifest disagree on store_version"
            )
        self._cache: dict[str, Any] = {}
        # What each loaded part is checked against (`integrity.py`): a changed one is a warning.
        self.integrity = StoreIntegrity(self.root)

    @staticmethod
    def is_store(path: str | Path) -> bool:
        """True when `path` holds a complete committed store."""
        return layout.is_store(Path(path))

    @property
    def store_version(self) -> str:
        return str(self.meta["store_version"])

    def path(self, relative: str) -> Path:
        """Absolute path of a store-relative path; refuses anything outside the store."""
        return safe_join(self.root, relative)

    def tree(self) -> DirectoryNode:
        def load() -> DirectoryNode:
            self.integrity.check_loaded(layout.TREE_FILE)
            try:
                return DirectoryNode.model_validate(self._read_json(layout.TREE_FILE))
            except ValidationError as exc:
                path = self.root / layout.TREE_FILE
                raise StoreError(f"{path} is not a valid tree: {exc}") from exc

        return self._cached("tree", load)

    @property
    def segmented(self) -> bool:
        """True for a store whose tables are segments (every store written since they exist)."""
        return not layout.has_whole_tables(self.root)

    def table_manifest(self) -> TablesManifest:
        """`.bank/tables.json`: each table's segments and tombstones (segmented stores only)."""

        def load() -> TablesManifest:
            manifest = read_manifest(self.root / layout.BANK_DIR)
            self.integrity.check_loaded(layout.TABLES_FILE)
            return manifest

        return self._cached("table_manifest", load)

    def documents(self) -> pa.Table:
        return self._table("documents", DOCUMENTS_SCHEMA)

    def chunks(self) -> pa.Table:
        return self._table("chunks", CHUNKS_SCHEMA)

    def memories(self) -> pa.Table:
        """The memories; row i is memory index i."""

        def load() -> pa.Table:
            if self.segmented:
                rows = self._table("memories_rows", MEMORY_SEGMENT_SCHEMA, "memories")
                paths = self._table("paths", PATHS_SCHEMA).column("path").to_pylist()
                return with_placement(rows, paths)
            table = read_parquet(self._existing(layout.MEMORIES_FILE), MEMORIES_SCHEMA)
            self.integrity.check_loaded(layout.MEMORIES_FILE)
            if table.column("index").to_pylist() != list(range(table.num_rows)):
                path = self.root / layout.MEMORIES_FILE
                raise StoreError(f"{path}: row numbers and memory indices differ")
            return table

        return self._cached("memories", load)

    def sentences(self) -> pa.Table:
        """Every chunk's sentences; `index` is the memory index of the sentence's chunk."""
        if not self.segmented:
            return self._table("sentences", SENTENCES_SCHEMA)

        def load() -> pa.Table:
            rows = self._table("sentence_rows", SENTENCE_SEGMENT_SCHEMA, "sentences")
            return with_memory_index(rows, self.memories().column("chunk_id"))

        return self._cached("sentences", load)

    def memory_vectors(self) -> np.ndarray:
        """(n, 384) float32, read-only, row i = memory index i."""
        return self._cached("memory_vectors", lambda: embeddings_to_numpy(self.memories()))

    def sentence_vectors(self) -> np.ndarray:
        """(k, 384) float32, read-only, row j = row j of `sentences()`."""
        return self._cached("sentence_vectors", lambda: embeddings_to_numpy(self.sentences()))

    def readmes(self) -> pa.Table | None:
        """The READMEs (directory, text, embedding; sorted by directory), or None for a store
        written without README vectors."""

        def load() -> pa.Table | None:
            if self.segmented:
                if "readmes" not in self.table_manifest().tables:
                    return None
                return self._table("readmes_rows", READMES_SCHEMA, "readmes").sort_by("directory")
            if not (self.root / layout.READMES_FILE).is_file():
                return None
            self.integrity.check_loaded(layout.READMES_FILE)
            return read_parquet(self._existing(layout.READMES_FILE), READMES_SCHEMA)

        return self._cached("readmes", load)

    def readme_vectors(self) -> np.ndarray:
        """(d, 384) float32, read-only, row j = row j of `readmes()`; (0, 384) without it."""

        def load() -> np.ndarray:
            table = self.readmes()
            if table is None:
                return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
            return embeddings_to_numpy(table)

        return self._cached("readme_vectors", load)

    def faiss_index(self) -> faiss.Index | SegmentedVectorIndex:
        """The vector index over the memories: `search(queries, k)` gives memory indices."""

        def load() -> faiss.Index | SegmentedVectorIndex:
            if self.segmented:
                segments = self.table_manifest().tables.get("memories")
                self._check_segments("memories", attachments=True)
                return SegmentedVectorIndex(
                    self.root / layout.BANK_DIR,
                    segments.segments if segments else [],
                    self.memory_vectors(),
                )
            self.integrity.check_loaded(layout.FAISS_FILE)
            index = read_faiss_index(self.root / layout.FAISS_FILE)
            if index.ntotal != self.memories().num_rows:
                raise StoreError(
                    f"store {self.root} is inconsistent: faiss has {index.ntotal} vectors, "
                    f"memories.parquet {self.memories().num_rows} rows"
                )
            return index

        return self._cached("faiss_index", load)

    def rows(
        self, name: str, columns: list[str], where: tuple[str, list[Any]] | None = None
    ) -> pa.Table:
        """Some columns of a stored table (documents, chunks, sentences), optionally only the
        rows whose column `where[0]` is one of `where[1]`, without reading the whole table.
        For the memories, the columns in memory-index order and no `where`."""
        if name == "memories":
            return self._memory_columns(columns)
        if self.segmented:
            return read_table(
                self.root / layout.BANK_DIR, name, columns, where, manifest=self.table_manifest()
            )
        path = self._existing(_WHOLE_FILES[name])
        if where is not None and not where[1]:
            return pq.read_table(path, columns=columns).slice(0, 0)
        filters = [(where[0], "in", list(where[1]))] if where else None
        return pq.read_table(path, columns=columns, filters=filters)

    def _memory_columns(self, columns: list[str]) -> pa.Table:
        if not self.segmented or "memories" in self._cache:
            return self.memories().select(columns)
        stored = [c for c in columns if c not in DERIVED_MEMORY_COLUMNS]
        bank = self.root / layout.BANK_DIR
        table = read_table(bank, "memories", stored, manifest=self.table_manifest())
        paths = self._table("paths", PATHS_SCHEMA).column("path").to_pylist()
        derived = {
            "index": pa.array(range(table.num_rows), type=pa.int64()),
            "path": pa.array(paths, type=pa.string()),
            "directory": pa.array([directory_of(p) for p in paths], type=pa.string()),
        }
        return pa.table({c: derived[c] if c in derived else table.column(c) for c in columns})

    def chunk_path(self, index: int) -> str:
        """Store-relative path of memory `index`'s chunk file ("dir/sub/title.md")."""
        paths: list[str] = self._cached(
            "chunk_paths", lambda: self.memories().column("path").to_pylist()
        )
        if not 0 <= index < len(paths):
            raise StoreError(f"store {self.root} has no memory with index {index}")
        return paths[index]

    def _table(self, key: str, schema: pa.Schema, name: str | None = None) -> pa.Table:
        """Table `name` (default: `key`) read whole and checked against `schema`, and its files
        against what the version recorded of them."""
        name = name or key

        def load() -> pa.Table:
            if not self.segmented:
                relative = _WHOLE_FILES[name]
                table = read_parquet(self._existing(relative), schema)
                self.integrity.check_loaded(relative)
                return table
            bank = self.root / layout.BANK_DIR
            table = read_table(bank, name, schema=schema, manifest=self.table_manifest())
            self._check_segments(name, attachments=False)
            return conform_table(table, schema, f"{name} of {bank}")

        return self._cached(key, load)

    def _check_segments(self, name: str, attachments: bool) -> None:
        """Check the segment files of table `name` (or, with `attachments`, the files beside
        them: the vector index's) against the version's record; a reader that reads only some
        rows or columns (`rows`) checks nothing, as hashing a file reads all of it."""
        entry = self.table_manifest().tables.get(name)
        for segment in entry.segments if entry else []:
            path = PurePosixPath(layout.BANK_DIR, SEGMENTS_DIR, segment.file)
            files = [path.parent / a for a in segment.attachments] if attachments else [path]
            for relative in files:
                self.integrity.check_loaded(relative.as_posix())

    def _cached(self, key: str, load: Callable[[], _T]) -> _T:
        if key not in self._cache:
            self._cache[key] = load()
        return self._cache[key]

    def _existing(self, relative: str) -> Path:
        path = self.root / relative
        if not path.is_file():
            raise StoreError(f"{path} is missing (was the store replaced or deleted? reopen it)")
        return path

    def _read_json(self, relative: str) -> Any:
        path = self._existing(relative)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path} is unreadable: {exc}") from exc
