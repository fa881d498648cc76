"""`MemoryPort`: the work behind `MemoryGateway`, in-process (`local.py`) or on Ray Serve
(`actors/serve_agents.py`). It never checks permissions: the gateway does, before calling it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol

from memory_bank.agents.jobs import JobStatus, WriteRequest
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.index.scope import SearchScope
from memory_bank.schemas import ChatResult, SearchHit

SearchMode = Literal["hybrid", "bm25", "vector", "tree"]
AskMode = Literal["navigate", "research"]


class MemoryPort(Protocol):
    store: Path

    async def ask(
        self,
        question: str,
        mode: AskMode,
        max_iterations: int | None,
        system_prompt: str | None,
        scope: SearchScope | None,
    ) -> ChatResult: ...

    async def search(
        self, query: str, top_k: int | None, mode: SearchMode, scope: SearchScope | None
    ) -> list[SearchHit]: ...

    async def add_turn(
        self, conversation_id: str, speaker: str, text: str, timestamp: str | None
    ) -> TurnRecord: ...

    async def recall(
        self, conversation_id: str, query: str, max_tokens: int | None
    ) -> RecallResult: ...

    async def consolidate(self, conversation_id: str) -> int: ...

    async def conversation(self, conversation_id: str) -> ConversationInfo: ...

    async def conversation_ids(self) -> list[str]: ...

    async def graph(self, method: str, *args: Any) -> Any:
        """A call of the store's graph keeper: open_session, insight_doc, intercept,
        enhance_prompt, close, node."""

    async def submit(self, request: WriteRequest, key_id: str | None) -> JobStatus: ...

    async def job(self, job_id: str) -> JobStatus: ...

    async def jobs(self, key_id: str | None, everyone: bool) -> list[JobStatus]: ...

    async def wait(self, job_id: str, timeout: float) -> JobStatus: ...
