"""`MemoryBank`: the Python API. Ingest with Ray (default) or in-process; query in-process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.progress import ProgressSink
from memory_bank.schemas import ChatResult, DirectoryNode, IngestSummary, SearchHit

if TYPE_CHECKING:
    from memory_bank.ingest import IngestRunner

Runner = Literal["ray", "local"]


class MemoryBank:
    """A memory store on disk.

    `runner="ray"` runs ingests as a Ray pipeline (joining a running Ray session, `RAY_ADDRESS`,
    or starting a local one); `runner="local"` runs every stage in this process.
    """

    def __init__(
        self, store: str | Path, config: AppConfig | None = None, runner: Runner = "ray"
    ) -> None:
        self.store = Path(store)
        self.config = config or AppConfig()
        self.runner = runner
        self._query = None
        self._embedder = None

    def add(
        self,
        files: Sequence[str | Path] | None = None,
        text: str | None = None,
        progress: ProgressSink | None = None,
    ) -> IngestSummary:
        """Ingest files/directories and/or raw text. Empty input creates nothing and raises nothing."""
        if not files and not (text and text.strip()):
            return IngestSummary(store=str(self.store), documents=0, chunks=0, directories=0)
        return self._runner().run(self.store, files, text, progress)

    def _runner(self) -> IngestRunner:
        if self.runner == "local":
            from memory_bank.ingest import LocalIngest

            return LocalIngest(self.config, self._shared_embedder())
        from pipeline.ingest import RayIngest

        return RayIngest(self.config)

    def rebuild(self, progress: ProgressSink | None = None) -> IngestSummary:
        """Plan the whole tree anew from the stored memories and vectors (no re-memorizing,
        unless the store was made with another memory recipe) and rewrite the store; what a
        scheduled rebuild runs after many incremental adds."""
        from memory_bank.store.layout import is_store

        if not is_store(self.store):
            raise StoreError(f"no memory store at {self.store} to rebuild")
        return self._runner().run(self.store, progress=progress, replan=True)

    def request(self, question: str, max_iterations: int = 10) -> ChatResult:
        return self._query_service().ask(question, max_iterations=max_iterations)

    def search(self, query: str, top_k: int = 5, mode: str = "hybrid") -> list[SearchHit]:
        return self._query_service().search(query, top_k=top_k, mode=mode)

    def tree(self) -> DirectoryNode:
        from memory_bank.store.reader import StoreReader

        return StoreReader(self.store).tree()

    def _shared_embedder(self):
        if self._embedder is None:
            from memory_bank.index.embedding import Embedder

            self._embedder = Embedder(self.config.embedding)
        return self._embedder

    def _query_service(self):
        if self._query is None:
            from memory_bank.query import QueryService

            self._query = QueryService(self.store, self.config, self._shared_embedder())
        return self._query
