"""Read-only access to a committed store, loading each part on first use and keeping it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import faiss
import numpy as np
import pyarrow as pa
from pydantic import ValidationError

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
from memory_bank.store.atomic import safe_join
from memory_bank.store.integrity import StoreIntegrity
from memory_bank.store.tables import (
    CHUNKS_SCHEMA,
    DOCUMENTS_SCHEMA,
    EMBEDDING_DIM,
    MEMORIES_SCHEMA,
    READMES_SCHEMA,
    SENTENCES_SCHEMA,
    embeddings_to_numpy,
    read_faiss_index,
    read_parquet,
)

_T = TypeVar("_T")


class StoreReader:
    """One committed store, opened read-only.

    Opening checks that every required file is there and that the meta and the manifest agree
    on the store version; tables, vectors and the faiss index load lazily and are cached. If the
    store is replaced while a reader is open, later loads fail with StoreError: reopen it.
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

    def documents(self) -> pa.Table:
        return self._table("documents", layout.DOCUMENTS_FILE, DOCUMENTS_SCHEMA)

    def chunks(self) -> pa.Table:
        return self._table("chunks", layout.CHUNKS_FILE, CHUNKS_SCHEMA)

    def memories(self) -> pa.Table:
        """memories.parquet; row i is memory index i."""

        def load() -> pa.Table:
            table = self._table("memories_raw", layout.MEMORIES_FILE, MEMORIES_SCHEMA)
            if table.column("index").to_pylist() != list(range(table.num_rows)):
                path = self.root / layout.MEMORIES_FILE
                raise StoreError(f"{path}: row numbers and memory indices differ")
            return table

        return self._cached("memories", load)

    def sentences(self) -> pa.Table:
        return self._table("sentences", layout.SENTENCES_FILE, SENTENCES_SCHEMA)

    def memory_vectors(self) -> np.ndarray:
        """(n, 384) float32, read-only, row i = memory index i."""
        return self._cached("memory_vectors", lambda: embeddings_to_numpy(self.memories()))

    def sentence_vectors(self) -> np.ndarray:
        """(k, 384) float32, read-only, row j = row j of `sentences()`."""
        return self._cached("sentence_vectors", lambda: embeddings_to_numpy(self.sentences()))

    def readmes(self) -> pa.Table | None:
        """readmes.parquet (directory, text, embedding; sorted by directory), or None for a
        store written without README vectors."""

        def load() -> pa.Table | None:
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

    def faiss_index(self) -> faiss.Index:
        def load() -> faiss.Index:
            self.integrity.check_loaded(layout.FAISS_FILE)
            index = read_faiss_index(self.root / layout.FAISS_FILE)
            if index.ntotal != self.memories().num_rows:
                raise StoreError(
                    f"store {self.root} is inconsistent: faiss has {index.ntotal} vectors, "
                    f"memories.parquet {self.memories().num_rows} rows"
                )
            return index

        return self._cached("faiss_index", load)

    def chunk_path(self, index: int) -> str:
        """Store-relative path of memory `index`'s chunk file ("dir/sub/title.md")."""
        paths: list[str] = self._cached(
            "chunk_paths", lambda: self.memories().column("path").to_pylist()
        )
        if not 0 <= index < len(paths):
            raise StoreError(f"store {self.root} has no memory with index {index}")
        return paths[index]

    def _table(self, key: str, relative: str, schema: pa.Schema) -> pa.Table:
        def load() -> pa.Table:
            table = read_parquet(self._existing(relative), schema)
            self.integrity.check_loaded(relative)
            return table

        return self._cached(key, load)

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
