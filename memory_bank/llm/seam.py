"""The seam to a language model: the two requests a capability may make of one.

- `complete`: a structured reply. The role's instructions and its input (a JSON-able payload)
  go in; an instance of the role's pydantic reply model comes out, checked by the caller's
  `check` and asked again with the problems until it fits (else `LLMReplyError`).
- `complete_with_tools`: one turn of a tool-using conversation. Messages and tool schemas go
  in; the assistant's text and its tool calls come out (natively where the endpoint takes
  tools, else in a text format the endpoint is told about).

A capability is handed an `LLM`, or None, by the root of its process (the `MemoryBank` facade,
a Ray actor, a Serve replica, a Ray worker). None means the capability's offline strategy: no
network and no model. Each capability owns its roles: the request and reply models, the prompt
(`prompts/<role>.md` in its own package, read with `prompt`), the offline strategy and the
fallback when the model's replies stay unusable.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from memory_bank.config import LLMConfig
from memory_bank.llm.ledger import Ledger

M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")
# Roles that build the store ask the build model; roles that answer ask the chat model.
Purpose = Literal["build", "chat"]
ToolChoice = Literal["auto", "none"]


class RoleModel(BaseModel):
    """Base of a role's requests and replies: strict fields; numpy arrays allowed (the
    offline strategies read vectors a model is never sent)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


@dataclass(frozen=True)
class ToolCall:
    """A tool the assistant (or an offline policy) calls, with its arguments."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class ToolReply:
    """One assistant turn: its text and the tools it calls (none: it answered in text)."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


class LLM(Protocol):
    """A language model behind the seam (see the module docstring)."""

    config: LLMConfig
    ledger: Ledger

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
        """A `reply` for `role`; `check` lists what is wrong with one (sent back to the model);
        at most `attempts` replies are asked for (default: 1 + `llm.repair_attempts`)."""

    def complete_with_tools(
        self,
        role: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        *,
        tool_choice: ToolChoice = "auto",
    ) -> ToolReply:
        """The next assistant turn of `messages` (OpenAI chat format) given `tools` (function
        schemas); `tool_choice="none"` asks for text."""

    def overlapped(self, function: Callable[[Any], R], items: Sequence[Any]) -> list[R]:
        """`function` over `items` with the endpoint's concurrency; results in order."""


@functools.cache
def prompt(package: str, role: str) -> str:
    """The instructions of `role`: `prompts/<role>.md` in the capability's `package`."""
    return resources.files(package).joinpath(f"prompts/{role}.md").read_text("utf-8")
