"""`OpenAICompatible`: an OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
llama.cpp server, ...) behind the `LLM` seam.

The roles that build the store ask `llm.build_model`, the roles that answer `llm.chat_model`
(each falling back to `llm.model` and its temperature). Requests go through one `ChatClient`
(retries, repair, cache, ledger, at most `max_concurrency` in flight). Tools are sent natively;
an endpoint that refuses the `tools` parameter is asked in the text format of `tool_text` from
then on (remembered per endpoint for the process).

An instance travels to a Ray task as its settings (`__reduce__`): the task makes its own client
and ledger, and returns its usage with its result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memory_bank.config import LLMConfig
from memory_bank.llm.client import ChatClient, RequestRefused
from memory_bank.llm.ledger import Ledger
from memory_bank.llm.seam import M, Purpose, R, ToolCall, ToolChoice, ToolReply
from memory_bank.llm.tool_text import arguments_of, read_tagged, tagged_messages

# Endpoints (base URL and model) that refused native tools in this process.
_TEXT_TOOLS: set[str] = set()
_TEXT_TOOLS_LOCK = threading.Lock()


class OpenAICompatible:
    """The `LLM` of an OpenAI-compatible endpoint (thread-safe)."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.ledger = Ledger(config)
        self._client: ChatClient | None = None
        self._client_lock = threading.Lock()

    def __reduce__(self):
        # Pickled as its settings: the client, its locks and its ledger stay in this process.
        return (OpenAICompatible, (self.config,))

    @property
    def client(self) -> ChatClient:
        with self._client_lock:
            if self._client is None:
                self._client = ChatClient(self.config, self.ledger)
            return self._client

    def _model_for(self, purpose: Purpose) -> tuple[str, float]:
        config = self.config
        name, temperature = (
            (config.build_model, config.build_temperature)
            if purpose == "build"
            else (config.chat_model, config.chat_temperature)
        )
        return name or config.model, config.temperature if temperature is None else temperature

    def complete(
        self,
        role: str,
        instructions: str,
        payload: Mapping[str, Any],
        reply: type[M],
        *,
        check: Callable[[M], list[str]] | None = None,
        attempts: int | None = None,
        purpose: Purpose = "build",
    ) -> M:
        model, temperature = self._model_for(purpose)
        return self.client.structured(
            role, instructions, payload, reply, model, temperature, check, attempts
        )

    def complete_with_tools(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> ToolReply:
        model, temperature = self._model_for("chat")
        endpoint = f"{self.config.base_url}|{model}"
        request: dict[str, Any] = {"model": model, "temperature": temperature}
        if endpoint not in _TEXT_TOOLS:
            native = {**request, "messages": list(messages), "tools": list(tools)}
            try:
                return _native_reply(
                    self.client.complete(role, {**native, "tool_choice": tool_choice})
                )
            except RequestRefused as exc:
                if "tool" not in str(exc).lower():
                    raise
                with _TEXT_TOOLS_LOCK:
                    _TEXT_TOOLS.add(endpoint)
                self.ledger.count(role, "format_downgrades")
        message = self.client.complete(
            role, {**request, "messages": tagged_messages(messages, tools)}
        )
        return read_tagged(message.get("content") or "")

    def overlapped(self, function: Callable[[Any], R], items: Sequence[Any]) -> list[R]:
        if len(items) <= 1:
            return [function(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(items))) as pool:
            return list(pool.map(function, items))


def _native_reply(message: Mapping[str, Any]) -> ToolReply:
    calls = [
        ToolCall(
            name=str(call.get("function", {}).get("name", "")),
            arguments=arguments_of(call.get("function", {}).get("arguments")),
            id=str(call.get("id", "")),
        )
        for call in message.get("tool_calls") or []
    ]
    return ToolReply(content=message.get("content") or "", tool_calls=calls)
