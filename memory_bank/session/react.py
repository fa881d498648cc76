"""A ReAct agent for a session (seed 002 §4.2 step 1, §6.4, §12): think, call a tool, observe,
until it answers; on the one agent loop (`llm.agent`).

Tools: `search` (the store: memories and session memories), `visit` (a local file, inside the
roots it is given), `deep_retrieval` (the raw contexts behind a memory id). With a model, the
model calls them (natively, or in the text format where the endpoint refuses tools) and its
reply without a tool call is the answer; when the conversation grows past
`max_context_tokens`, or after `max_calls` tool calls, the model is told to answer now and what
it says is the answer (a forced answer). Offline, the policy searches the pending task once and
answers with the best passage found.

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
from memory_bank.llm.agent import FunctionToolbox, ModelPolicy, Policy, Run, run_policy
from memory_bank.llm.seam import LLM, ToolCall
from memory_bank.llm.tool_text import between
from memory_bank.text.tokens import count_tokens

ROLE = "react"
SYSTEM_PROMPT = """You are a research agent working on a task with a memory. Think step by step
and use the tools to find what the task needs; when you know the answer, reply with it without
calling a tool."""
FORCE_ANSWER = (
    "You have reached the limit of this conversation. Give your final answer now, "
    "from what you have found."
)
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {argument: {"type": "string"}},
                "required": [argument],
            },
        },
    }
    for name, argument, description in (
        ("search", "query", "Search the memory store; returns the best passages."),
        ("visit", "path", "Read a local file."),
        ("deep_retrieval", "node_id", "The raw contexts behind a memory of the prompt."),
    )
]

Tool = Callable[[dict[str, Any]], str]
Termination = Literal["answer", "token limit", "max calls"]


@dataclass
class ReactResult:
    question: str
    prediction: str
    messages: list[dict[str, Any]]  # the conversation with the model (none offline)
    termination: Termination
    tool_responses: list[str] = field(default_factory=list)


class ReactAgent:
    def __init__(
        self,
        llm: LLM | None,
        tools: dict[str, Tool],
        max_calls: int = 60,
        max_context_tokens: int = 32_000,
        count: Callable[[str], int] = count_tokens,
    ) -> None:
        """`llm`: the model that acts (None: the offline policy); at most `max_calls` tool
        calls."""
        self.llm = llm
        self.tools = tools
        self.max_calls = max_calls
        self.max_context_tokens = max_context_tokens
        self.count = count

    def run(self, prompt: str, question: str | None = None) -> ReactResult:
        task = question or prompt
        # The fenced block carries the task for tools and test servers that read one.
        opening = f"{prompt}\n\nTask:\n```json\n{json.dumps({'question': task})}\n```"
        run = Run(self.max_calls)
        toolbox = FunctionToolbox(self.tools)
        if self.llm is None:
            answer = run_policy(search_once(opening), toolbox, run) or ""
            return ReactResult(task, answer, [], "answer", _responses(run))
        policy = ModelPolicy(
            self.llm,
            ROLE,
            SYSTEM_PROMPT,
            opening,
            [schema for schema in TOOL_SCHEMAS if schema["function"]["name"] in self.tools],
            context_limit=self.max_context_tokens,
            count=self.count,
        )
        conclusion = run_policy(policy.decide(run), toolbox, run)
        if conclusion is not None and conclusion.kind == "text":
            prediction, termination = _answer_in(conclusion.content), "answer"
        else:
            # Seed 002 §12: past the token limit or the call limit, the model must answer now.
            termination = (
                "token limit"
                if conclusion is not None and conclusion.kind == "context limit"
                else "max calls"
            )
            prediction = _answer_in(policy.conclude(FORCE_ANSWER))
        return ReactResult(task, prediction, policy.messages, termination, _responses(run))


def search_once(prompt: str) -> Policy[str]:
    """The offline policy: search the pending task once, then answer with the best passage
    found (its first line that is not a heading or a source tag)."""
    found = yield ToolCall("search", {"query": _pending_task(prompt)})
    best = next(
        (
            line.strip()
            for line in found.text.strip().splitlines()
            if line.strip() and not line.lstrip().startswith(("[", "#"))
        ),
        "",
    )
    return best or "Nothing relevant was found."


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


def _answer_in(reply: str) -> str:
    answer = between(reply, "answer")
    return (answer if answer is not None else reply).strip()


def _responses(run: Run) -> list[str]:
    return [observation.text for observation in run.observations]


def _pending_task(prompt: str) -> str:
    marker = "Pending task:\n1. "
    start = prompt.find(marker)
    if start >= 0:
        return prompt[start + len(marker) :].split("\n", 1)[0]
    goal = prompt.find("Task goal: ")
    return prompt[goal + 11 :].split("\n", 1)[0] if goal >= 0 else prompt[:300]
