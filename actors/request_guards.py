"""How the HTTP API answers a request it refuses before any work: too large, or not valid.

- `LimitRequestBody` (pure ASGI) refuses a body larger than `limits.max_body_bytes` (a file
  sent to `/documents/files/`: `limits.max_upload_bytes`) with 413 and the API's error body
  (OpenAI's error shape under /v1/): a declared Content-Length over the limit before a byte of
  the body is read, a body sent without one as soon as what arrived passes the limit; so no
  over-limit body is ever read whole. (FastAPI's own `max_body_size` does the same but answers a
  declared length with a plain-text 413 of its own, whatever the app's handlers say.)
  `refused_body` answers a body found too large while it was read; once it is, the client gets
  the 413 whatever the route answers (the MCP endpoint answers a failed read with a 500).
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
from memory_bank.config import LimitsConfig

ECHOED_INPUT_CHARS = 200
CONTENT_TOO_LARGE = 413
UPLOAD_PATH = "/documents/files/"  # a file sent as the body, under its own limit
OPENAI_PATH = "/v1/"  # answered in OpenAI's error shape, which chat clients parse
_OPENAI_KINDS = {
    401: "authentication_error",
    403: "permission_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
}


class EscapedJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: any Python string can be sent."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_content(path: str, status: int, error: str, detail: str) -> dict[str, Any]:
    """A refusal's body: the API's `ErrorBody`, or OpenAI's error object under /v1/."""
    if path.startswith(OPENAI_PATH):
        kind = _OPENAI_KINDS.get(status, "server_error")
        return {"error": {"message": detail, "type": kind, "param": None, "code": error.lower()}}
    return ErrorBody(error=error, detail=detail).model_dump()


class BodyLimit:
    """The largest body a request to `path` may send, and the setting that says so."""

    def __init__(self, limits: LimitsConfig, path: str) -> None:
        self.path = path
        if path.startswith(UPLOAD_PATH):
            self.bytes, self.setting = limits.max_upload_bytes, "max_upload_bytes"
        else:
            self.bytes, self.setting = limits.max_body_bytes, "max_body_bytes"

    def refusal(self, close: bool = False) -> Response:
        """The 413; `close`: the server drops the connection after it, unread body and all."""
        detail = f"the request body is larger than {self.bytes:,} bytes (limits.{self.setting})"
        content = error_content(self.path, CONTENT_TOO_LARGE, "ContentTooLarge", detail)
        headers = {"connection": "close"} if close else None
        return EscapedJSONResponse(status_code=CONTENT_TOO_LARGE, content=content, headers=headers)


def declared_over(scope, limit: BodyLimit) -> bool:
    """Whether the request declares a Content-Length over `limit`."""
    declared = Headers(scope=scope).get("content-length", "")
    return declared.isdigit() and int(declared) > limit.bytes


class BodyTooLarge(HTTPException):
    def __init__(self, limit: BodyLimit) -> None:
        super().__init__(status_code=CONTENT_TOO_LARGE)
        self.limit = limit


class LimitRequestBody:
    """Refuses an HTTP request body over the limits of `app.state.limits` (None: no limit)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        limits = getattr(scope["app"].state, "limits", None) if "app" in scope else None
        if scope["type"] != "http" or limits is None:
            return await self.app(scope, receive, send)
        limit = BodyLimit(limits, scope["path"])
        if declared_over(scope, limit):
            return await limit.refusal()(scope, receive, send)  # nothing of the body is read
        received = 0
        started = refused = False

        async def receive_within_limit():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit.bytes:
                    raise BodyTooLarge(limit)  # answered by `refused_body`
            return message

        async def send_the_refusal_once_over(message) -> None:
            nonlocal started, refused
            if received > limit.bytes and not started:
                if not refused:  # whatever the route answers, the client is told why
                    refused = True
                    await limit.refusal()(scope, receive, send)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, receive_within_limit, send_the_refusal_once_over)


async def refused_body(_: Request, exc: BodyTooLarge) -> Response:
    """A body that passed the limit while it was read: 413 in the API's error body."""
    return exc.limit.refusal()


async def refused_validation(_: Request, exc: RequestValidationError) -> Response:
    """422 with FastAPI's `{"detail": [{"loc", "msg", "type", ...}]}`, safe for any input."""
    problems = []
    for problem in jsonable_encoder(exc.errors()):
        echoed = json.dumps(problem.get("input"), ensure_ascii=True)
        if len(echoed) > ECHOED_INPUT_CHARS:
            problem["input"] = f"<{len(echoed):,} characters, not echoed>"
        problems.append(problem)
    return EscapedJSONResponse(status_code=422, content={"detail": problems})
