"""One thread for a query replica's domain calls, which embeds the waiting questions together.

A replica's work is CPU-bound on its one core, and the embedding model's tokenizer must not be
entered by two threads at once: every domain call runs on this one thread, in arrival order.
The replica's event loop keeps many requests in flight (`serve.max_ongoing_requests`), and
what that buys is batching: a question's call is queued together with its text, and when the
thread reaches a call whose question is not embedded yet, it first embeds every question
waiting at that moment (up to `max_batch`) in one forward pass; the calls behind it find their
vectors cached. Under load many questions wait, so batches are large and each answer costs
less; when idle the batch is the one question, so nothing ever waits for a batch to fill.
Answers keep their arrival order, so the wait is the same for every request.

Why not `@serve.batch`: it forms the batch when its batch loop is free, not when this thread
is. Tried on this app under load, nearly every batch held one question: the answers queued on
the thread gate the arrivals, and the loop took each new question as it came.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")


class DomainThread:
    def __init__(self, encode_many: Callable[[list[str]], None], max_batch: int) -> None:
        self._encode_many = encode_many
        self._max_batch = max_batch
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="domain")
        self._lock = threading.Lock()  # the waiting texts, between the event loop and the thread
        self._unembedded: list[str] = []  # texts of queued calls, in call order
        self.batch_sizes: Counter[int] = Counter()  # questions per batch -> batches embedded
        # Calls queued or running here; every request to a replica makes one, so this is the
        # replica's requests in flight, and the most of them at once.
        self.in_flight = 0
        self.most_in_flight = 0

    async def run(self, call: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """`call(*args, **kwargs)` on the domain thread, after the calls queued before it."""
        loop = asyncio.get_running_loop()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await loop.run_in_executor(
                self._executor, functools.partial(call, *args, **kwargs)
            )
        finally:
            self.in_flight -= 1

    async def run_embedded(self, text: str, call: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        """Like `run`, with `text` embedded before the call (with the texts waiting then)."""
        with self._lock:
            self._unembedded.append(text)
        return await self.run(self._embedded_call, text, functools.partial(call, *args, **kwargs))

    def _embedded_call(self, text: str, call: Callable[[], R]) -> R:
        with self._lock:
            # Absent: an earlier call embedded it. Texts of cancelled calls may lead the list;
            # they are embedded once for nothing rather than left to block batching.
            batch = self._unembedded[: self._max_batch] if text in self._unembedded else []
            del self._unembedded[: len(batch)]
        if batch:
            self.batch_sizes[len(batch)] += 1
            self._encode_many(batch)
        return call()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
