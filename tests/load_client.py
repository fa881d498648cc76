"""Closed-loop HTTP load against the Serve app, for tests/serve and bench/query.py: `clients` concurrent clients, each sending its next request as soon as the last
one is answered, for `seconds`; a 503 with Retry-After is waited out, as a polite client would.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import numpy as np


@dataclass
class LoadResult:
    clients: int
    seconds: float = 0.0
    latencies_s: list[float] = field(default_factory=list)  # of the 200s
    statuses: Counter[int] = field(default_factory=Counter)
    unexplained: list[str] = field(default_factory=list)  # transport errors, 503s without header

    @property
    def answered_per_s(self) -> float:
        return len(self.latencies_s) / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float:
        return float(np.percentile(self.latencies_s, q) * 1000) if self.latencies_s else 0.0


async def closed_loop(
    base_url: str,
    path: str,
    body: Callable[[], dict],
    clients: int,
    seconds: float,
    headers: dict[str, str] | None = None,
    ramp_s: float = 0.0,
) -> LoadResult:
    """POST `body()` (a fresh body per request) to `path` from `clients` clients for `seconds`.

    With `ramp_s`, the clients first run that long unrecorded, and only the requests sent after
    it count: the steady state at this many clients, without the start, when every client
    opens its connection and sends its first request at the same moment.
    """
    result = LoadResult(clients)
    record_from = time.perf_counter() + ramp_s
    deadline = record_from + seconds

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120.0) as http:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                recorded = started >= record_from
                try:
                    response = await http.post(path, json=body())
                except httpx.HTTPError as exc:
                    if recorded:
                        result.unexplained.append(repr(exc))
                    continue
                if recorded:
                    _record(result, response, time.perf_counter() - started)
                if response.status_code == 503 and "retry-after" in response.headers:
                    wait = float(response.headers["retry-after"])
                    await asyncio.sleep(min(wait, max(0.0, deadline - time.perf_counter())))

    await asyncio.gather(*(client() for _ in range(clients)))
    result.seconds = time.perf_counter() - record_from
    return result


def _record(result: LoadResult, response: httpx.Response, seconds: float) -> None:
    result.statuses[response.status_code] += 1
    if response.status_code == 200:
        result.latencies_s.append(seconds)
    elif response.status_code != 503 or "retry-after" not in response.headers:
        result.unexplained.append(f"{response.status_code}: {response.text[:200]}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


TOPICS = ("GIL threads", "asyncio event loop", "type hints", "React hooks", "attention heads")


def numbered_questions(topics: tuple[str, ...] = TOPICS) -> Callable[[], dict]:
    """Bodies for POST /query, a new question each time (the replica caches the vectors of
    repeated ones), cycling through `topics`."""
    numbers = itertools.count()

    def body() -> dict:
        number = next(numbers)
        return {"question": f"What is said about {topics[number % len(topics)]}, case {number}?"}

    return body
