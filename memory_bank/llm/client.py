"""`ChatClient`: structured, repaired, retried, cached and accounted calls to an
OpenAI-compatible chat-completions endpoint (the real `openai` client underneath); the transport
of `endpoint.OpenAICompatible`, and of embeddings requests (`embed`, for
`index.remote_embedding`) on the same retries, concurrency limit, cache and ledger.

Structured output: each role asks for its pydantic result model as a JSON schema
(`response_format` json_schema). A server that refuses that format is asked again in JSON mode,
then in plain text; the client remembers the downgrade. A reply is parsed leniently
(`json_text.parse_json_reply`, with `json-repair`: code fences, prose around the object,
Python literals, trailing commas, a reply cut off mid-object) and validated; a reply that still does not fit is answered with the
validation error and asked again, `repair_attempts` times, before the role gives up with
`LLMReplyError` (the capability then uses the role's documented fallback).

Transport: 429, 5xx, timeouts and dropped connections are retried with exponential backoff and
jitter (tenacity), waiting at least what a `Retry-After` header asks; at most `max_concurrency`
requests are in flight per process. Replies are cached by content (model, temperature, messages,
schema, tools): asking the same thing again makes no request. Every request is accounted in the
`Ledger` (calls, cache hits, tokens, retries, repairs, seconds, estimated cost, per role).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from tenacity import (
    RetryCallState,
    retry,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from memory_bank.config import LLMConfig, user_cache_dir
from memory_bank.errors import LLMError
from memory_bank.llm.json_text import parse_json_reply
from memory_bank.llm.ledger import Ledger

M = TypeVar("M", bound=BaseModel)
_FORMATS = ("json_schema", "json_object", "text")
# How structured each endpoint (base URL and model) lets replies be, learned once per process.
_FORMAT_LEVEL: dict[str, int] = {}
_FORMAT_LOCK = threading.Lock()


class LLMReplyError(LLMError):
    """The endpoint kept answering something that does not fit the role's result model."""


class RequestRefused(LLMError):
    """The endpoint refused the request as malformed (HTTP 400): an option it does not take."""


class ChatClient:
    """One endpoint, shared by every role (thread-safe)."""

    def __init__(self, config: LLMConfig, ledger: Ledger | None = None) -> None:
        import openai  # imported here: the offline default never needs it

        self.config = config
        self.ledger = ledger or Ledger(config)
        # The key stays in the environment; an endpoint without auth (a local server) gets a
        # placeholder, which the client insists on.
        key = os.environ.get(config.api_key_env) or "not-needed"
        self._openai = openai
        self._client = openai.OpenAI(
            api_key=key,
            base_url=config.base_url,
            timeout=config.timeout_seconds,
            max_retries=0,  # retried below, with Retry-After honoured and every retry counted
        )
        self._slots = threading.BoundedSemaphore(config.max_concurrency)
        self._endpoint = f"{config.base_url}|{config.model}"
        cache_root = Path(config.cache_dir) if config.cache_dir else user_cache_dir() / "llm"
        self._cache = cache_root if config.cache else None

    # --- structured roles -------------------------------------------------------------------

    def structured(
        self,
        role: str,
        instructions: str,
        payload: Mapping[str, Any],
        result_model: type[M],
        model: str,
        temperature: float,
        check: Callable[[M], list[str]] | None = None,
        attempts: int | None = None,
    ) -> M:
        """Ask `role` for a `result_model`, with the role input as a JSON block; `check` adds
        the role's own validation (its problems are sent back like schema errors). `attempts`
        replies are asked for at most (default: 1 + `repair_attempts`)."""
        tries = attempts or self.config.repair_attempts + 1
        schema = result_model.model_json_schema()
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"role: {role}\n{instructions}"},
            {
                "role": "user",
                "content": "Input:\n```json\n"
                + json.dumps(payload, ensure_ascii=False, indent=1)
                + "\n```\nReply with one JSON object that fits this schema:\n"
                + json.dumps(schema, ensure_ascii=False),
            },
        ]
        for attempt in range(tries):
            content = self._complete_text(role, messages, schema, model, temperature)
            try:
                result = result_model.model_validate(parse_json_reply(content))
                problems = check(result) if check else []
            except (ValueError, ValidationError) as exc:
                problems = [_short(str(exc))]
            if not problems:
                return result
            if attempt == tries - 1:
                break
            self.ledger.count(role, "repairs")
            messages = [
                *messages,
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": "That reply cannot be used:\n- "
                    + "\n- ".join(problems)
                    + "\nReply again with only the corrected JSON object.",
                },
            ]
        raise LLMReplyError(
            f"{role}: no valid reply after {tries} tries: {'; '.join(problems)[:300]}"
        )

    def _complete_text(
        self,
        role: str,
        messages: list[dict[str, Any]],
        schema: dict[str, Any],
        model: str,
        temperature: float,
    ) -> str:
        while True:
            level = _FORMAT_LEVEL.get(self._endpoint, 0)
            kind = _FORMATS[level]
            request: dict[str, Any] = {
                "model": model,
                "temperature": temperature,
                "messages": messages,
            }
            if kind == "json_schema":
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": role, "schema": schema, "strict": False},
                }
            elif kind == "json_object":
                request["response_format"] = {"type": "json_object"}
            try:
                message = self.complete(role, request)
            except RequestRefused as exc:
                if "response_format" in str(exc) and level + 1 < len(_FORMATS):
                    with _FORMAT_LOCK:  # this server does not take it: ask less of it, always
                        if _FORMAT_LEVEL.get(self._endpoint, 0) == level:
                            _FORMAT_LEVEL[self._endpoint] = level + 1
                            self.ledger.count(role, "format_downgrades")
                    continue
                raise
            if message.get("refusal"):
                return ""  # an empty reply: validation fails and the role re-prompts
            return message.get("content") or ""

    # --- raw completions --------------------------------------------------------------------

    def complete(self, role: str, request: dict[str, Any]) -> dict[str, Any]:
        """One chat completion (cached, retried, accounted): the assistant message as JSON
        (content, refusal, tool_calls). `RequestRefused` when the endpoint answers 400."""
        key = _cache_key(request)
        cached = self._cache_get(key)
        if cached is not None:
            self.ledger.record(role, cached=True)
            return cached
        started = time.perf_counter()
        response = self._send(role, lambda: self._client.chat.completions.create(**request))
        usage = response.usage
        self.ledger.record(
            role,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            seconds=time.perf_counter() - started,
        )
        message = response.choices[0].message.model_dump(mode="json", exclude_none=True)
        if not message.get("refusal"):
            self._cache_put(key, message)
        return message

    def embed(self, role: str, request: dict[str, Any]) -> list[list[float]]:
        """One embeddings request (cached, retried, accounted): a vector per input, in order."""
        key = _cache_key({"embeddings": request})
        cached = self._cache_get(key)
        if cached is not None:
            self.ledger.record(role, cached=True)
            return cached["vectors"]
        started = time.perf_counter()
        response = self._send(role, lambda: self._client.embeddings.create(**request))
        self.ledger.record(
            role,
            prompt_tokens=getattr(response.usage, "prompt_tokens", 0) or 0,
            seconds=time.perf_counter() - started,
        )
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        self._cache_put(key, {"vectors": vectors})
        return vectors

    def _send(self, role: str, create: Callable[[], Any]) -> Any:
        """`create()` within the concurrency limit, transient failures retried with backoff;
        `RequestRefused` when the endpoint answers 400, `LLMError` for any other failure."""

        @retry(
            retry=retry_if_exception(self._is_transient),
            wait=self._wait,
            stop=stop_after_attempt(self.config.max_retries + 1),
            before_sleep=lambda _state: self.ledger.count(role, "retries"),
            reraise=True,
        )
        def send() -> Any:
            with self._slots:
                return create()

        try:
            return send()
        except self._openai.BadRequestError as exc:
            raise RequestRefused(
                f"{role}: the endpoint refused the request: {_short(str(exc))}"
            ) from exc
        except self._openai.APIError as exc:
            raise LLMError(f"{role}: the endpoint failed: {_short(str(exc))}") from exc

    def _is_transient(self, exc: BaseException) -> bool:
        errors = self._openai
        if isinstance(exc, errors.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
        return isinstance(exc, errors.APITimeoutError | errors.APIConnectionError)

    def _wait(self, state: RetryCallState) -> float:
        backoff = wait_exponential_jitter(multiplier=0.5, max=30.0)(state)
        exc = state.outcome.exception() if state.outcome else None
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        try:
            return max(backoff, float(header)) if header else backoff
        except ValueError:
            return backoff

    # --- cache ------------------------------------------------------------------------------

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        if self._cache is None:
            return None
        try:
            return json.loads((self._cache / key[:2] / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _cache_put(self, key: str, message: dict[str, Any]) -> None:
        if self._cache is None:
            return
        target = self._cache / key[:2] / f"{key}.json"
        # Written aside and renamed, so a reader never sees half an entry; not fsynced: an
        # entry lost in a crash only costs a request next time, as does one not written.
        aside = target.with_name(f".{key}.{secrets.token_hex(4)}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            aside.write_text(json.dumps(message), encoding="utf-8")
            os.replace(aside, target)
        except OSError:
            aside.unlink(missing_ok=True)


def _cache_key(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(request, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    ).hexdigest()


def _short(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
