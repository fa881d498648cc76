"""Tool calls written as text, for endpoints that refuse the `tools` parameter.

The same conversation as with native tool calls, rewritten: the system message lists the tools
and the protocol; an assistant's tool calls become `<tool_call>{"name": ..., "arguments": {...}}
</tool_call>` in its text, and a tool's result a user message `<tool_response>...
</tool_response>`. A reply is read back into tool calls; a reply with `<answer>...</answer>`
(or with no tool call) is the assistant's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memory_bank.llm.json_text import parse_json_reply
from memory_bank.llm.seam import ToolCall, ToolReply

PROTOCOL = (
    "To use a tool, write exactly one "
    '<tool_call>{"name": "...", "arguments": {...}}</tool_call> and stop; its result comes '
    "back in <tool_response>...</tool_response>. When you are done, write your final reply "
    "in <answer>...</answer>."
)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def tagged_messages(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`messages` in the text format, the tools described in the first system message."""
    tagged: list[dict[str, Any]] = []
    described = False
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if role == "system" and not described:
            tagged.append({"role": "system", "content": f"{content}\n\n{_tool_list(tools)}"})
            described = True
        elif role == "assistant":
            calls = "".join(
                "<tool_call>"
                + json.dumps(
                    {
                        "name": call["function"]["name"],
                        "arguments": arguments_of(call["function"]["arguments"]),
                    },
                    ensure_ascii=False,
                )
                + "</tool_call>"
                for call in message.get("tool_calls") or []
            )
            tagged.append({"role": "assistant", "content": content + calls})
        elif role == "tool":
            tagged.append(
                {"role": "user", "content": f"<tool_response>\n{content}\n</tool_response>"}
            )
        else:
            tagged.append({"role": role, "content": content})
    return tagged


def read_tagged(text: str) -> ToolReply:
    """A text-format reply as an assistant turn: its answer, else its tool calls."""
    answer = between(text, "answer")
    if answer is not None:
        return ToolReply(content=answer)
    calls = []
    for number, block in enumerate(_TOOL_CALL.findall(text), start=1):
        try:
            parsed = parse_json_reply(block)
            name, arguments = str(parsed["name"]), parsed.get("arguments") or {}
        except (ValueError, KeyError, TypeError):
            name, arguments = "", {}  # the unknown tool's error goes back to the model
        if not isinstance(arguments, dict):
            arguments = {}
        calls.append(ToolCall(name=name, arguments=arguments, id=f"text_call_{number}"))
    return ToolReply(content=text.strip() if not calls else "", tool_calls=calls)


def between(text: str, tag: str) -> str | None:
    """What stands between `<tag>` and `</tag>` (to the end when it is not closed)."""
    start = text.find(f"<{tag}>")
    if start < 0:
        return None
    end = text.find(f"</{tag}>", start)
    return text[start + len(tag) + 2 : end if end >= 0 else len(text)].strip()


def _tool_list(tools: Sequence[Mapping[str, Any]]) -> str:
    lines = ["Tools:"]
    for tool in tools:
        function = tool["function"]
        parameters = json.dumps(function.get("parameters", {}).get("properties", {}))
        lines.append(f"- {function['name']}: {parameters} -- {function.get('description', '')}")
    return "\n".join([*lines, PROTOCOL])


def arguments_of(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict: arguments that are not a JSON object reach the tool as
    none, and its error goes back to the model, which can call again."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
