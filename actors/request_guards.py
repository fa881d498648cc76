"""How the HTTP API answers a request it refuses before any work: too large, or not valid.

- `LimitRequestBody` (pure ASGI) refuses a body larger than `limits.max_body_bytes` with 413 and
  the API's error body: a declared Content-Length over the limit before a byte of the body is
  read, a body sent without one as soon as what arrived passes the limit; so no over-limit body
  is ever read whole. (FastAPI's own `max_body_size` does the same but answers a declared
  length with a plain-text 413 of its own, whatever the app's handlers say.) `refused_body`
  answers a body found too large while it was read.
- `refused_validation` is the 422 for a request that does not validate. FastAPI's own failed
  with 500 on text it could not encode back (a lone surrogate, "\\ud800", is valid JSON but no
  valid UTF-8): here every response is ASCII-escaped JSON, and an echoed input is cut short
  (a megabyte question is not sent back).
"""

import json
from typing import Any

from fastapi import HTTPException, Request
from fastapi.datastructures import Headers
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

from actors.serve_api import ErrorBody

ECHOED_INPUT_CHARS = 200
CONTENT_TOO_LARGE = 413


class EscapedJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: any Python string can be sent."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(status_code=CONTENT_TOO_LARGE)
        self.limit = limit


class LimitRequestBody:
    """Refuses an HTTP request body over `app.state.max_body_bytes` (None: no limit)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        limit = getattr(scope["app"].state, "max_body_bytes", None) if "app" in scope else None
        if scope["type"] != "http" or limit is None:
            return await self.app(scope, receive, send)
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return await too_large(limit)(scope, receive, send)  # nothing of the body is read
        received = 0

        async def receive_within_limit():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)  # answered by `refused_body`
            return message

        await self.app(scope, receive_within_limit, send)


def too_large(limit: int) -> Response:
    body = ErrorBody(
        error="ContentTooLarge",
        detail=f"the request body is larger than {limit:,} bytes (limits.max_body_bytes)",
    )
    return EscapedJSONResponse(status_code=CONTENT_TOO_LARGE, content=body.model_dump())


async def refused_body(_: Request, exc: BodyTooLarge) -> Response:
    """A body that passed the limit while it was read: 413 in the API's error body."""
    return too_large(exc.limit)


async def refused_validation(_: Request, exc: RequestValidationError) -> Response:
    """422 with FastAPI's `{"detail": [{"loc", "msg", "type", ...}]}`, safe for any input."""
    problems = []
    for problem in jsonable_encoder(exc.errors()):
        echoed = json.dumps(problem.get("input"), ensure_ascii=True)
        if len(echoed) > ECHOED_INPUT_CHARS:
            problem["input"] = f"<{len(echoed):,} characters, not echoed>"
        problems.append(problem)
    return EscapedJSONResponse(status_code=422, content={"detail": problems})
