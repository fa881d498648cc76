"""`MemoryBank`: the Python API over one store.

Ingests run on an executor the caller chooses: in-process by default, or any factory such as
`pipeline.executor.RayExecutor` (the Ray layer is never imported here). Queries run in-process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memory_bank.config import AppConfig
from memory_bank.conversation.memory import ConversationMemory, Conversations
from memory_bank.errors import StoreError
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.executor import Executor, LocalExecutor
from memory_bank.ingest.progress import ProgressSink
from memory_bank.ingest.runner import ExecutorFactory, IngestRunner
from memory_bank.schemas import ChatResult, CommitResult, DirectoryNode, IngestSummary, SearchHit

if TYPE_CHECKING:
    from memory_bank.store.verify import VerifyReport


class MemoryBank:
    """A memory store on disk.

    `executor` makes the executor an ingest runs on from the config: None runs every stage in
    this process; `pipeline.executor.RayExecutor` runs the ingest as a Ray pipeline (joining a
    running Ray session, `config.ray.address` / `RAY_ADDRESS`, or starting a local one).
    """

    def __init__(
        self,
        store: str | Path,
        config: AppConfig | None = None,
        executor: ExecutorFactory | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        """`embedder`: an embedding model to share (else one is loaded on first use)."""
        self.store = Path(store)
        self.config = config or AppConfig()
        self._executor_factory = executor
        self._query = None
        self._embedder: Embedder | None = embedder
        self._conversations: Conversations | None = None

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

    def rebuild(self, progress: ProgressSink | None = None) -> IngestSummary:
        """Plan the whole tree anew from the stored memories and vectors (no re-memorizing,
        unless the store was made with another memory recipe) and rewrite the store; what a
        scheduled rebuild runs after many incremental adds."""
        from memory_bank.store.layout import is_store

        if not is_store(self.store):
            raise StoreError(f"no memory store at {self.store} to rebuild")
        return self._runner().run(self.store, progress=progress, replan=True)

    def remove(self, sources: Sequence[str]) -> CommitResult:
        """Remove stored documents (by source path as ingested, a directory holding them, or
        document id): their memories, files, vectors and index entries; other paths stay."""
        return self._runner().remove(self.store, list(sources))

    def request(
        self, question: str, max_iterations: int | None = None, system_prompt: str | None = None
    ) -> ChatResult:
        """Answer `question` from the store (at most `max_iterations` tool calls; default
        `retrieval.max_iterations`); `system_prompt` adds instructions for an LLM backend."""
        return self._query_service().ask(
            question, max_iterations=max_iterations, system_prompt=system_prompt
        )

    def research(self, question: str, max_iterations: int | None = None) -> ChatResult:
        """Answer a multi-hop `question` by iterative research: plan, search, integrate the
        evidence, reflect on what is missing and search again, for at most `max_iterations`
        rounds (default `research.max_iterations`). The trajectory shows each round."""
        return self._query_service().research(question, max_iterations=max_iterations)

    def conversation(self, conversation_id: str) -> ConversationMemory:
        """A live conversation kept beside this store (created on first use): `add_turn`,
        `recall`, `consolidate` (the evicted turns into the store by `add`), `info`."""
        if self._conversations is None:
            self._conversations = Conversations(
                self.store,
                self._shared_embedder(),
                self.config.conversation,
                add_to_store=lambda files: self.add(files=files),
            )
        return self._conversations.get(conversation_id)

    def search(self, query: str, top_k: int | None = None, mode: str = "hybrid") -> list[SearchHit]:
        """The best `top_k` hits (default `retrieval.top_k`) for `query`, best first."""
        return self._query_service().search(query, top_k=top_k, mode=mode)

    def tree(self) -> DirectoryNode:
        from memory_bank.store.reader import StoreReader

        return StoreReader(self.store).tree()

    def verify(self) -> VerifyReport:
        """Check every invariant of the store (`memory_bank.store.verify`), against this
        bank's taxonomy config; a broken store is a report listing its problems, not an error."""
        from memory_bank.store.verify import verify_store

        return verify_store(self.store, self.config.taxonomy)

    def _runner(self) -> IngestRunner:
        executor: Executor
        if self._executor_factory is None:
            executor = LocalExecutor(self.config, self._shared_embedder())
        else:
            executor = self._executor_factory(self.config)
        return IngestRunner(self.config, executor)

    def _shared_embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.config.embedding)
        return self._embedder

    def _query_service(self):
        if self._query is None:
            from memory_bank.query.service import QueryService

            self._query = QueryService(self.store, self.config, self._shared_embedder())
        return self._query
