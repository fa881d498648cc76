"""A ReAct agent for a session (seed 002 §4.2 step 1, §6.4, §12): think, call a tool, observe,
until it answers.

The model writes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` to use a tool and
`<answer>...</answer>` to finish; each tool's output comes back as
`<tool_response>...</tool_response>`. Tools: `search` (the store: memories and session
memories), `visit` (a local file, inside the roots it is given), `deep_retrieval` (the raw
contexts behind a memory id). The loop ends with an answer; when the conversation grows past
`max_context_tokens`, or after `max_calls` model calls, the model is told to answer now and
what it says is the answer (a forced answer).

`Session.run` drives the seed's outer loop with it: enhance the prompt, run the agent, intercept
what the tools returned, plan, until the termination rule holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memory_bank.errors import MemoryBankError
from memory_bank.llm.json_text import parse_json_reply
from memory_bank.text.tokens import count_tokens

ROLE = "react"
SYSTEM_PROMPT = f"""role: {ROLE}
You are a research agent working on a task with a memory. Think step by step. To use a tool,
write exactly one <tool_call>{{"name": "...", "arguments": {{...}}}}</tool_call> and stop; its
result comes back in <tool_response>...</tool_response>. When you know the answer, write
<answer>your final answer</answer>.
Tools:
- search: {{"query": "text"}} -- search the memory store; returns the best passages.
- visit: {{"path": "file path"}} -- read a local file.
- deep_retrieval: {{"node_id": "memory id"}} -- the raw contexts behind a memory of the prompt.
"""
FORCE_ANSWER = (
    "You have reached the limit of this conversation. Give your final answer now, in "
    "<answer>...</answer>, from what you have found."
)
NUDGE = (
    "Call a tool with <tool_call>...</tool_call> or give the final answer in <answer>...</answer>."
)
MAX_TOOL_OUTPUT_CHARS = 6000

Chat = Callable[[list[dict[str, str]]], str]
Tool = Callable[[dict[str, Any]], str]
Termination = Literal["answer", "token limit", "max calls"]


@dataclass
class ReactResult:
    question: str
    prediction: str
    messages: list[dict[str, str]]
    termination: Termination
    tool_responses: list[str] = field(default_factory=list)


class ReactAgent:
    def __init__(
        self,
        chat: Chat,
        tools: dict[str, Tool],
        max_calls: int = 60,
        max_context_tokens: int = 32_000,
        count: Callable[[str], int] = count_tokens,
    ) -> None:
        self.chat = chat
        self.tools = tools
        self.max_calls = max_calls
        self.max_context_tokens = max_context_tokens
        self.count = count

    def run(self, prompt: str, question: str | None = None) -> ReactResult:
        task = question or prompt
        # The fenced block carries the task for tools and test servers that read one.
        opening = f"{prompt}\n\nTask:\n```json\n{json.dumps({'question': task})}\n```"
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": opening},
        ]
        responses: list[str] = []
        for _ in range(self.max_calls):
            if self._tokens(messages) > self.max_context_tokens:
                return self._forced(task, messages, responses, "token limit")
            reply = self.chat(messages)
            messages.append({"role": "assistant", "content": reply})
            answer = _between(reply, "answer")
            if answer is not None:
                return ReactResult(task, answer, messages, "answer", responses)
            call = _between(reply, "tool_call")
            if call is None:
                messages.append({"role": "user", "content": NUDGE})
                continue
            output = self._call_tool(call)
            responses.append(output)
            messages.append(
                {"role": "user", "content": f"<tool_response>\n{output}\n</tool_response>"}
            )
        return self._forced(task, messages, responses, "max calls")

    def _forced(
        self, task: str, messages: list[dict[str, str]], responses: list[str], why: Termination
    ) -> ReactResult:
        """Seed 002 §12: past the token limit or the call limit, the model must answer now.
        Old tool responses are dropped first if the conversation would not fit otherwise."""
        trimmed = list(messages)
        while self._tokens(trimmed) > self.max_context_tokens and len(trimmed) > 3:
            del trimmed[2]  # the oldest turn after the task
        trimmed.append({"role": "user", "content": FORCE_ANSWER})
        reply = self.chat(trimmed)
        messages.extend([trimmed[-1], {"role": "assistant", "content": reply}])
        answer = _between(reply, "answer")
        return ReactResult(
            task, (answer if answer is not None else reply).strip(), messages, why, responses
        )

    def _call_tool(self, call: str) -> str:
        try:
            parsed = parse_json_reply(call)
            name = parsed["name"]
            arguments = parsed.get("arguments") or {}
            if name not in self.tools:
                raise MemoryBankError(f"unknown tool {name!r}; tools: {', '.join(self.tools)}")
            output = self.tools[name](arguments)
        except (MemoryBankError, KeyError, TypeError, ValueError, OSError) as exc:
            return f"Error: {exc}"
        return output[:MAX_TOOL_OUTPUT_CHARS]

    def _tokens(self, messages: Sequence[dict[str, str]]) -> int:
        return sum(self.count(message["content"]) for message in messages)


def _between(text: str, tag: str) -> str | None:
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start)
    return text[start + len(tag) + 2 : end if end >= 0 else len(text)].strip()


def visit_tool(roots: Sequence[Path]) -> Tool:
    """Read a local file inside one of `roots` (anything else is refused)."""
    allowed = [Path(root).expanduser().resolve() for root in roots]

    def visit(arguments: dict[str, Any]) -> str:
        path = Path(str(arguments.get("path", ""))).expanduser().resolve()
        if not any(path.is_relative_to(root) for root in allowed):
            raise MemoryBankError(f"visit: {path} is outside the allowed directories")
        if not path.is_file():
            raise MemoryBankError(f"visit: no such file {path}")
        return path.read_text(encoding="utf-8", errors="replace")

    return visit


def openai_chat(config: Any) -> Chat:
    """The ReAct model on the configured OpenAI-compatible endpoint (`llm` settings): retries,
    the response cache and the ledger of `ChatClient`, role "react"."""
    from memory_bank.llm.client import ChatClient

    client = ChatClient(config)
    model = config.chat_model or config.model
    temperature = (
        config.chat_temperature if config.chat_temperature is not None else config.temperature
    )

    def chat(messages: list[dict[str, str]]) -> str:
        request = {"model": model, "temperature": temperature, "messages": messages}
        return client.complete(ROLE, request).content or ""

    return chat


def offline_chat(search: Callable[[str], str]) -> Chat:
    """A model-free policy for the offline backend: search the pending task once, then answer
    with the best passage found."""

    def chat(messages: list[dict[str, str]]) -> str:
        responses = [m["content"] for m in messages if m["content"].startswith("<tool_response>")]
        if not responses:
            task = messages[1]["content"]
            pending = _pending_task(task)
            return f'<tool_call>{{"name": "search", "arguments": {{"query": {json.dumps(pending)}}}}}</tool_call>'
        found = _between(responses[-1], "tool_response") or ""
        best = next(
            (
                line.strip()
                for line in found.splitlines()
                if line.strip() and not line.lstrip().startswith(("[", "#"))
            ),
            "",
        )
        return f"<answer>{best or 'Nothing relevant was found.'}</answer>"

    return chat


def _pending_task(prompt: str) -> str:
    marker = "Pending task:\n1. "
    start = prompt.find(marker)
    if start >= 0:
        return prompt[start + len(marker) :].split("\n", 1)[0]
    goal = prompt.find("Task goal: ")
    return prompt[goal + 11 :].split("\n", 1)[0] if goal >= 0 else prompt[:300]
