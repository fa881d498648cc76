"""`StoreBrowser`: the browsing views over the live version of one store, read-only.

A commit moves the store link to a new version directory; the next call opens that one (its
catalog is built once per version). The Query Graph is read as the query side reads it
(`GraphView`: the live snapshot and the checkpoints after it, no lock), so a page never waits
for a writer, an ingest's graph step included.

Each view takes the reader's `scope`: None for the whole store, else what the browser's `see`
(given by the edge that knows the readers: the agents' `Visibility.of`) works out against the
live version, kept per version and scope, so a commit never mixes one version's tree with
another's visible set.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

from memory_bank.browse.catalog import Sight, StoreCatalog
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

SCOPED_CATALOGS_KEPT = 16

# A reader's sight of one opened store version, from its scope.
See = Callable[[Hashable, StoreReader], Sight]


class StoreBrowser:
    def __init__(self, store: str | Path, alpha: float = 0.5, see: See | None = None) -> None:
        self.store = Path(store)
        self.location = StoreLocation(store)
        self._see = see
        self._graph_view = GraphView(store, alpha)
        self._catalog: StoreCatalog | None = None
        self._scoped: OrderedDict[tuple[Path, Hashable], StoreCatalog] = OrderedDict()
        self._lock = threading.Lock()
        # A refresh applies new checkpoints to the graph in place: pages that read the graph
        # are built one at a time (a few milliseconds each), never while it changes.
        self._graph_lock = threading.Lock()

    def catalog(self, scope: Hashable | None = None) -> StoreCatalog:
        """The live version's catalog (built on the first call after a commit), as a reader
        with `scope` sees it."""
        live = self.store.resolve()
        if not is_store(live):
            raise StoreError(f"no memory store at {self.store} (run `memory-bank ingest` first)")
        with self._lock:
            if self._catalog is None or self._catalog.root != live:
                self._catalog = StoreCatalog(StoreReader(live))
                self._scoped.clear()
            catalog = self._catalog
            if scope is None:
                return catalog
            seen = self._scoped.get((live, scope))
        if seen is None:
            if self._see is None:
                raise StoreError("this browser was given no way to limit a view to a scope")
            seen = catalog.seen_by(self._see(scope, catalog.reader))
            with self._lock:
                self._scoped[(live, scope)] = seen
                while len(self._scoped) > SCOPED_CATALOGS_KEPT:
                    self._scoped.popitem(last=False)
        return seen

    def _graph(self) -> GraphState:
        """The graph, refreshed; the caller holds `_graph_lock` while it reads it."""
        self._graph_view.refresh()
        return self._graph_view.state

    def directory(
        self, path: str, offset: int = 0, limit: int = 100, scope: Hashable | None = None
    ) -> DirectoryPage | None:
        return directory_page(self.catalog(scope), path, offset, limit)

    def memory(self, ref: str, scope: Hashable | None = None) -> MemoryPage | None:
        catalog = self.catalog(scope)
        with self._graph_lock:
            return memory_page(catalog, self._graph(), ref)

    def status(self, scope: Hashable | None = None) -> StoreStatus:
        catalog = self.catalog(scope)
        with self._graph_lock:
            return store_status(self.location, catalog, self._graph())

    def conversations(self, prefix: str = "") -> list[ConversationSummary]:
        return conversation_list(self.store, prefix)

    def conversation(
        self, conversation_id: str, limit: int = 50, prefix: str = ""
    ) -> ConversationPage | None:
        return conversation_page(self.store, conversation_id, limit, prefix)
