"""The body limits in Ray Serve's HTTP proxy, in front of every replica.

The proxy reads a request's body into its own queue as fast as the client sends it, whether
or not the replica reads it, and only stops when the replica has answered: behind it, a body
sent without Content-Length crossed the proxy whole, however early the app refused it. Serve
runs the Starlette middlewares that the function named by RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH
returns around its proxy's ASGI app; `proxy_middlewares` is that function, and
`ProxyBodyLimit` stops receiving the moment a body passes its limit: it answers 413 (the app's
own refusal, `request_guards.BodyLimit`) with `Connection: close`, so the server drops the
connection instead of reading the rest, and the replica sees the client gone.

The proxy is a process Serve starts: the limits reach it as environment variables of the
Serve controller (`proxy_environment`), which the proxy inherits.
"""

from __future__ import annotations

import os

from fastapi.middleware import Middleware

from actors.request_guards import BodyLimit, declared_over
from memory_bank.config import LimitsConfig

CALLBACK_VARIABLE = "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"
LIMITS_VARIABLE = "MEMORY_BANK_PROXY_LIMITS"
_DISCONNECT = {"type": "http.disconnect"}


def proxy_environment(limits: LimitsConfig) -> dict[str, str]:
    """The Serve controller's environment that puts `limits` in its proxies."""
    return {
        CALLBACK_VARIABLE: f"{__name__}.{proxy_middlewares.__name__}",
        LIMITS_VARIABLE: limits.model_dump_json(),
    }


def proxy_middlewares() -> list[Middleware]:
    """Called by Serve in its proxy when the proxy starts."""
    limits = LimitsConfig.model_validate_json(os.environ[LIMITS_VARIABLE])
    return [Middleware(ProxyBodyLimit, limits=limits)]


class ProxyBodyLimit:
    """Pure ASGI: a body over its limit is refused before it is forwarded, and no more of it is
    received."""

    def __init__(self, app, limits: LimitsConfig) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = BodyLimit(self.limits, scope["path"])
        if declared_over(scope, limit):
            return await limit.refusal(close=True)(scope, receive, send)
        received = 0
        started = refused = False

        async def receive_within_limit():
            nonlocal received, refused
            if refused:
                return _DISCONNECT
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit.bytes:
                    refused = True
                    if not started:
                        await limit.refusal(close=True)(scope, receive, send)
                    return _DISCONNECT  # the replica's call is cancelled as for a client gone
            return message

        async def send_unless_refused(message) -> None:
            nonlocal started
            if refused:
                return  # the client has its answer; the cancelled call's is dropped
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, receive_within_limit, send_unless_refused)
