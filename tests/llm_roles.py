"""Role handlers for the loopback LLM server that answer like a small, literal model would:
deterministic, from the role input alone, so an ingest and a question through the `openai`
backend give a real store and a real answer over the real protocol."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.loopback_llm import LoopbackLLM

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_STOP = {"the", "and", "for", "with", "that", "this", "from", "are", "was", "were", "its", "into"}


def _words(text: str, count: int) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP][:count]


def memorize(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    memories = []
    for chunk in data["chunks"]:
        text = " ".join(chunk["text"].split())
        first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
        memories.append(
            {
                "id": chunk["id"],
                "title": "_".join(_words(text, 4)) or "note",
                "memory": text[: max(80, len(text) * 2 // 5)],
                "tldr": first[:200],
                "keywords": list(dict.fromkeys(_words(text, 12)))[:6],
                "context": f"From {chunk['source']}.",
            }
        )
    return {"memories": memories}


def organize(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """Leaves of `target_leaf` memories in input order, named after their first keyword (under
    one top directory named after the first memory's, when the input is one group)."""
    size = data["bounds"]["target_leaf"]
    memories = data["memories"]
    leaves, used = [], set()
    for start in range(0, len(memories), size):
        group = memories[start : start + size]
        if len(group) < data["bounds"]["min_leaf"] and leaves:
            leaves[-1]["memories"].extend(m["index"] for m in group)
            continue
        name = next(iter(_words(" ".join(group[0]["keywords"] or [group[0]["title"]]), 1)), "topic")
        base, number = name, 2
        while name in used:
            name, number = f"{base}_{number}", number + 1
        used.add(name)
        leaves.append(
            {
                "path": f"/{name}",
                "description": f"Notes on {base}.",
                "memories": [m["index"] for m in group],
            }
        )
    if data["bounds"].get("single_top_directory"):
        top = next(iter(_words(" ".join(memories[0]["keywords"] or [memories[0]["title"]]), 1)))
        for leaf in leaves:
            leaf["path"] = f"/{top or 'group'}_all{leaf['path']}"
    return {"leaves": leaves}


def readme(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    summaries = []
    for directory in data["directories"]:
        parts = [child["name"] for child in directory["subdirectories"]] + [
            file["title"] for file in directory["files"]
        ]
        summaries.append(
            {
                "path": directory["path"],
                "summary": f"This directory holds {', '.join(parts[:4]) or 'nothing yet'}.",
            }
        )
    return {"summaries": summaries}


def split(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """Cut as late as fits: a new chunk starts at the piece that would overflow this one."""
    splits = []
    for section in data["sections"]:
        cuts, size = [], 0
        for piece in section["pieces"]:
            if size and size + piece["tokens"] > data["max_tokens"]:
                cuts.append(piece["id"])
                size = 0
            size += piece["tokens"]
        splits.append({"section": section["section"], "cuts": cuts})
    return {"splits": splits}


def place(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """Each memory into its most similar candidate leaf."""
    return {
        "placements": [
            {"id": memory["id"], "directory": memory["candidates"][0]["directory"]}
            for memory in data["memories"]
        ]
    }


def answer(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """The first sentence of the first evidence, citing it."""
    first = data["evidence"][0]
    sentence = re.split(r"(?<=[.!?])\s", " ".join(first["text"].split()), maxsplit=1)[0]
    return {"answer": sentence, "sources": [first["path"]], "confidence": 0.7, "found": True}


def navigate(_: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Search for the question, read the best hit, answer with it as the source."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    tool_results = [m for m in messages if m["role"] == "tool"]
    forced = isinstance(body.get("tool_choice"), dict)
    if not tool_results and not forced:
        return {"tool_calls": [{"name": "bm25_search", "arguments": {"query": question}}]}
    if len(tool_results) == 1 and not forced:
        hits = json.loads(tool_results[0]["content"])
        return {"tool_calls": [{"name": "cat", "arguments": {"path": hits[0]["path"]}}]}
    read = tool_results[-1]["content"] if tool_results else ""
    path = _last_cat_path(messages)
    return {
        "tool_calls": [
            {
                "name": "answer",
                "arguments": {
                    "answer": read.split("---")[-1].strip()[:300] or "not found",
                    "sources": [path] if path else [],
                    "confidence": 0.8,
                },
            }
        ]
    }


def _last_cat_path(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call["function"]["name"] == "cat":
                return json.loads(call["function"]["arguments"])["path"]
    return None


def register_literal_model(llm: LoopbackLLM) -> LoopbackLLM:
    for role, handler in (
        ("split", split),
        ("memorize", memorize),
        ("organize", organize),
        ("place", place),
        ("readme", readme),
        ("navigate", navigate),
        ("answer", answer),
    ):
        llm.handle(role, handler)
    return llm
