"""`StoreBrowser`: the browsing views over the live version of one store, read-only.

A commit moves the store link to a new version directory; the next call opens that one (its
catalog is built once per version). The Query Graph is read as the query side reads it
(`GraphView`: the live snapshot and the checkpoints after it, no lock), so a page never waits
for a writer, an ingest's graph step included.
"""

from __future__ import annotations

import threading
from pathlib import Path

from memory_bank.browse.catalog import StoreCatalog
from memory_bank.browse.conversation import conversation_list, conversation_page
from memory_bank.browse.directory import directory_page
from memory_bank.browse.memory import memory_page
from memory_bank.browse.models import (
    ConversationPage,
    ConversationSummary,
    DirectoryPage,
    MemoryPage,
    StoreStatus,
)
from memory_bank.browse.status import store_status
from memory_bank.errors import StoreError
from memory_bank.graph.persist import GraphState
from memory_bank.graph.view import GraphView
from memory_bank.store.layout import is_store
from memory_bank.store.location import StoreLocation
from memory_bank.store.reader import StoreReader


class StoreBrowser:
    def __init__(self, store: str | Path, alpha: float = 0.5) -> None:
        self.store = Path(store)
        self.location = StoreLocation(store)
        self._graph_view = GraphView(store, alpha)
        self._catalog: StoreCatalog | None = None
        self._lock = threading.Lock()
        # A refresh applies new checkpoints to the graph in place: pages that read the graph
        # are built one at a time (a few milliseconds each), never while it changes.
        self._graph_lock = threading.Lock()

    def catalog(self) -> StoreCatalog:
        """The live version's catalog (built on the first call after a commit)."""
        live = self.store.resolve()
        if not is_store(live):
            raise StoreError(f"no memory store at {self.store} (run `memory-bank ingest` first)")
        with self._lock:
            if self._catalog is None or self._catalog.root != live:
                self._catalog = StoreCatalog(StoreReader(live))
            return self._catalog

    def _graph(self) -> GraphState:
        """The graph, refreshed; the caller holds `_graph_lock` while it reads it."""
        self._graph_view.refresh()
        return self._graph_view.state

    def directory(self, path: str, offset: int = 0, limit: int = 100) -> DirectoryPage | None:
        return directory_page(self.catalog(), path, offset, limit)

    def memory(self, ref: str) -> MemoryPage | None:
        catalog = self.catalog()
        with self._graph_lock:
            return memory_page(catalog, self._graph(), ref)

    def status(self) -> StoreStatus:
        catalog = self.catalog()
        with self._graph_lock:
            return store_status(self.location, catalog, self._graph())

    def conversations(self) -> list[ConversationSummary]:
        return conversation_list(self.store)

    def conversation(self, conversation_id: str, limit: int = 50) -> ConversationPage | None:
        return conversation_page(self.store, conversation_id, limit)
