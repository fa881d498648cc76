"""The query replicas: the work that needs the embedding model, behind the ingress.

Each replica holds one warmed-up `QueryService` (model, indexes, grep corpus loaded once) and
runs every domain call on its `DomainThread`, which embeds the questions waiting together in
one forward pass (`HybridSearch.encode_queries`) before the first of their answers; each answer
then finds its question's vector cached. Requests in flight (`serve.max_ongoing_requests`) wait
on the replica's event loop, where waiting is cheap, so more load means bigger batches and more
answers per second.
"""

from pathlib import Path
from typing import Any

from ray import serve

from actors.domain_thread import DomainThread
from actors.loopback import keep_replica_port_on_loopback
from actors.runtime import worker_llm
from actors.serve_api import (
    Consolidated,
    QueryRequest,
    RecallRequest,
    SearchRequest,
    TurnRequest,
)
from memory_bank.config import AppConfig
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.index.scope import SearchScope
from memory_bank.schemas import ChatResult, SearchHit

# A query embeds a handful of words: one thread (torch's or ONNX Runtime's) is as fast as two
# for that and leaves the other cores to the Serve proxy, the ingress and other replicas.
REPLICA_EMBEDDING_THREADS = 1
# Search modes that embed the query (bm25 and tree do not).
_EMBEDDING_MODES = frozenset({"hybrid", "vector"})


@serve.deployment(name="MemoryBank", ray_actor_options={"num_cpus": 1})
class MemoryBankModel:
    """One query replica over an absolute store path."""

    def __init__(self, store: str, config: dict[str, Any]) -> None:
        from memory_bank.app.bank import MemoryBank
        from memory_bank.app.service import QueryService

        keep_replica_port_on_loopback()
        settings = AppConfig.model_validate(config)
        embedding = settings.embedding.model_copy(update={"num_threads": REPLICA_EMBEDDING_THREADS})
        settings = settings.model_copy(update={"embedding": embedding})
        llm = worker_llm(settings.llm)
        self._service = QueryService(Path(store), settings, llm=llm)
        self._service.warm_up()  # the model, every index and the grep corpus, before any traffic
        # No gc tuning here: once __init__ returns, Serve runs gc.collect() and gc.freeze()
        # (RAY_SERVE_FREEZE_GC_ON_STARTUP, on by default), so the many objects loaded above are
        # never traversed again and the collector costs next to nothing under load
        # (docs/benchmarks.md).
        # Evicted turns reach the store by the same add as any other source, embedded by the
        # replica's own model.
        writer = MemoryBank(Path(store), config=settings, embedder=self._service.embedder, llm=llm)
        self._conversations = self._service.conversations(lambda files: writer.add(files=files))
        self._thread = DomainThread(self._service.encode_queries, settings.serve.batch_size)

    async def query(self, request: QueryRequest) -> ChatResult:
        scope = SearchScope(documents=tuple(request.within), directory=request.under)
        if request.mode == "research":
            return await self._thread.run_embedded(
                request.question,
                self._service.research,
                request.question,
                max_iterations=request.max_iterations,
                scope=scope,
            )
        return await self._thread.run_embedded(
            request.question,
            self._service.ask,
            request.question,
            max_iterations=request.max_iterations,
            system_prompt=request.system_prompt,
            scope=scope,
        )

    async def search(self, request: SearchRequest) -> list[SearchHit]:
        search = (self._service.search, request.query)
        scope = SearchScope(documents=tuple(request.within), directory=request.under)
        options = {"top_k": request.top_k, "mode": request.mode, "scope": scope}
        if request.mode in _EMBEDDING_MODES and request.query.strip():
            return await self._thread.run_embedded(request.query, *search, **options)
        return await self._thread.run(*search, **options)

    async def add_turn(self, conversation_id: str, request: TurnRequest) -> TurnRecord:
        return await self._thread.run(
            lambda: self._conversations.get(conversation_id).add_turn(
                request.speaker, request.text, request.timestamp
            )
        )

    async def recall(self, conversation_id: str, request: RecallRequest) -> RecallResult:
        return await self._thread.run(
            lambda: self._conversations.get(conversation_id).recall(
                request.query, max_tokens=request.max_tokens
            )
        )

    async def consolidate(self, conversation_id: str) -> Consolidated:
        consolidated = await self._thread.run(
            lambda: self._conversations.get(conversation_id).consolidate()
        )
        return Consolidated(consolidated=consolidated)

    async def conversation(self, conversation_id: str) -> ConversationInfo:
        return await self._thread.run(lambda: self._conversations.get(conversation_id).info())

    async def conversation_ids(self) -> list[str]:
        return await self._thread.run(self._conversations.ids)

    def batch_sizes(self) -> dict[int, int]:
        """Questions per embedding batch -> batches, since this replica started."""
        return dict(self._thread.batch_sizes)

    def most_in_flight(self) -> int:
        """The most requests this replica held at once (queued on its domain thread or running
        there), since it started: Serve lets in at most `serve.max_ongoing_requests`."""
        return self._thread.most_in_flight

    def __del__(self) -> None:
        self._thread.shutdown()
