"""Answering and searching one store: the object the Python API and each Serve replica hold.

It opens the store read-only once and reopens it when the store version on disk changes
(a new ingest swapped in a new store), keeping the loaded embedding model across reloads.
"""

from __future__ import annotations

import threading
from pathlib import Path

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.index.embedding import Embedder
from memory_bank.index.retrieval import Retriever
from memory_bank.navigation import NavigationAgent
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.tools import StoreTools


class _OpenStore:
    """Everything opened for one store version."""

    def __init__(self, store: Path, config: AppConfig, embedder: Embedder) -> None:
        self.reader = StoreReader(store)
        self.retriever = Retriever(self.reader, embedder, config.retrieval)
        self.tools = StoreTools(store, reader=self.reader, retriever=self.retriever)
        self.agent = NavigationAgent(self.tools, self.retriever, embedder, config.retrieval)


class QueryService:
    def __init__(self, store: str | Path, config: AppConfig, embedder: Embedder | None = None) -> None:
        self.store = Path(store)
        self.config = config
        self.embedder = embedder or Embedder(config.embedding)
        self._open: _OpenStore | None = None
        self._lock = threading.Lock()

    @property
    def store_version(self) -> str:
        return self._current().reader.store_version

    def _current(self) -> _OpenStore:
        """The open store, reopened when the version on disk is not the one loaded."""
        with self._lock:
            if not is_store(self.store):
                raise StoreError(f"no memory store at {self.store} (run `memory-bank ingest` first)")
            on_disk = StoreReader(self.store).store_version
            if self._open is None or self._open.reader.store_version != on_disk:
                self._open = _OpenStore(self.store, self.config, self.embedder)
            return self._open

    def warm_up(self) -> None:
        """Load the model and the indexes now rather than on the first request."""
        opened = self._current()
        opened.retriever.search("warm up", top_k=1, mode="hybrid")

    def ask(self, question: str, max_iterations: int | None = None) -> ChatResult:
        iterations = max_iterations or self.config.retrieval.max_iterations
        return self._current().agent.request(question, max_iterations=iterations)

    def search(self, query: str, top_k: int = 5, mode: str = "hybrid") -> list[SearchHit]:
        return self._current().retriever.search(query, top_k=top_k, mode=mode)

    def tree(self) -> DirectoryNode:
        return self._current().reader.tree()
