"""One committed store version indexed for browsing: the tree by path with subtree sizes, and the
light columns of every memory (never the vectors), read once and kept for that version."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
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


class StoreCatalog:
    """The tree and the memories of one store version, looked up by path or chunk id."""

    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.tree = reader.tree()
        self._nodes = {node.path: node for node in self.tree.iter_nodes()}
        self._sizes: dict[str, int] = {}
        _count_memories(self.tree, self._sizes)
        self._memories = _read_columns(reader.root / layout.MEMORIES_FILE, MEMORY_COLUMNS)
        chunk_ids = self._memories.column("chunk_id").to_pylist()
        self._row_of_chunk = {chunk_id: row for row, chunk_id in enumerate(chunk_ids)}
        self._row_of_path: dict[str, int] | None = None
        # The chunk table and its rows by chunk id: read on the first memory page, then kept.
        self._chunks: tuple[pa.Table, dict[str, int]] | None = None

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

    def readme(self, path: str) -> str:
        """The README text of directory `path` ("" when the store has none for it)."""
        file = self.reader.path(readme_relative_path(path))
        return file.read_text(encoding="utf-8") if file.is_file() else ""

    # --- memories ---------------------------------------------------------------------------

    def row_of(self, ref: str) -> int | None:
        """The row of a memory named by its chunk id or its file's store-relative path."""
        row = self._row_of_chunk.get(ref)
        if row is not None:
            return row
        if self._row_of_path is None:
            paths = self._memories.column("path").to_pylist()
            self._row_of_path = {path: row for row, path in enumerate(paths)}
        return self._row_of_path.get(ref.lstrip("/"))

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
        if self._chunks is None:  # two first calls at once both read it; either result is right
            table = _read_columns(self.root / layout.CHUNKS_FILE, CHUNK_COLUMNS)
            ids = table.column("chunk_id").to_pylist()
            self._chunks = (table, {chunk: row for row, chunk in enumerate(ids)})
        table, rows = self._chunks
        row = rows.get(chunk_id)
        return None if row is None else table.slice(row, 1).to_pylist()[0]

    def document(self, document_id: str) -> dict[str, Any] | None:
        table = pq.read_table(
            self.root / layout.DOCUMENTS_FILE,
            columns=["document_id", "source", "title", "kind"],
            filters=pc.field("document_id") == document_id,
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


def _read_columns(path: Path, columns: Sequence[str]) -> pa.Table:
    try:
        return pq.read_table(path, columns=list(columns))
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"store table {path} is unreadable: {exc}") from exc
