"""Closed-loop HTTP load against the Serve app, for tests/serve and bench/query.py: `clients`
concurrent clients, each sending its next request as soon as the last one is answered, for
`seconds`; a 503 with Retry-After is waited out, as a polite client would.

aiohttp, not httpx: the load shares the machine's cores with the server it measures, and
httpx's client cost per request grew with the clients where aiohttp's stays small and flat
(docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import select
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp
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
    # One connection per client (no pool limit), kept alive as a browser or SDK would.
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=120.0)

    async with aiohttp.ClientSession(
        base_url, headers=headers, connector=connector, timeout=timeout
    ) as http:

        async def client() -> None:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                recorded = started >= record_from
                try:
                    async with http.post(path, json=body()) as response:
                        text = await response.text()
                except (aiohttp.ClientError, TimeoutError) as exc:
                    if recorded:
                        result.unexplained.append(repr(exc))
                    continue
                retry_after = response.headers.get("retry-after")
                if recorded:
                    _record(
                        result, response.status, retry_after, text, time.perf_counter() - started
                    )
                if response.status == 503 and retry_after is not None:
                    wait = float(retry_after)
                    await asyncio.sleep(min(wait, max(0.0, deadline - time.perf_counter())))

        await asyncio.gather(*(client() for _ in range(clients)))
    result.seconds = time.perf_counter() - record_from
    return result


def _record(
    result: LoadResult, status: int, retry_after: str | None, text: str, seconds: float
) -> None:
    result.statuses[status] += 1
    if status == 200:
        result.latencies_s.append(seconds)
    elif status != 503 or retry_after is None:
        result.unexplained.append(f"{status}: {text[:200]}")


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


def post_chunked_until_answered(
    base_url: str, path: str, offered: int, piece: int = 64 << 10
) -> tuple[int, bytes]:
    """POST up to `offered` bytes to `path` with chunked encoding (no Content-Length), as a
    client that reads while it sends: it stops sending when the server answers or closes.
    Returns the bytes it managed to send and the answer's first bytes (b"" if none came)."""
    host, port = base_url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    frame = f"{piece:x}\r\n".encode() + b"x" * piece + b"\r\n"
    sent, pending, finished = 0, head, False
    with socket.create_connection((host, int(port)), timeout=30) as connection:
        connection.setblocking(False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not pending and not finished:
                if sent < offered:
                    pending, sent = frame, sent + piece
                else:
                    pending, finished = b"0\r\n\r\n", True
            writers = [connection] if pending else []
            readable, writable, _ = select.select([connection], writers, [], 1.0)
            if readable:
                return sent, _answer(connection)
            if not writable:
                continue
            try:
                pending = pending[connection.send(pending) :]
            except OSError:  # closed by the server: what it said, if anything, is readable
                return sent, _answer(connection)
    return sent, b""


def _answer(connection: socket.socket) -> bytes:
    """The answer's head and body as far as they came: its body may follow its head in a
    packet of its own, so read until the declared length is in or the server closes."""
    connection.setblocking(True)
    answer = b""
    while True:
        try:
            received = connection.recv(4096)
        except OSError:
            return answer
        if not received:
            return answer
        answer += received
        head, separator, body = answer.partition(b"\r\n\r\n")
        if separator:
            declared = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            if declared is None or len(body) >= int(declared.group(1)):
                return answer
