"""The body limits in Serve's HTTP proxy, driven as the proxy drives its app (no Ray): the
app behind reads every message it is given, as the proxy's own receive loop does; the limit
stops the body at the limit, answers 413 once, and tells the app the client is gone."""

from __future__ import annotations

import asyncio
import json

from actors.proxy_limits import (
    LIMITS_VARIABLE,
    ProxyBodyLimit,
    proxy_environment,
    proxy_middlewares,
)
from memory_bank.config import LimitsConfig

LIMIT = 4096
PIECE = 1024


def _scope(path: str = "/query", headers: list[tuple[bytes, bytes]] = ()) -> dict:
    return {"type": "http", "method": "POST", "path": path, "headers": list(headers)}


class DrainingApp:
    """Reads until the client is gone, as Serve's proxy forwards a body; then answers 200."""

    def __init__(self) -> None:
        self.received = 0
        self.ended_with = ""

    async def __call__(self, scope, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] != "http.request":
                self.ended_with = message["type"]
                break
            self.received += len(message["body"])
            if not message.get("more_body", False):
                self.ended_with = "body"
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def _drive(scope: dict, pieces: int) -> tuple[DrainingApp, list[dict], int]:
    app = DrainingApp()
    pulled = 0

    async def receive():
        nonlocal pulled
        pulled += 1
        return {"type": "http.request", "body": b"x" * PIECE, "more_body": pulled < pieces}

    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    limited = ProxyBodyLimit(app, LimitsConfig(max_body_bytes=LIMIT, max_upload_bytes=4 * LIMIT))
    asyncio.run(limited(scope, receive, send))
    return app, sent, pulled * PIECE


def test_a_chunked_body_over_the_limit_stops_at_the_limit_with_one_413_that_closes():
    app, sent, pulled = _drive(_scope(), pieces=50_000)  # 50 MB offered

    assert pulled <= LIMIT + PIECE
    assert app.ended_with == "http.disconnect"  # the replica's call is dropped
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 413 and (b"connection", b"close") in sent[0]["headers"]
    assert json.loads(sent[1]["body"])["detail"] == (
        f"the request body is larger than {LIMIT:,} bytes (limits.max_body_bytes)"
    )


def test_a_declared_length_over_the_limit_is_refused_before_any_of_the_body():
    app, sent, pulled = _drive(_scope(headers=[(b"content-length", b"999999")]), pieces=1000)

    assert (pulled, app.received) == (0, 0)
    assert sent[0]["status"] == 413


def test_bodies_within_their_limits_pass_whole():
    app, sent, _ = _drive(_scope(), pieces=LIMIT // PIECE)
    upload, upload_sent, _ = _drive(_scope("/documents/files/a.md"), pieces=3 * LIMIT // PIECE)

    assert (app.received, app.ended_with, sent[0]["status"]) == (LIMIT, "body", 200)
    assert (upload.received, upload_sent[0]["status"]) == (3 * LIMIT, 200)


def test_the_proxy_takes_its_limits_from_the_controllers_environment(monkeypatch):
    limits = LimitsConfig(max_body_bytes=LIMIT)
    for name, value in proxy_environment(limits).items():
        monkeypatch.setenv(name, value)

    [middleware] = proxy_middlewares()

    assert middleware.cls is ProxyBodyLimit and middleware.kwargs["limits"] == limits
    assert LIMITS_VARIABLE in proxy_environment(limits)
