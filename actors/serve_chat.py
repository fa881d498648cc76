"""The OpenAI-compatible routes: `GET /v1/models` and `POST /v1/chat/completions` (streaming
or not), over the replica's `ChatEndpoint` (`memory_bank/agents/chat.py`). Errors, including
an invalid request body, answer in OpenAI's error shape, which chat clients parse; text that is
no valid Unicode (a lone surrogate) is refused with 422, as on every route."""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations at runtime.
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import ValidationError

from actors.request_guards import EscapedJSONResponse
from actors.serve_api import lone_surrogate
from actors.serve_routes import caller_of
from memory_bank.agents.chat import ChatEndpoint, ChatError, ChatRequest

router = APIRouter(prefix="/v1")


def _endpoint(request: Request) -> ChatEndpoint:
    return request.app.state.chat


@router.get("/models")
def models(request: Request) -> dict[str, Any]:
    caller_of(request)
    return _endpoint(request).models()


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    request: Request,
    conversation: Annotated[str | None, Header(alias="X-Conversation-Id")] = None,
) -> JSONResponse | StreamingResponse:
    try:
        sent = await request.json()
    except ValueError as exc:
        return _error(ChatError(400, f"invalid request: {exc}"))
    where = lone_surrogate(sent, "body")
    if where is not None:
        return _error(ChatError(422, f"{where} holds a lone surrogate: not valid Unicode text"))
    try:
        body = ChatRequest.model_validate(sent)
    except ValidationError as exc:
        return _error(ChatError(400, f"invalid request: {exc}"))
    try:
        reply = await _endpoint(request).complete(caller_of(request), body, conversation)
    except ChatError as exc:
        return _error(exc)
    if isinstance(reply, dict):
        return EscapedJSONResponse(reply)
    return StreamingResponse(
        reply, media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


def _error(exc: ChatError) -> JSONResponse:
    return EscapedJSONResponse(status_code=exc.status, content=exc.body)
