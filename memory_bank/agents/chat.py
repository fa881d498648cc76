"""The OpenAI-compatible chat endpoint: the memory as a model, or a router in front of one.

- Memory as a model (`memory-bank`, `memory-bank-research`): the last user message is the
  question; the navigation agent (or the research loop) answers it, and the reply cites the
  memory files it rests on, numbered, also as `memory_bank.sources` beside the choices.
- Router (any other model, when `agents.router` names an upstream OpenAI-compatible endpoint):
  the memories recalled for the last user message (the store's best matches, and, with a
  conversation id, what that conversation's memory recalls) are injected as a system message,
  numbered for citation, within `agents.router.inject_tokens`; the request goes upstream with
  everything else as the client sent it, and the reply comes back as the upstream sent it. With
  a conversation id (`metadata.conversation_id`, or the X-Conversation-Id header) the user's
  message and the reply are then added to that conversation's memory.

Both stream (server-sent events, `data: {chunk}` lines ending with `data: [DONE]`) when asked,
fill `usage` (prompt tokens counted with tiktoken for the memory model), and go through
`MemoryGateway`, so a key limited to part of the store is answered and injected from that part
only. Errors are `ChatError`s carrying OpenAI's error shape.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from memory_bank.agents.gateway import MemoryGateway
from memory_bank.agents.keys import Caller
from memory_bank.config import RouterConfig
from memory_bank.errors import (
    AccessDenied,
    InputTooLargeError,
    MemoryBankError,
    SessionError,
    ToolError,
)
from memory_bank.schemas import ChatResult, SearchHit
from memory_bank.text.tokens import count_tokens, get_encoding

MEMORY_MODEL = "memory-bank"
RESEARCH_MODEL = "memory-bank-research"
MEMORY_MODELS = (MEMORY_MODEL, RESEARCH_MODEL)
INJECTION_HEADER = (
    "Memories recalled for this conversation follow, numbered. Use them where they help and "
    "cite them as [n]; say so when they do not answer the question.\n"
)
STREAM_PIECE_CHARS = 48  # the memory model's reply streams in pieces of about this size


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            str(part.get("text", "")) for part in self.content or [] if part.get("type") == "text"
        )


class ChatRequest(BaseModel):
    """The fields this endpoint reads; every other field goes upstream as sent."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None

    def question(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user" and message.text().strip():
                return message.text()
        raise ChatError(400, "the messages hold no user message with text", param="messages")

    def conversation_id(self, header: str | None) -> str | None:
        return (self.metadata or {}).get("conversation_id") or header or None


class ChatError(Exception):
    """An error in OpenAI's shape: the status, and the body's `error` object."""

    def __init__(
        self, status: int, message: str, kind: str = "invalid_request_error", param=None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": None}}


def chat_error(exc: MemoryBankError) -> ChatError:
    if isinstance(exc, AccessDenied):
        return ChatError(403, str(exc), "permission_error")
    if isinstance(exc, ToolError | SessionError):
        return ChatError(400, str(exc))
    if isinstance(exc, InputTooLargeError):
        return ChatError(413, str(exc))
    return ChatError(503, str(exc), "server_error")


class Injection(BaseModel):
    """What the router put before the conversation, and what it cost."""

    text: str
    tokens: int
    sources: list[str]  # the memory files cited as [1], [2], ... (conversation turns unnumbered)


class ChatEndpoint:
    """`/v1/models` and `/v1/chat/completions` over one gateway (see the module docstring)."""

    def __init__(self, gateway: MemoryGateway, router: RouterConfig | None) -> None:
        self.gateway = gateway
        self.router = router
        self._upstream: openai.AsyncOpenAI | None = None

    def models(self) -> dict[str, Any]:
        names = [*MEMORY_MODELS, *(self.router.models if self.router else [])]
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "memory-bank"}
                for name in names
            ],
        }

    async def complete(
        self, caller: Caller, request: ChatRequest, conversation_header: str | None = None
    ) -> dict[str, Any] | AsyncIterator[str]:
        """A completion (a dict), or its server-sent events when `request.stream`."""
        if request.model in MEMORY_MODELS:
            return await self._as_memory(caller, request)
        if self.router is None or request.model not in self.router.models:
            raise ChatError(404, f"no model {request.model!r} here", param="model")
        return await self._routed(caller, request, request.conversation_id(conversation_header))

    # --- the memory as a model --------------------------------------------------------------

    async def _as_memory(
        self, caller: Caller, request: ChatRequest
    ) -> dict[str, Any] | AsyncIterator[str]:
        mode = "research" if request.model == RESEARCH_MODEL else "navigate"
        try:
            result = await self.gateway.ask(caller, request.question(), mode)
        except MemoryBankError as exc:
            raise chat_error(exc) from exc
        content = cited_answer(result)
        prompt_tokens = sum(count_tokens(m.text()) for m in request.messages)
        usage = _usage(prompt_tokens, count_tokens(content))
        extra = {"memory_bank": {"sources": result.sources, "confidence": result.confidence}}
        completion_id = f"chatcmpl-{secrets.token_hex(12)}"
        if not request.stream:
            return _completion(completion_id, request.model, content, usage, extra)
        pieces = [
            content[start : start + STREAM_PIECE_CHARS]
            for start in range(0, len(content), STREAM_PIECE_CHARS)
        ]
        include_usage = bool((request.stream_options or {}).get("include_usage"))
        return _stream_pieces(
            completion_id, request.model, pieces, usage if include_usage else None, extra
        )

    # --- the router -------------------------------------------------------------------------

    async def inject(self, caller: Caller, question: str, conversation_id: str | None) -> Injection:
        """The recalled memories for `question` within the router's token budget."""
        assert self.router is not None
        budget = self.router.inject_tokens
        parts: list[str] = []
        used = count_tokens(INJECTION_HEADER)
        if conversation_id is not None and budget > used:
            recalled = await self.gateway.recall(
                caller, conversation_id, question, max_tokens=max(16, (budget - used) // 2)
            )
            if recalled.turns or recalled.summary:
                block = f"From this conversation's memory:\n{recalled.context()}\n"
                text = _truncated(block, budget - used)
                parts.append(text)
                used += count_tokens(text)
        hits: list[SearchHit] = await self.gateway.search(caller, question, self.router.top_k)
        sources: list[str] = []
        for hit in hits:
            if hit.kind != "chunk" or used >= budget:
                continue
            block = f"[{len(sources) + 1}] {hit.chunk_path}\n{hit.text.strip()}\n"
            text = _truncated(block, budget - used)
            if not text:
                break
            parts.append(text)
            sources.append(hit.chunk_path)
            used += count_tokens(text)
        if not parts:
            return Injection(text="", tokens=0, sources=[])
        text = INJECTION_HEADER + "\n".join(parts)
        return Injection(text=text, tokens=count_tokens(text), sources=sources)

    async def _routed(
        self, caller: Caller, request: ChatRequest, conversation_id: str | None
    ) -> dict[str, Any] | AsyncIterator[str]:
        question = request.question()
        try:
            if conversation_id is not None and not caller.allows("write"):
                raise AccessDenied(
                    f"this key has {caller.permission} permission; keeping the exchange in "
                    "conversation memory needs write (or send no conversation id)"
                )
            injection = await self.inject(caller, question, conversation_id)
        except MemoryBankError as exc:
            raise chat_error(exc) from exc
        messages = [m.model_dump(exclude_none=True) for m in request.messages]
        if injection.text:
            leading = next((i for i, m in enumerate(messages) if m["role"] != "system"), 0)
            messages.insert(leading, {"role": "system", "content": injection.text})
        extra = {"memory_bank": {"sources": injection.sources, "injected_tokens": injection.tokens}}
        rest = request.model_dump(
            exclude={"model", "messages", "stream", "metadata"}, exclude_none=True
        )
        try:
            reply = await self._client().chat.completions.create(
                model=request.model, messages=messages, stream=request.stream, extra_body=rest
            )
        except openai.APIStatusError as exc:
            raise _upstream_error(exc) from exc
        except openai.APIError as exc:
            raise ChatError(
                502, f"the upstream model did not answer: {exc}", "upstream_error"
            ) from exc
        if not request.stream:
            completion = reply.model_dump(exclude_unset=True)
            completion.update(extra)
            content = completion["choices"][0]["message"].get("content") or ""
            await self._remember(caller, conversation_id, question, content)
            return completion
        return self._relay(reply, extra, caller, conversation_id, question)

    async def _relay(
        self,
        stream,
        extra: dict[str, Any],
        caller: Caller,
        conversation_id: str | None,
        question: str,
    ) -> AsyncIterator[str]:
        said: list[str] = []
        first = True
        async for chunk in stream:
            data = chunk.model_dump(exclude_unset=True)
            if first:
                data.update(extra)
                first = False
            for choice in data.get("choices", []):
                said.append((choice.get("delta") or {}).get("content") or "")
            yield _event(data)
        # Before [DONE]: a client that reads the conversation next finds the exchange in it.
        await self._remember(caller, conversation_id, question, "".join(said))
        yield "data: [DONE]\n\n"

    async def _remember(
        self, caller: Caller, conversation_id: str | None, question: str, reply: str
    ) -> None:
        if conversation_id is None:
            return
        await self.gateway.add_turn(caller, conversation_id, "user", question)
        if reply.strip():
            await self.gateway.add_turn(caller, conversation_id, "assistant", reply)

    def _client(self) -> openai.AsyncOpenAI:
        assert self.router is not None
        if self._upstream is None:
            self._upstream = openai.AsyncOpenAI(
                base_url=self.router.base_url,
                # Local servers take any key; the client insists on one.
                api_key=os.environ.get(self.router.api_key_env) or "unused",
                timeout=self.router.timeout_seconds,
                max_retries=1,
            )
        return self._upstream


def cited_answer(result: ChatResult) -> str:
    """The answer, then its sources numbered: "Sources:\\n[1] a/b/x.md"."""
    if not result.sources:
        return result.answer
    cited = "\n".join(f"[{n}] {path}" for n, path in enumerate(result.sources, start=1))
    return f"{result.answer}\n\nSources:\n{cited}"


def _truncated(text: str, budget: int) -> str:
    if budget <= 0:
        return ""
    encoding = get_encoding()
    tokens = encoding.encode_ordinary(text)
    return text if len(tokens) <= budget else encoding.decode(tokens[:budget])


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(
    completion_id: str, model: str, content: str, usage: dict[str, int], extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": usage,
        **extra,
    }


async def _stream_pieces(
    completion_id: str,
    model: str,
    pieces: list[str],
    usage: dict[str, int] | None,
    extra: dict[str, Any],
) -> AsyncIterator[str]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _event(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
                **more,
            }
        )

    yield chunk({"role": "assistant", "content": ""}, None, **extra)
    for piece in pieces:
        yield chunk({"content": piece}, None)
    yield chunk({}, "stop")
    if usage is not None:
        yield _event(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    yield "data: [DONE]\n\n"


def _event(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _upstream_error(exc: openai.APIStatusError) -> ChatError:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error", body) if isinstance(body, dict) else {}
    message = (error.get("message") if isinstance(error, dict) else None) or str(exc)
    kind = (error.get("type") if isinstance(error, dict) else None) or "upstream_error"
    return ChatError(exc.status_code, f"upstream: {message}", kind)
