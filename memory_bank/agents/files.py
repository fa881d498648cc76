"""The store's files as agents read them: listings, files, grep, a memory by id, resources.

They are read from the live version on disk (the store path is a link each commit moves), with
one `StoreTools` kept per version, and filtered by the caller's `Visibility`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from pydantic import BaseModel

from memory_bank.agents.visibility import Visibility, relative
from memory_bank.errors import StoreError, ToolError
from memory_bank.query.tools import StoreTools
from memory_bank.store.files import readme_relative_path
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader

MAX_LISTED_RESOURCES = 2000
RESOURCE_SCHEME = "memory"


class Fetched(BaseModel):
    """One memory (or README) in full: what `fetch` returns for an id a search gave."""

    id: str
    title: str
    path: str
    uri: str
    source: str = ""
    memory: str  # the memory file: frontmatter and memory text
    text: str  # the raw passage it was made from (a README: the README itself)


class ResourceInfo(BaseModel):
    uri: str
    name: str
    description: str
    mime_type: str = "text/markdown"


def resource_uri(path: str) -> str:
    """`memory:///a/b/x.md` for the store path `a/b/x.md`."""
    return f"{RESOURCE_SCHEME}:///{relative(path)}"


class StoreFiles:
    """The live version's files of one store (see the module docstring)."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._tools: StoreTools | None = None

    def version(self) -> Path:
        version = self.store.resolve()
        if not is_store(version):
            raise StoreError(f"no memory store at {self.store} (run `memory-bank ingest` first)")
        return version

    def tools(self) -> StoreTools:
        version = self.version()
        with self._lock:
            if self._tools is None or self._tools.root != version:
                self._tools = StoreTools(version)
            return self._tools

    def fetch(self, view: Visibility, memory_id: str) -> Fetched:
        tools = self.tools()
        if memory_id.endswith(".md") or memory_id.startswith(f"{RESOURCE_SCHEME}://"):
            path = relative(memory_id.removeprefix(f"{RESOURCE_SCHEME}://"))
            view.require_file(path, "fetch")
            text = tools.cat(path)
            return Fetched(
                id=path, title=path, path=path, uri=resource_uri(path), memory=text, text=text
            )
        if not view.sees_memory(memory_id):
            raise ToolError(f"fetch: no memory with id {memory_id!r}")
        memories = tools.reader.memories().select(["chunk_id", "title", "path", "source"])
        row = next(
            (r for r in memories.to_pylist() if r["chunk_id"] == memory_id),
            None,
        )
        if row is None:
            raise ToolError(f"fetch: no memory with id {memory_id!r}")
        return Fetched(
            id=memory_id,
            title=row["title"].replace("_", " "),
            path=row["path"],
            uri=resource_uri(row["path"]),
            source=row["source"],
            memory=tools.cat(row["path"]),
            text=tools.deep_retrieval(memory_id),
        )

    def resources(self, view: Visibility) -> list[ResourceInfo]:
        reader = StoreReader(self.version())
        listed = [
            ResourceInfo(
                uri=resource_uri(readme_relative_path(node.path)),
                name=f"README of {node.path}",
                description=node.description or f"Summary of {node.path}",
            )
            for node in reader.tree().iter_nodes()
            if view.sees_file(readme_relative_path(node.path))
        ]
        for row in reader.rows("memories", ["path", "title", "tldr"]).to_pylist():
            if len(listed) >= MAX_LISTED_RESOURCES:
                break
            if view.sees_file(row["path"]):
                listed.append(
                    ResourceInfo(
                        uri=resource_uri(row["path"]),
                        name=row["title"].replace("_", " "),
                        description=row["tldr"],
                    )
                )
        return listed
