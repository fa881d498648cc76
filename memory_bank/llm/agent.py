"""The one agent loop: a policy decides the next tool call from what it has observed; the loop
runs the call, records it in the trajectory and hands the observation back, until the policy
concludes or the budget of tool calls is spent.

A policy is a generator: it yields `ToolCall`s (or `Described` ones, which say how the
trajectory should describe them), receives an `Observation` for each, and returns its
conclusion. `ModelPolicy` asks an `LLM` (native tool calls; the endpoint falls back to a text
format where it refuses tools). A capability's offline policy decides by its own rules from the
same observations (the retrieval-guided descent of `query.descent_policy`, the session's
search-once policy in `session.react`).

Tools are the capability's: a `Toolbox` runs a call (its value, typed, is what an offline policy
reads) and renders the value as the text a model reads; `FunctionToolbox` serves tools that are
plain functions of their arguments returning text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from memory_bank.errors import MemoryBankError
from memory_bank.llm.seam import LLM, ToolCall, ToolReply
from memory_bank.schemas import TrajectoryStep

R = TypeVar("R")
MAX_TOOL_TEXT = 6000  # characters of a tool's text a model is sent
# What a failed call observes: the tool's own error, or arguments it cannot take.
TOOL_ERRORS = (MemoryBankError, KeyError, TypeError, ValueError, OSError)
_TARGET_ARGUMENTS = ("path", "query", "pattern", "chunk_id", "node_id")


@dataclass
class Observation:
    """What one tool call gave: its value (for a policy) and its text (for a model), or the
    error it raised."""

    call: ToolCall
    value: Any = None
    text: str = ""
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Described:
    """A tool call with how the trajectory describes it: a text, or one made from what it
    observed."""

    call: ToolCall
    detail: str | Callable[[Observation], str]


class Toolbox(Protocol):
    def run(self, call: ToolCall) -> Any:
        """The tool's value; one of `TOOL_ERRORS` for a call it cannot serve."""

    def render(self, call: ToolCall, value: Any) -> str:
        """The value as the text a model reads."""


Policy = Generator["ToolCall | Described", Observation, R]


@dataclass
class Run:
    """One run of the loop: its budget of tool calls, the calls made, the trajectory."""

    budget: int
    calls: int = 0
    steps: list[TrajectoryStep] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)

    def can_call(self, reserve: int = 0) -> bool:
        """Whether a call still fits the budget with `reserve` calls kept for later."""
        return self.calls + 1 + reserve <= self.budget

    def note(self, action: str, target: str = "", detail: str = "") -> None:
        """A step of the trajectory that calls no tool (a decision, a stop, the answer)."""
        self.steps.append(TrajectoryStep(action=action, target=target, detail=detail))

    @property
    def trajectory(self) -> str:
        return "\n".join(step.render() for step in self.steps)


def run_policy(policy: Policy[R], toolbox: Toolbox, run: Run) -> R | None:
    """Drive `policy` until it concludes (its conclusion) or asks for a call past the budget
    (None)."""
    try:
        decision = next(policy)
        while True:
            if not run.can_call():
                policy.close()
                return None
            decision = policy.send(_execute(decision, toolbox, run))
    except StopIteration as stop:
        return stop.value


def _execute(decision: ToolCall | Described, toolbox: Toolbox, run: Run) -> Observation:
    call = decision.call if isinstance(decision, Described) else decision
    run.calls += 1
    try:
        value = toolbox.run(call)
        observation = Observation(call, value, toolbox.render(call, value))
    except TOOL_ERRORS as exc:
        observation = Observation(call, text=f"error: {exc}", error=str(exc))
    detail = decision.detail if isinstance(decision, Described) else None
    if callable(detail):
        detail = detail(observation)
    run.steps.append(
        TrajectoryStep(
            number=run.calls,
            action=call.name,
            target=_target_of(call.arguments),
            detail=f"{len(observation.text)} chars" if detail is None else detail,
        )
    )
    run.observations.append(observation)
    return observation


def _target_of(arguments: Mapping[str, Any]) -> str:
    """What a call is about, for the trajectory: its path, query, pattern or id."""
    return str(next((arguments[key] for key in _TARGET_ARGUMENTS if arguments.get(key)), ""))


class FunctionToolbox:
    """Tools that are plain functions of their arguments, returning text."""

    def __init__(self, tools: Mapping[str, Callable[[dict[str, Any]], str]]) -> None:
        self.tools = tools

    def run(self, call: ToolCall) -> str:
        if call.name not in self.tools:
            raise MemoryBankError(f"unknown tool {call.name!r}; tools: {', '.join(self.tools)}")
        return self.tools[call.name](dict(call.arguments))

    def render(self, call: ToolCall, value: str) -> str:
        return value[:MAX_TOOL_TEXT]


@dataclass(frozen=True)
class Conclusion:
    """How a model's turns ended: it called the `finish` tool (its arguments), it replied in
    text (its content), the budget of tool calls was spent, or the conversation outgrew the
    context limit."""

    kind: Literal["finish", "text", "budget", "context limit"]
    content: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)


class ModelPolicy:
    """The policy of a model: each turn, the conversation so far and the tools go to `llm`,
    and the tools it calls are run; see the module docstring."""

    def __init__(
        self,
        llm: LLM,
        role: str,
        system: str,
        opening: str,
        tools: Sequence[Mapping[str, Any]],
        *,
        finish: str | None = None,
        context_limit: int | None = None,
        count: Callable[[str], int] | None = None,
    ) -> None:
        """`finish`: the tool whose call ends the run (its arguments are the conclusion);
        `context_limit`: the tokens (as `count` counts them) past which the model is stopped."""
        self.llm = llm
        self.role = role
        self.tools = list(tools)
        self.finish = finish
        self.context_limit = context_limit
        self.count = count or len
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"role: {role}\n{system}"},
            {"role": "user", "content": opening},
        ]

    def decide(self, run: Run) -> Policy[Conclusion]:
        """The model's turns within `run`'s budget (no turn is asked for once it is spent)."""
        while True:
            if not run.can_call():
                return Conclusion("budget")
            if self._over_limit(self.messages):
                return Conclusion("context limit")
            reply = self.llm.complete_with_tools(self.role, self.messages, self.tools)
            self.messages.append(assistant_message(reply))
            if not reply.tool_calls:
                return Conclusion("text", reply.content)
            for call in reply.tool_calls:
                if call.name == self.finish:
                    return Conclusion("finish", arguments=dict(call.arguments))
                observation = yield call
                self.messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": observation.text}
                )

    def conclude(self, instruction: str) -> str:
        """The model's final text, asked for now with `instruction` (past the budget or the
        context limit); the oldest turns are dropped while the conversation is over the
        limit."""
        messages = _answered(self.messages)
        while self._over_limit(messages) and len(messages) > 3:
            del messages[2]  # the oldest turn after the task, with its tool results
            while len(messages) > 2 and messages[2]["role"] == "tool":
                del messages[2]
        messages.append({"role": "user", "content": instruction})
        reply = self.llm.complete_with_tools(self.role, messages, self.tools, tool_choice="none")
        self.messages = [*messages, assistant_message(reply)]
        return reply.content

    def _over_limit(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        if self.context_limit is None:
            return False
        return sum(self.count(_message_text(m)) for m in messages) > self.context_limit


def assistant_message(reply: ToolReply) -> dict[str, Any]:
    """An assistant turn as a message of the conversation (OpenAI chat format)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in reply.tool_calls
        ]
    return message


def _answered(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with a result for every tool call (calls the budget cut off were not run)."""
    answered: list[dict[str, Any]] = []
    pending: list[str] = []
    for message in messages:
        if message["role"] != "tool" and pending:
            answered += [_not_run(call_id) for call_id in pending]
            pending = []
        if message["role"] == "tool" and message["tool_call_id"] in pending:
            pending.remove(message["tool_call_id"])
        answered.append(dict(message))
        if message["role"] == "assistant":
            pending = [call["id"] for call in message.get("tool_calls") or []]
    return answered + [_not_run(call_id) for call_id in pending]


def _not_run(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "not run: no calls left"}


def _message_text(message: Mapping[str, Any]) -> str:
    calls = message.get("tool_calls")
    return (message.get("content") or "") + (json.dumps(calls) if calls else "")
