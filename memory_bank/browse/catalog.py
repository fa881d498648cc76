"""One committed store version indexed for browsing: the tree by path with subtree sizes, and the
light columns of every memory (never the vectors), read once and kept for that version.

A reader limited to part of the store (an API key with a scope) browses the catalog as its
`Sight` sees it (`seen_by`): the tree pruned to the directories that lead to its memories, sizes
counted over those memories only, READMEs only where it sees every memory below, and any other
memory absent. What it sees is decided by the caller's sight (the agents' `Visibility`, the one
definition every way into the store applies); the catalog only asks it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.session.models import HistoryView
from memory_bank.store.files import readme_relative_path
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy.readme import readme_key_terms

CHUNK_COLUMNS = ("chunk_id", "document_id", "position", "text", "section")
MEMORY_COLUMNS = (
    "index",
    "chunk_id",
    "document_id",
    "source",
    "title",
    "tldr",
    "keywords",
    "path",
    "directory",
)


class Sight(Protocol):
    """What one reader sees of a store version (implemented by `agents.visibility.Visibility`)."""

    def sees_memory(self, chunk_id: str) -> bool: ...

    def sees_readme(self, directory: str) -> bool: ...

    def sees_conflict(self, older: str, newer: str) -> bool: ...

    def tree(self, root: DirectoryNode) -> DirectoryNode: ...

    def standing(self, status: str, superseded_by: str | None) -> tuple[str, str | None]: ...

    def history(
        self, entries: list[HistoryView], replaced_by: Iterable[str]
    ) -> list[HistoryView]: ...


class StoreCatalog:
    """The tree and the memories of one store version, looked up by path or chunk id."""

    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.sight: Sight | None = None  # None: the whole store
        self._index_tree(reader.tree())
        self._memories = _read_columns(reader, "memories", MEMORY_COLUMNS)
        self._chunk_ids = self._memories.column("chunk_id").to_pylist()
        self._row_of_chunk = {chunk_id: row for row, chunk_id in enumerate(self._chunk_ids)}
        # Read on first use, then kept, and shared with the views `seen_by` makes: the rows by
        # path, and the chunk table with its rows by chunk id.
        self._lazy: dict[str, Any] = {}

    def _index_tree(self, tree: DirectoryNode) -> None:
        self.tree = tree
        self._nodes = {node.path: node for node in tree.iter_nodes()}
        self._sizes: dict[str, int] = {}
        _count_memories(tree, self._sizes)

    def seen_by(self, sight: Sight) -> StoreCatalog:
        """This catalog as `sight` sees it (see the module docstring); its tables are shared."""
        seen = copy.copy(self)
        seen.sight = sight
        seen._index_tree(sight.tree(self.tree))
        return seen

    @property
    def root(self) -> Path:
        return self.reader.root

    @property
    def store_version(self) -> str:
        return self.reader.store_version

    # --- the tree ---------------------------------------------------------------------------

    def directory(self, path: str) -> DirectoryNode | None:
        return self._nodes.get(normalized_directory(path))

    def memory_count(self, path: str) -> int:
        """Memories in the subtree of directory `path`."""
        return self._sizes.get(path, 0)

    def readme_shown(self, path: str) -> bool:
        """Whether this catalog's reader may read directory `path`'s README."""
        return self.sight is None or self.sight.sees_readme(path)

    def readme(self, path: str) -> str:
        """The README text of directory `path` ("" when the store has none for it, or when the
        reader may not read it)."""
        if not self.readme_shown(path):
            return ""
        file = self.reader.path(readme_relative_path(path))
        return file.read_text(encoding="utf-8") if file.is_file() else ""

    def visible_rows(self) -> list[int]:
        """The rows of the memories this catalog's reader sees (sizes for the store's glance)."""
        return [row for row, chunk_id in enumerate(self._chunk_ids) if self.sees(chunk_id)]

    # --- memories ---------------------------------------------------------------------------

    def sees(self, node_id: str) -> bool:
        """Whether this catalog's reader sees the memory (or Query Graph node) `node_id`."""
        return self.sight is None or self.sight.sees_memory(node_id)

    def sees_conflict(self, older: str, newer: str) -> bool:
        return self.sight is None or self.sight.sees_conflict(older, newer)

    def row_of(self, ref: str) -> int | None:
        """The row of a memory named by its chunk id or its file's store-relative path (None
        when there is none the reader sees)."""
        row = self._row_of_chunk.get(ref)
        if row is None:
            if "row_of_path" not in self._lazy:
                paths = self._memories.column("path").to_pylist()
                self._lazy["row_of_path"] = {path: row for row, path in enumerate(paths)}
            row = self._lazy["row_of_path"].get(ref.lstrip("/"))
        return row if row is not None and self.sees(self._chunk_ids[row]) else None

    def memory_rows(self, rows: Sequence[int]) -> list[dict[str, Any]]:
        """The light columns of memory rows (row i is memory index i)."""
        if not rows:
            return []
        return self._memories.take(pa.array(rows, type=pa.int64())).to_pylist()

    def memory(self, ref: str) -> dict[str, Any] | None:
        row = self.row_of(ref)
        return None if row is None else self.memory_rows([row])[0]

    def chunk(self, chunk_id: str) -> dict[str, Any] | None:
        """The chunk row behind a memory: its raw text, position and section. The chunk table
        is read whole once (as Arrow columns: about the size of the text), since finding one
        row in it costs as much as reading it all."""
        if "chunks" not in self._lazy:  # two first calls at once both read it; either is right
            table = _read_columns(self.reader, "chunks", CHUNK_COLUMNS)
            ids = table.column("chunk_id").to_pylist()
            self._lazy["chunks"] = (table, {chunk: row for row, chunk in enumerate(ids)})
        table, rows = self._lazy["chunks"]
        row = rows.get(chunk_id)
        return None if row is None else table.slice(row, 1).to_pylist()[0]

    def document(self, document_id: str) -> dict[str, Any] | None:
        table = self.reader.rows(
            "documents", ["document_id", "source", "title", "kind"], ("document_id", [document_id])
        )
        return table.to_pylist()[0] if table.num_rows else None


def normalized_directory(path: str) -> str:
    """ "a/b", "/a/b/" and "/a/b" all name the tree path "/a/b"; "" names the root."""
    parts = [part for part in path.split("/") if part]
    return "/" + "/".join(parts)


def breadcrumb_paths(path: str) -> list[str]:
    """ "/a/b" -> ["/", "/a", "/a/b"]."""
    parts = [part for part in path.split("/") if part]
    return ["/"] + ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def readme_parts(text: str) -> tuple[str, str, list[str]]:
    """A README's heading, its text before the first "##" section, and its key terms."""
    lines = text.strip().split("\n")
    title = lines[0].removeprefix("# ").strip() if lines and lines[0].startswith("# ") else ""
    body = "\n".join(lines[1:] if title else lines)
    intro = body.split("\n## ", 1)[0].strip()
    terms = [term.strip() for term in readme_key_terms(text).split(",") if term.strip()]
    return title, intro, terms


def _count_memories(node: DirectoryNode, sizes: dict[str, int]) -> int:
    total = len(node.chunk_indices) + sum(_count_memories(c, sizes) for c in node.children)
    sizes[node.path] = total
    return total


def _read_columns(reader: StoreReader, table: str, columns: Sequence[str]) -> pa.Table:
    try:
        return reader.rows(table, list(columns))
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"store table {table} of {reader.root} is unreadable: {exc}") from exc
