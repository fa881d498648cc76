"""The in-process `MemoryPort`: a `MemoryBank` in this process, for the stdio MCP server.

One agent talks to one such process, so every call runs on one thread, in order: the embedding
model must not be entered by two threads at once, and a write job (run inline, through the
store's lock like any in-process writer) simply comes before the next question.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from memory_bank.agents.jobs import JobStatus, WriteJobs, WriteRequest, jobs_directory, run_write
from memory_bank.agents.port import AskMode, SearchMode
from memory_bank.app.bank import MemoryBank
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.index.scope import SearchScope, scope_filters
from memory_bank.schemas import ChatResult, SearchHit

R = TypeVar("R")


class LocalMemory:
    """`MemoryPort` over a `MemoryBank` in this process."""

    def __init__(self, bank: MemoryBank) -> None:
        self.bank = bank
        self.store = bank.store
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory")
        self._jobs = WriteJobs(
            jobs_directory(bank.store),
            lambda request, progress: run_write(bank, request, progress),
            inline=True,
        )

    async def _run(self, call: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, functools.partial(call, *args, **kwargs))

    async def ask(
        self,
        question: str,
        mode: AskMode,
        max_iterations: int | None,
        system_prompt: str | None,
        scope: SearchScope | None,
    ) -> ChatResult:
        within, under = scope_filters(scope)
        if mode == "research":
            return await self._run(
                self.bank.research, question, max_iterations, within=within, under=under
            )
        return await self._run(
            self.bank.request, question, max_iterations, system_prompt, within=within, under=under
        )

    async def search(
        self, query: str, top_k: int | None, mode: SearchMode, scope: SearchScope | None
    ) -> list[SearchHit]:
        within, under = scope_filters(scope)
        return await self._run(self.bank.search, query, top_k, mode, within=within, under=under)

    async def add_turn(
        self, conversation_id: str, speaker: str, text: str, timestamp: str | None
    ) -> TurnRecord:
        return await self._run(
            lambda: self.bank.conversation(conversation_id).add_turn(speaker, text, timestamp)
        )

    async def recall(
        self, conversation_id: str, query: str, max_tokens: int | None
    ) -> RecallResult:
        return await self._run(
            lambda: self.bank.conversation(conversation_id).recall(query, max_tokens=max_tokens)
        )

    async def consolidate(self, conversation_id: str) -> int:
        return await self._run(lambda: self.bank.conversation(conversation_id).consolidate())

    async def conversation(self, conversation_id: str) -> ConversationInfo:
        return await self._run(lambda: self.bank.conversation(conversation_id).info())

    async def conversation_ids(self) -> list[str]:
        return await self._run(self.bank.conversation_ids)

    async def graph(self, method: str, *args: Any) -> Any:
        if method == "open_session":
            from memory_bank.app.bank import create_empty_store

            await self._run(create_empty_store, self.store, self.bank.config)
        return await self._run(getattr(self.bank.session_service(), method), *args)

    async def submit(self, request: WriteRequest, key_id: str | None) -> JobStatus:
        return await self._run(self._jobs.submit, request, key_id)

    async def job(self, job_id: str) -> JobStatus:
        return self._jobs.status(job_id)

    async def jobs(self, key_id: str | None, everyone: bool) -> list[JobStatus]:
        return self._jobs.list(key_id, everyone)

    async def wait(self, job_id: str, timeout: float) -> JobStatus:
        return await asyncio.to_thread(self._jobs.wait, job_id, timeout)

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
