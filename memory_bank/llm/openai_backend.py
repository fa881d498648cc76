"""The `openai` backend: every role through an OpenAI-compatible endpoint (`client.py`).

split: the model picks the cuts of overlong sections among the chunker's boundaries
(`openai_split.py`). memorize: several chunks per request; the model writes title, memory,
tldr, keywords and context, the chunk's metadata (ids, offsets, source) comes from the pipeline
as in the offline role. A batch whose replies stay invalid after the repairs keeps the offline
(extractive) memories, counted as fallbacks. organize and place: `openai_taxonomy.py` (per
subtree above `taxonomy.coarse_threshold` memories; the model chooses among the closest leaves
or a new directory). readme: the model writes the opening paragraphs of several directories per
request; the listing stays generated, so every file and subdirectory is always listed.
Independent requests (memorize, README and planning batches) overlap, up to `max_concurrency`
in flight. navigate: a tool-calling agent (`agent.py`); answer: a generated answer from the
evidence it read (`openai_answer.py`).

The backend travels to Ray tasks as its settings (`__reduce__`): a task makes its own client
and ledger, and returns its usage with its result.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from memory_bank.config import LLMConfig, ResearchConfig, RetrievalConfig
from memory_bank.errors import LLMError
from memory_bank.index.embedding import TextEncoder
from memory_bank.llm.instructions import role_instructions
from memory_bank.llm.ledger import Ledger
from memory_bank.llm.offline import OfflineBackend
from memory_bank.llm.roles import (
    AnswerRequest,
    AnswerResult,
    MemorizeRequest,
    MemorizeResult,
    Navigator,
    OrganizeRequest,
    OrganizeResult,
    PlaceRequest,
    PlaceResult,
    ReadmeRequest,
    ReadmeResult,
    Researcher,
    SplitRequest,
    SplitResult,
)
from memory_bank.schemas import MemorizedChunk
from memory_bank.store.files import sanitize_name
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.planner import memory_count


class _Memory(BaseModel):
    id: int
    title: str
    memory: str
    tldr: str
    keywords: list[str] = Field(default_factory=list)
    context: str = ""


class _MemorizeReply(BaseModel):
    memories: list[_Memory]


class _Summary(BaseModel):
    path: str
    summary: str


class _ReadmeReply(BaseModel):
    summaries: list[_Summary]


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.offline = OfflineBackend()
        self.ledger = Ledger(config)
        self._client = None
        self._client_lock = threading.Lock()

    def __reduce__(self):
        # Pickled (for a Ray task) as its settings: a client, its locks and its ledger stay here.
        return (OpenAIBackend, (self.config,))

    def fresh(self) -> OpenAIBackend:
        """A backend of the same settings with a ledger of its own."""
        return OpenAIBackend(self.config)

    @property
    def client(self):
        from memory_bank.llm.client import ChatClient

        with self._client_lock:
            if self._client is None:
                self._client = ChatClient(self.config, self.ledger)
            return self._client

    @property
    def build_model(self) -> tuple[str, float]:
        config = self.config
        temperature = config.build_temperature
        return config.build_model or config.model, (
            config.temperature if temperature is None else temperature
        )

    @property
    def chat_model(self) -> tuple[str, float]:
        config = self.config
        temperature = config.chat_temperature
        return config.chat_model or config.model, (
            config.temperature if temperature is None else temperature
        )

    def ask(
        self,
        role: str,
        payload: Any,
        reply_model: type[BaseModel],
        check: Any = None,
        attempts: int | None = None,
    ) -> Any:
        """One structured request of a store-building role (the build model)."""
        model, temperature = self.build_model
        return self.client.structured(
            role, role_instructions(role), payload, reply_model, model, temperature, check, attempts
        )

    def overlapped(self, function: Any, items: list[Any]) -> list[Any]:
        """`function` over `items` with up to `max_concurrency` requests in flight (the
        endpoint's latency overlaps; the client's own limit still holds); results in order."""
        if len(items) <= 1:
            return [function(item) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(items))) as pool:
            return list(pool.map(function, items))

    # --- split --------------------------------------------------------------------------------

    def split(self, request: SplitRequest) -> SplitResult:
        from memory_bank.llm.openai_split import split_sections

        return split_sections(request, self.ask, self.ledger, self.config.split_max_tokens)

    # --- memorize -----------------------------------------------------------------------------

    def memorize(self, request: MemorizeRequest) -> MemorizeResult:
        # The offline memories carry the metadata and are the fallback of a failed batch.
        base = self.offline.memorize(request).memories
        size = self.config.memorize_batch
        batches = [
            (base[start : start + size], request.chunks[start : start + size])
            for start in range(0, len(base), size)
        ]
        done = self.overlapped(lambda batch: self._memorize_batch(*batch), batches)
        return MemorizeResult(memories=[memory for batch in done for memory in batch])

    def _memorize_batch(
        self, base: list[MemorizedChunk], chunks: list[Any]
    ) -> list[MemorizedChunk]:
        ids = list(range(len(base)))
        payload = {
            "chunks": [
                {"id": i, "source": chunk.source, "text": chunk.text}
                for i, chunk in zip(ids, chunks, strict=True)
            ]
        }

        def check(reply: _MemorizeReply) -> list[str]:
            got = [memory.id for memory in reply.memories]
            return (
                [] if sorted(got) == ids else [f"expected one memory per chunk id {ids}, got {got}"]
            )

        try:
            reply = self.ask("memorize", payload, _MemorizeReply, check)
        except LLMError:
            self.ledger.count("memorize", "fallbacks")
            return base
        written = {memory.id: memory for memory in reply.memories}
        return [
            memory.model_copy(
                update={
                    "title": sanitize_name(written[i].title, fallback=memory.title),
                    "memory": written[i].memory.strip() or memory.memory,
                    "tldr": written[i].tldr.strip() or memory.tldr,
                    "keywords": [k.strip() for k in written[i].keywords if k.strip()][:8]
                    or memory.keywords,
                    "context": written[i].context.strip() or memory.context,
                }
            )
            for i, memory in zip(ids, base, strict=True)
        ]

    # --- organize and place -------------------------------------------------------------------

    def organize(
        self, request: OrganizeRequest, map_groups: TaskMap = run_serially
    ) -> OrganizeResult:
        from memory_bank.llm.openai_taxonomy import organize_with_model

        return organize_with_model(self, request, map_groups)

    def place(self, request: PlaceRequest) -> PlaceResult:
        from memory_bank.llm.openai_taxonomy import place_with_model

        return place_with_model(self, request)

    # --- readme -------------------------------------------------------------------------------

    def readme(self, request: ReadmeRequest) -> ReadmeResult:
        return self.readmes([request])[0]

    def readmes(self, requests: Sequence[ReadmeRequest]) -> list[ReadmeResult]:
        """`readme_batch` directories per request, the requests overlapped; the model writes
        each opening paragraph, the listing stays generated (every file and subdirectory is
        always listed). A batch that fails keeps the offline text."""
        size = self.config.readme_batch
        batches = [list(requests[start : start + size]) for start in range(0, len(requests), size)]
        done = self.overlapped(self._readme_batch, batches)
        return [result for batch in done for result in batch]

    def _readme_batch(self, requests: list[ReadmeRequest]) -> list[ReadmeResult]:
        generated = [self.offline.readme(request).text for request in requests]
        payload = {
            "directories": [
                {
                    "path": request.node.path,
                    "description": request.node.description,
                    "subdirectories": [
                        {
                            "name": child.name,
                            "description": child.description,
                            "memories": memory_count(child),
                        }
                        for child in request.child_dirs
                    ],
                    "files": [
                        {"name": entry.name, "title": entry.title, "summary": entry.tldr}
                        for entry in request.files
                    ],
                }
                for request in requests
            ]
        }
        paths = [request.node.path for request in requests]

        def check(reply: _ReadmeReply) -> list[str]:
            got = [summary.path for summary in reply.summaries]
            return (
                []
                if sorted(got) == sorted(paths)
                else [f"expected one summary per path {paths}, got {got}"]
            )

        try:
            reply = self.ask("readme", payload, _ReadmeReply, check)
        except LLMError:
            self.ledger.count("readme", "fallbacks")
            return [ReadmeResult(text=text) for text in generated]
        summaries = {summary.path: " ".join(summary.summary.split()) for summary in reply.summaries}
        results = []
        for path, text in zip(paths, generated, strict=True):
            lines = text.split("\n")
            summary = summaries.get(path)
            # Keep the title and the generated listing; the model's paragraph replaces the opening.
            results.append(
                ReadmeResult(
                    text="\n".join([lines[0], "", summary, *lines[3:]]) if summary else text
                )
            )
        return results

    # --- navigate and answer ------------------------------------------------------------------

    def answer(self, request: AnswerRequest) -> AnswerResult:
        from memory_bank.llm.openai_answer import answer_with_model

        return answer_with_model(self, request)

    # --- the session roles (openai_session.py) -----------------------------------------------

    def classify(self, request: Any) -> Any:
        from memory_bank.llm import openai_session

        return openai_session.classify(self, request)

    def structure(self, request: Any) -> Any:
        from memory_bank.llm import openai_session

        return openai_session.structure(self, request)

    def analyze(self, request: Any) -> Any:
        from memory_bank.llm import openai_session

        return openai_session.analyze(self, request)

    def integrate(self, request: Any) -> Any:
        from memory_bank.llm import openai_session

        return openai_session.integrate(self, request)

    def plan(self, request: Any) -> Any:
        from memory_bank.llm import openai_session

        return openai_session.plan(self, request)

    def navigator(
        self, tools: Any, search: Any, embedder: TextEncoder | None, config: RetrievalConfig
    ) -> Navigator:
        from memory_bank.llm.agent import ToolCallingNavigator

        model, temperature = self.chat_model
        return ToolCallingNavigator(
            self.client, tools, config, model, temperature, answer=self.answer, search=search
        )

    # --- research -------------------------------------------------------------------------------

    def researcher(
        self, search: Any, config: ResearchConfig, retrieval: RetrievalConfig
    ) -> Researcher:
        from memory_bank.llm.openai_research import LLMResearcher

        return LLMResearcher(self, search, config, retrieval)
