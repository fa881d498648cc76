"""The ingress's admission queue in front of the query replicas.

Serve's router should never hold a request that no replica can take: it waits for one with a
backoff of up to half a second per try, asking the replicas for their queue lengths on each,
and the replicas, busy answering, reply late: with more clients than the replicas admit,
throughput collapsed (`python bench/query.py --sweep`; docs/benchmarks.md). So the ingress keeps
the line itself: at most `capacity` calls (what the replicas admit together) are out at once, up to
`queue` more wait here first come first served, and the next one is refused at once
(`QueueFull`, a 503 with Retry-After at the HTTP edge).

One ingress replica sees every request, so its count is the whole app's (`build_app_for`
deploys one). It also keeps what the line held (`stats`): the most calls out and waiting at
once, and how many calls waited, so that a test can see who waited where.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


class QueueFull(Exception):
    """Every place at the replicas is taken and the queue in front of them is full."""


@dataclass(frozen=True)
class AdmissionStats:
    """What the line held since it was made."""

    most_in_flight: int  # the most calls out at once: never above `capacity`
    most_waiting: int  # the most calls waiting at once: never above `queue`
    waited: int  # calls that had to wait for a place (given one or not)


class AdmissionQueue:
    def __init__(self, capacity: int, queue: int) -> None:
        if capacity < 1 or queue < 0:
            raise ValueError(f"capacity must be >= 1 and queue >= 0, got {capacity}, {queue}")
        self.capacity = capacity
        self.queue = queue
        self.in_flight = 0
        self._most_in_flight = 0
        self._most_waiting = 0
        self._waited = 0
        # Futures of the waiting calls, oldest first; a slot is handed to one by setting it.
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return sum(1 for future in self._waiting if not future.done())

    def stats(self) -> AdmissionStats:
        return AdmissionStats(self._most_in_flight, self._most_waiting, self._waited)

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        """Hold one of the `capacity` places for the body of the `async with`, after the
        calls that came first; `QueueFull` at once when `queue` calls are already waiting."""
        await self._enter()
        try:
            yield
        finally:
            self._leave()

    async def _enter(self) -> None:
        if self.in_flight < self.capacity and not self.waiting:
            self.in_flight += 1
            self._most_in_flight = max(self._most_in_flight, self.in_flight)
            return
        if self.waiting >= self.queue:
            raise QueueFull(f"{self.in_flight} calls out and {self.waiting} waiting")
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        self._waited += 1
        self._most_waiting = max(self._most_waiting, self.waiting)
        try:
            await turn  # the place is ours once it is set: `_leave` counted it for us
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._leave()  # handed a place just as the caller gave up: pass it on
            else:
                self._discard(turn)
            raise

    def _leave(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():
                turn.set_result(None)  # the place goes straight to the next in line
                return
        self.in_flight -= 1

    def _discard(self, turn: asyncio.Future[None]) -> None:
        try:
            self._waiting.remove(turn)
        except ValueError:
            pass
