"""The navigation tools of one question over one store, as the agent loop calls them.

`TOOL_SCHEMAS` are the tools a model is offered (also served at `GET /tools`, so an outside
agent can drive a store itself): `ls`, `cat`, `grep`, `bm25_search`, `vector_search`,
`deep_retrieval`, and `answer` to finish. An offline policy also calls `search` (the hybrid
search with its scores for every memory). Each call gives a typed value (what a policy reads)
and a text (what a model reads: at most `MAX_TOOL_TEXT` characters, then what the Query Graph
knows of the claims it shows). The toolbox keeps what the question's run read: files,
directories, chunks.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import numpy as np

from memory_bank.errors import ToolError
from memory_bank.index.hybrid import HybridSearch
from memory_bank.llm.agent import MAX_TOOL_TEXT
from memory_bank.llm.seam import ToolCall
from memory_bank.query.currency import Currency
from memory_bank.query.tools import StoreTools


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"path": {"type": "string"}}
_QUERY = {"query": {"type": "string"}, "top_k": {"type": "integer", "minimum": 1, "maximum": 20}}
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function("ls", "List a directory of the store ('/' is the root).", _PATH, []),
    _function("cat", "Read a file of the store (a README.md or a memory file).", _PATH, ["path"]),
    _function(
        "grep",
        "Lines containing a phrase (case-insensitive, not a regex) under a path.",
        {"pattern": {"type": "string"}} | _PATH,
        ["pattern"],
    ),
    _function("bm25_search", "Keyword search over the memories, best first.", _QUERY, ["query"]),
    _function("vector_search", "Meaning search over the memories, best first.", _QUERY, ["query"]),
    _function(
        "deep_retrieval",
        "The raw source text of a chunk, by its chunk_id.",
        {"chunk_id": {"type": "string"}},
        ["chunk_id"],
    ),
    _function(
        "answer",
        "Give the final answer, the files it rests on and a confidence from 0 to 1.",
        {
            "answer": {"type": "string"},
            "sources": {"type": "array", "items": {"type": "string"}},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        ["answer", "sources"],
    ),
]


class Found(NamedTuple):
    """What the hybrid `search` gives: its candidates, best first, and the scores behind them."""

    candidates: list[tuple[int, float]]  # (memory index, hybrid score)
    query_vector: np.ndarray
    bm25_scores: np.ndarray


class StoreToolbox:
    """The tools of one question (see the module docstring)."""

    def __init__(
        self, tools: StoreTools, search: HybridSearch | None, currency: Currency | None = None
    ) -> None:
        self.tools = tools
        self.search = search
        self.currency = currency
        self.files_read: list[str] = []
        self.dirs_explored: list[str] = []
        self.chunks_read: set[str] = set()

    def read(self, path: str) -> None:
        if path not in self.files_read:
            self.files_read.append(path)

    def explore(self, directory: str) -> None:
        if directory not in self.dirs_explored:
            self.dirs_explored.append(directory)

    def run(self, call: ToolCall) -> Any:
        name, arguments = call.name, call.arguments
        if name == "ls":
            path = str(arguments.get("path") or "/")
            self.explore(path)
            return self.tools.ls(path)
        if name == "cat":
            path = str(arguments["path"])
            text = self.tools.cat(path)
            self.read(path.lstrip("/"))
            return text
        if name == "grep":
            pattern, under = str(arguments["pattern"]), str(arguments.get("path") or "/")
            return self.tools.grep(pattern, under, whole_word=bool(arguments.get("whole_word")))
        if name in ("bm25_search", "vector_search"):
            search = self.tools.bm25_search if name == "bm25_search" else self.tools.vector_search
            return search(str(arguments["query"]), int(arguments.get("top_k") or 5))
        if name == "deep_retrieval":
            chunk_id = str(arguments["chunk_id"])
            text = self.tools.deep_retrieval(chunk_id)
            self.chunks_read.add(chunk_id)
            return text
        if name == "search" and self.search is not None:
            question = str(arguments["query"])
            vector = self.search.encode_query(question)
            scores = self.search.bm25_scores(question)
            return Found(
                self.search.hybrid_candidates(question, vector, bm25_scores=scores), vector, scores
            )
        raise ToolError(f"unknown tool {name!r}")

    def render(self, call: ToolCall, value: Any) -> str:
        text = _text(call.name, value)[:MAX_TOOL_TEXT]
        if self.currency is not None:
            text += self.currency.tool_note(call.name, dict(call.arguments))
        return text


def _text(name: str, value: Any) -> str:
    if name == "ls":
        return "\n".join(f"{e.name}{'/' if e.type == 'dir' else ''}" for e in value)
    if name == "grep":
        return "\n".join(f"{m.file}:{m.line_number}: {m.line}" for m in value) or "no match"
    if name in ("bm25_search", "vector_search"):
        hits = [
            {
                "path": h.chunk_path,
                "chunk_id": h.chunk_id,
                "score": round(h.score, 3),
                "text": h.text[:400],
            }
            for h in value
        ]
        return json.dumps(hits, ensure_ascii=False)
    if name == "search":
        return json.dumps([[index, round(score, 3)] for index, score in value.candidates])
    return str(value)
