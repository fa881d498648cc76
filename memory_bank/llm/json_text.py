"""Reading the JSON object out of what a model really replies.

Small local models wrap the object in prose or code fences, use Python literals and single
quotes, leave trailing commas, or stop mid-object when they hit their token limit. The
`json-repair` package handles all of that, but no wheel of it is available to this project's
offline installs, so this module does the bounded subset the roles need: take the outermost
object (or array), try strict JSON, then a lenient pass (single quotes, Python literals,
trailing commas), then close whatever a truncated reply left open. Anything else is an error,
and the caller re-prompts.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_DANGLING_KEY = re.compile(r'([{,])\s*"[^"]*"$')
_PYTHON_LITERALS = {"True": "true", "False": "false", "None": "null"}


def parse_json_reply(text: str) -> Any:
    """The JSON value in a model's reply; ValueError when there is none to recover."""
    if not text or not text.strip():
        raise ValueError("the reply is empty")
    fenced = _FENCE.search(text)
    candidate = fenced.group(1) if fenced else text
    start = min((i for i in (candidate.find("{"), candidate.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("the reply holds no JSON object")
    candidate = candidate[start:]
    for attempt in (candidate, _balanced_prefix(candidate)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
    lenient = _normalize(_balanced_prefix(candidate))
    try:
        return json.loads(lenient)
    except ValueError:
        pass
    closed = _close_truncated(_normalize(candidate))
    try:
        return json.loads(closed)
    except ValueError as exc:
        raise ValueError(f"the reply is not valid JSON even after repair: {exc}") from exc


def _balanced_prefix(text: str) -> str:
    """The first complete top-level object/array of `text` (all of it when never closed)."""
    depth, in_string, quote, escaped = 0, False, "", False
    for position, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                in_string = False
        elif char in "\"'":
            in_string, quote = True, char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return text[: position + 1]
    return text


def _normalize(text: str) -> str:
    """Single-quoted strings to double-quoted, Python literals to JSON, no trailing commas."""
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char in "\"'":
            end = position + 1
            while end < len(text) and text[end] != char:
                end += 2 if text[end] == "\\" else 1
            body = text[position + 1 : end]
            if char == "'":
                body = body.replace('\\"', '"').replace('"', '\\"').replace("\\'", "'")
            out.append(f'"{body}"' if end < len(text) else f'"{body}')
            position = end + 1
            continue
        word = re.match(r"[A-Za-z]+", text[position:])
        if word:
            out.append(_PYTHON_LITERALS.get(word.group(0), word.group(0)))
            position += len(word.group(0))
            continue
        out.append(char)
        position += 1
    return _TRAILING_COMMA.sub(r"\1", "".join(out))


def _close_truncated(text: str) -> str:
    """Close the strings, arrays and objects a reply cut off mid-way left open."""
    stack: list[str] = []
    in_string, escaped = False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    closed = text + ('"' if in_string else "")
    closed = re.sub(r"[,:\s]+$", "", closed)
    if stack and stack[-1] == "}":
        # A key whose value never came ({"a": 1, "b") cannot be closed: drop it.
        closed = _DANGLING_KEY.sub(r"\1", closed)
    return _TRAILING_COMMA.sub(r"\1", closed + "".join(reversed(stack)))
