"""A loopback OpenAI-compatible chat-completions server that tests control in-process.

The real `openai` client talks to it over HTTP on 127.0.0.1, so retries, timeouts, headers and
error mapping are the client library's own, not a mock's. Tests register one handler per role,
queue faults (429, 5xx, timeouts, broken replies, a refused `response_format`) and read back
every request received.

Protocol (what the client under test must send):
- the role is `response_format.json_schema.name`, or else the first line of the first system
  message, `role: ROLE` (so it is known after falling back to json_object or plain text);
- the role input is the last ```json ...``` fenced block of the last user message.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

Handler = Callable[[dict[str, Any], dict[str, Any]], "dict[str, Any] | str"]
FAULT_KINDS = {
    "rate_limit", "server_error", "timeout", "truncated",
    "malformed", "invalid", "reject_response_format", "refuse",
}  # fmt: skip
# JSON never holds a raw newline inside a string, so a fence at the start of a line closes the
# block even when the input's strings quote code fences themselves.
_FENCED_JSON = re.compile(r"```json[ \t]*\n(.*?)\n```", re.DOTALL)
_ROLE_LINE = re.compile(r"^\s*role:\s*(\S+)")


class LoopbackLLM:
    """The server's state: role handlers, queued faults, received requests."""

    def __init__(self) -> None:
        self.base_url = ""  # "http://127.0.0.1:PORT/v1" once serving
        self.latency_seconds = 0.0  # added to every request (benchmarks)
        self.handlers: dict[str, Handler] = {}
        self.plain_roles: set[str] = set()
        self.reset()
        self._stopping = threading.Event()
        self.app = self._build_app()

    def reset(self) -> None:
        """Forget requests, queued faults and the persistent rejection; handlers stay."""
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0  # requests being answered now (all on the server's event loop)
        self.most_in_flight = 0  # the most at once since the last reset
        self.faults: deque[tuple[str, dict[str, Any]]] = deque()
        self.rejected_response_formats: set[str] = set()
        self.rejects_tools = False
        self._call_ids = itertools.count(1)
        self._completion_ids = itertools.count(1)

    def handle(self, role: str, function: Handler, plain: bool = False) -> None:
        """`function(input_dict, request_body) -> dict | str` answers every request of `role`;
        `plain`: a chat role whose messages hold no json block (the input dict is empty)."""
        self.handlers[role] = function
        if plain:
            self.plain_roles.add(role)

    def inject(self, kind: str, **options: Any) -> None:
        """Queue a fault; each request consumes one (FIFO) before normal handling."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {sorted(FAULT_KINDS)}")
        self.faults.append((kind, options))

    def reject_response_format_always(self, types: set[str] | None = None) -> None:
        """Answer 400 to every request whose response_format type is in `types` (empty: off)."""
        self.rejected_response_formats = set({"json_schema"} if types is None else types)

    def reject_tools_always(self) -> None:
        """Answer 400 to every request that offers tools (a model without tool calling)."""
        self.rejects_tools = True

    def requests_for(self, role: str) -> list[dict[str, Any]]:
        return [record for record in self.requests if record["role"] == role]

    # -- HTTP --------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat_completions(request: Request) -> JSONResponse:
            body = await request.json()
            fault = self.faults.popleft() if self.faults else None
            record = {
                "body": body,
                "headers": dict(request.headers),
                "role": _role_of(body),
                "fault": fault[0] if fault else None,
            }
            self.requests.append(record)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await self._pause(self.latency_seconds)
                return await self._answer(body, record["role"], fault)
            except Exception as exc:  # surfaces in the test as an APIError with this text
                record["error"] = repr(exc)
                return _error(500, f"loopback: answering failed: {exc!r}", "server_error")
            finally:
                self.in_flight -= 1

        return app

    async def _pause(self, seconds: float) -> None:
        """Sleep without blocking other requests; cut short when the server shuts down."""
        deadline = time.monotonic() + seconds
        while not self._stopping.is_set() and (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(left, 0.05))

    async def _answer(
        self, body: dict[str, Any], role: str | None, fault: tuple[str, dict] | None
    ) -> JSONResponse:
        kind, options = fault if fault else (None, {})
        format_type = (body.get("response_format") or {}).get("type")
        if kind == "rate_limit":
            retry_after = str(options.get("retry_after", 1))
            return _error(
                429, "Rate limit reached", "rate_limit_error", {"Retry-After": retry_after}
            )
        if kind == "server_error":
            return _error(options.get("status", 500), "The server had an error", "server_error")
        if kind == "timeout":
            await self._pause(options.get("seconds", 5.0))  # the client has given up by then
        rejected = format_type in self.rejected_response_formats or (
            kind == "reject_response_format" and format_type == options.get("type", "json_schema")
        )
        if rejected:
            message = f"response_format {format_type} is not supported by this model"
            return _error(400, message, "invalid_request_error", param="response_format")
        if self.rejects_tools and body.get("tools"):
            message = "tools are not supported by this model"
            return _error(400, message, "invalid_request_error", param="tools")
        if kind == "refuse":
            refusal = options.get("message", "I'm sorry, I can't help with that.")
            return self._completion(body, {"content": None, "refusal": refusal}, "stop")
        if role is None:
            return _error(500, "loopback: no role in response_format name or system line")
        if role not in self.handlers:
            known = sorted(self.handlers)
            return _error(500, f"loopback: no handler for role {role!r} (registered: {known})")
        try:
            role_input = {} if role in self.plain_roles else _role_input(body)
        except ValueError as exc:
            return _error(400, f"loopback: {exc}", "invalid_request_error", param="messages")
        result = await run_in_threadpool(self.handlers[role], role_input, body)

        if body.get("tools") and isinstance(result, dict) and "tool_calls" in result:
            calls = [self._tool_call(call) for call in result["tool_calls"]]
            if kind in ("truncated", "malformed", "invalid") and calls:
                first = calls[0]["function"]
                schema = _tool_schema(body, first["name"])
                first["arguments"] = _corrupt(kind, first["arguments"], schema, options)
            message = {"content": None, "tool_calls": calls}
            return self._completion(body, message, "tool_calls")
        if body.get("tools") and isinstance(result, dict) and "content" in result:
            result = result["content"]  # the agent's final answer
        content = result if isinstance(result, str) else json.dumps(result)
        if kind in ("truncated", "malformed", "invalid"):
            schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
            content = _corrupt(kind, result, schema, options)
        return self._completion(
            body, {"content": content}, "length" if kind == "truncated" else "stop"
        )

    def _tool_call(self, call: dict[str, Any]) -> dict[str, Any]:
        arguments = call.get("arguments", {})
        return {
            "id": f"call_{next(self._call_ids)}",
            "type": "function",
            "function": {
                "name": call["name"],
                # a string is sent as-is so tests can script broken arguments
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            },
        }

    def _completion(
        self, body: dict, message: dict, finish_reason: str
    ) -> JSONResponse | StreamingResponse:
        message = {"role": "assistant", "refusal": None, **message}
        produced = (message.get("content") or "") + json.dumps(message.get("tool_calls") or "")
        prompt_tokens = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion_tokens = max(1, len(produced) // 4)
        completion = {
            "id": f"chatcmpl-loopback-{next(self._completion_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "loopback"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        if body.get("stream"):
            return StreamingResponse(_chunks(completion), media_type="text/event-stream")
        return JSONResponse(completion)


def _chunks(completion: dict[str, Any], piece: int = 16) -> Iterator[str]:
    """A completion as the server-sent events of a streamed one: the content in pieces, then
    the finish reason, then the usage."""
    choice = completion["choices"][0]
    content = choice["message"].get("content") or ""
    head = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }

    def event(delta: dict[str, Any], finish: str | None = None) -> str:
        chunk = head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(chunk)}\n\n"

    yield event({"role": "assistant", "content": ""})
    for start in range(0, len(content), piece):
        yield event({"content": content[start : start + piece]})
    yield event({}, choice["finish_reason"])
    yield f"data: {json.dumps(head | {'choices': [], 'usage': completion['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def _error(
    status: int,
    message: str,
    kind: str = "server_error",
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    error = {"message": message, "type": kind, "param": param, "code": None}
    return JSONResponse({"error": error}, status_code=status, headers=headers)


def _text(message: dict[str, Any]) -> str:
    """A message's text, whether content is a string or a list of content parts."""
    content = message.get("content") or ""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def _role_of(body: dict[str, Any]) -> str | None:
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return response_format.get("json_schema", {}).get("name")
    for message in body.get("messages", []):
        if message.get("role") == "system":
            match = _ROLE_LINE.match(_text(message))
            return match.group(1) if match else None
    return None


def _role_input(body: dict[str, Any]) -> dict[str, Any]:
    users = [message for message in body.get("messages", []) if message.get("role") == "user"]
    if not users:
        raise ValueError("no user message")
    # The most recent user message with an input block: a re-prompt after an invalid reply
    # ("that reply cannot be used: ...") carries none and refers back to it.
    blocks = next(
        (found for found in (_FENCED_JSON.findall(_text(u)) for u in reversed(users)) if found),
        [],
    )
    if not blocks and body.get("tools"):
        return {}  # an agent turn: the question is plain text, the handler reads the messages
    if not blocks:
        raise ValueError("the last user message has no ```json fenced block")
    try:
        return json.loads(blocks[-1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the role input is not valid JSON: {exc}") from exc


def _tool_schema(body: dict[str, Any], name: str) -> dict[str, Any] | None:
    for tool in body.get("tools", []):
        if tool.get("function", {}).get("name") == name:
            return tool["function"].get("parameters")
    return None


def _corrupt(kind: str, result: Any, schema: dict | None, options: dict[str, Any]) -> str:
    """The normal reply broken the way `kind` says (or `content=` as given)."""
    if "content" in options:
        content = options["content"]
        return content if isinstance(content, str) else json.dumps(content)
    if isinstance(result, str):
        with contextlib.suppress(ValueError):
            result = json.loads(result)
    text = result if isinstance(result, str) else json.dumps(result)
    if kind == "truncated":
        return text[: max(1, len(text) // 2)]  # as if the token limit hit mid-object
    if kind == "malformed":
        # Python repr: single quotes and True/None; plus a trailing comma and prose around it
        loose = repr(result) if isinstance(result, dict | list) else text
        if isinstance(result, dict) and result:
            loose = loose[:-1] + ",}"
        return f"Sure! Here it is: {loose}\nLet me know if you need anything else."
    # "invalid": well-formed JSON missing the schema's first required field
    required = (schema or {}).get("required") or []
    broken = dict(result) if isinstance(result, dict) else {}
    if required:
        broken.pop(required[0], None)
    return json.dumps(broken)


@contextlib.contextmanager
def serve_loopback() -> Iterator[LoopbackLLM]:
    """A LoopbackLLM serving on a free 127.0.0.1 port for the duration of the block."""
    llm = LoopbackLLM()
    try:
        with serve_asgi(llm.app, "loopback-llm") as base_url:
            llm.base_url = f"{base_url}/v1"
            yield llm
    finally:
        llm._stopping.set()  # wakes sleeping "timeout"/latency requests so shutdown is quick


@contextlib.contextmanager
def serve_asgi(app: Any, name: str = "asgi") -> Iterator[str]:
    """`app` served by uvicorn on a free 127.0.0.1 port for the duration of the block; yields
    its base URL."""
    # Binding the socket here (port 0) picks a free port with no race against other servers.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # A wide backlog: benchmarks open many connections at once.
    config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=512)
    server = uvicorn.Server(config)  # signal handlers: uvicorn skips them off the main thread
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the {name} server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def loopback_llm_server() -> Iterator[LoopbackLLM]:
    """Pytest fixture body (wrap with @pytest.fixture in conftest)."""
    with serve_loopback() as llm:
        yield llm
