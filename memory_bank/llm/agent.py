"""The tool-calling navigation agent (seed 000 §6) of the `openai` backend.

The model gets the store's tools as function schemas (`TOOL_SCHEMAS`, also served at
`GET /tools` so an outside agent can drive a store itself) and calls them in a loop: `ls`,
`cat`, `grep`, `bm25_search`, `vector_search`, `deep_retrieval`, and `answer` to finish. After
`max_iterations` tool calls (or when the model replies in prose instead of calling `answer`) the
answer is synthesized by the backend's `answer` role from the memory files read so far (seed
000 §6.1), and such a forced answer gets a lower confidence. The confidence is not the model's word alone: it is scaled by how much
of what the answer cites was actually read in this run. Every cited file is checked to exist;
the chunk ids of cited memory files come with the result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ToolError
from memory_bank.llm.instructions import role_instructions
from memory_bank.llm.roles import AnswerEvidence, AnswerRequest, AnswerResult
from memory_bank.schemas import ChatResult, TrajectoryStep

MAX_TOOL_OUTPUT = 6000  # characters of a tool result sent back to the model
FORCED_ANSWER_FACTOR = 0.6


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_QUERY = {"query": {"type": "string"}, "top_k": {"type": "integer", "minimum": 1, "maximum": 20}}
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function(
        "ls", "List a directory of the store ('/' is the root).", {"path": {"type": "string"}}, []
    ),
    _function(
        "cat",
        "Read a file of the store (a README.md or a memory file).",
        {"path": {"type": "string"}},
        ["path"],
    ),
    _function(
        "grep",
        "Lines containing a phrase (case-insensitive, not a regex) under a path.",
        {"pattern": {"type": "string"}, "path": {"type": "string"}},
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


class ToolCallingNavigator:
    """Answers questions about one store by letting the model call its tools."""

    def __init__(
        self,
        client: Any,
        tools: Any,
        config: RetrievalConfig,
        model: str,
        temperature: float,
        answer: Callable[[AnswerRequest], AnswerResult],
        search: Any = None,
    ) -> None:

        self.client = client
        self.tools = tools
        self.config = config
        self.model = model
        self.temperature = temperature
        self.answer = answer  # the backend's answer role
        self.search = search  # HybridSearch: what the offline answer needs, if it must stand in
        self.instructions = role_instructions("navigate")
        # What is current (`query.currency`, set by the query service): memory files read are
        # annotated with their superseded claims, and the answer role gets them.
        self.currency: Any = None

    def request(
        self, question: str, max_iterations: int | None = None, system_prompt: str | None = None
    ) -> ChatResult:
        limit = max_iterations or self.config.max_iterations
        system = self.instructions + (f"\n\n{system_prompt.strip()}" if system_prompt else "")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": f"role: navigate\n{system}"},
            {"role": "user", "content": question},
        ]
        run = _Run(question)
        while run.calls < limit:
            message = self._ask(messages, tool_choice="auto")
            messages.append(_assistant(message))
            calls = message.tool_calls or []
            if not calls:  # prose instead of a tool call: answered from what was read
                return self._synthesize(run, system_prompt, forced=True)
            for call in calls:
                arguments = _arguments(call.function.arguments)
                if call.function.name == "answer":
                    return run.result(
                        self.tools,
                        str(arguments.get("answer", "")),
                        [str(s) for s in arguments.get("sources") or []],
                        _confidence(arguments.get("confidence")),
                        forced=False,
                    )
                output = run.execute(self.tools, call.function.name, arguments)
                if self.currency is not None:
                    output += self.currency.tool_note(call.function.name, arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
        return self._synthesize(run, system_prompt, forced=True)

    def _synthesize(self, run: _Run, system_prompt: str | None, forced: bool) -> ChatResult:
        """The answer role over the memory files this run read."""
        evidence = self._evidence(run)
        indices = [e.index for e in evidence if e.index is not None]
        query_vector = self._query_vector(run.question)
        request = AnswerRequest(
            question=run.question,
            evidence=evidence,
            query_vector=query_vector,
            system_prompt=system_prompt,
            claims=self.currency.claims(indices, run.question, query_vector)
            if self.currency is not None
            else [],
        )
        result = self.answer(request)
        if not result.found:
            run.steps.append(TrajectoryStep(action="answer", detail="not found"))
            return run.result(self.tools, result.answer, [], 0.0, forced=forced, record=False)
        answered = run.result(self.tools, result.answer, result.sources, result.confidence, forced)
        answered.history = result.history
        return answered

    def _evidence(self, run: _Run) -> list[AnswerEvidence]:
        """The memory files read (by `cat`, or by `deep_retrieval` of their chunk), in order."""
        memories = self.tools.reader.memories()
        by_path = dict(
            zip(
                memories.column("path").to_pylist(),
                zip(
                    memories.column("chunk_id").to_pylist(),
                    memories.column("index").to_pylist(),
                    memories.column("memory").to_pylist(),
                    strict=True,
                ),
                strict=True,
            )
        )
        path_of_chunk = {chunk_id: path for path, (chunk_id, _, _) in by_path.items()}
        paths = [path.lstrip("/") for path in run.files_read]
        paths += [path_of_chunk[c] for c in sorted(run.chunks_read) if c in path_of_chunk]
        evidence = []
        corpus = getattr(self.search, "corpus", None)
        for path in dict.fromkeys(paths):
            if path not in by_path:
                continue  # a README: a map of the store, not evidence
            chunk_id, index, text = by_path[path]
            sentences, vectors = corpus.chunk_sentences(index) if corpus else ([], None)
            evidence.append(
                AnswerEvidence(
                    path=path,
                    text=text,
                    chunk_id=chunk_id,
                    index=index,
                    vector=corpus.memory_vectors()[index] if corpus else None,
                    sentences=list(sentences) or None,
                    sentence_vectors=vectors if len(sentences) else None,
                )
            )
        return evidence

    def _query_vector(self, question: str) -> Any:
        encode = getattr(self.search, "encode_query", None)
        return encode(question) if encode is not None else None

    def _ask(self, messages: list[dict[str, Any]], tool_choice: Any) -> Any:
        return self.client.complete(
            "navigate",
            {
                "model": self.model,
                "temperature": self.temperature,
                "messages": messages,
                "tools": TOOL_SCHEMAS,
                "tool_choice": tool_choice,
            },
        )


class _Run:
    """What one question's exploration did: steps, files read, directories listed."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.calls = 0
        self.steps: list[TrajectoryStep] = []
        self.files_read: list[str] = []
        self.dirs_explored: list[str] = []
        self.chunks_read: set[str] = set()

    def execute(self, tools: Any, name: str, arguments: dict[str, Any]) -> str:
        self.calls += 1
        target = str(
            arguments.get("path")
            or arguments.get("query")
            or arguments.get("pattern")
            or arguments.get("chunk_id")
            or ""
        )
        try:
            output = self._dispatch(tools, name, arguments)
        except (ToolError, KeyError, TypeError, ValueError) as exc:
            output = f"error: {exc}"
        self.steps.append(
            TrajectoryStep(
                number=self.calls, action=name, target=target, detail=f"{len(output)} chars"
            )
        )
        return output[:MAX_TOOL_OUTPUT]

    def _dispatch(self, tools: Any, name: str, arguments: dict[str, Any]) -> str:
        if name == "ls":
            path = str(arguments.get("path") or "/")
            self.dirs_explored.append(path)
            return "\n".join(f"{e.name}{'/' if e.type == 'dir' else ''}" for e in tools.ls(path))
        if name == "cat":
            path = str(arguments["path"])
            text = tools.cat(path)
            self.files_read.append(path.lstrip("/"))
            return text
        if name == "grep":
            matches = tools.grep(str(arguments["pattern"]), str(arguments.get("path") or "/"))
            return "\n".join(f"{m.file}:{m.line_number}: {m.line}" for m in matches) or "no match"
        if name in ("bm25_search", "vector_search"):
            search = tools.bm25_search if name == "bm25_search" else tools.vector_search
            hits = search(str(arguments["query"]), int(arguments.get("top_k") or 5))
            return json.dumps(
                [
                    {
                        "path": h.chunk_path,
                        "chunk_id": h.chunk_id,
                        "score": round(h.score, 3),
                        "text": h.text[:400],
                    }
                    for h in hits
                ],
                ensure_ascii=False,
            )
        if name == "deep_retrieval":
            chunk_id = str(arguments["chunk_id"])
            text = tools.deep_retrieval(chunk_id)
            self.chunks_read.add(chunk_id)
            return text
        raise ToolError(f"unknown tool {name!r}")

    def result(
        self,
        tools: Any,
        answer: str,
        sources: list[str],
        confidence: float,
        forced: bool,
        record: bool = True,
    ) -> ChatResult:
        checked: list[str] = []
        for source in sources:
            try:
                checked.extend(tools.answer("x", 0.5, [source.lstrip("/")]).sources)
            except ToolError:
                continue  # a path the model made up is not a source
        chunk_ids = _chunk_ids(tools, checked)
        read = {path.lstrip("/") for path in self.files_read}
        supported = sum(1 for s in checked if s in read or chunk_ids.get(s) in self.chunks_read)
        evidence = supported / len(checked) if checked else 0.0
        score = min(max(confidence, 0.0), 1.0) * (0.4 + 0.6 * evidence)
        if forced:
            score *= FORCED_ANSWER_FACTOR
        if record:
            self.steps.append(TrajectoryStep(action="answer", detail="forced" if forced else ""))
        return ChatResult(
            question=self.question,
            answer=answer.strip() or "I could not find an answer in this memory.",
            sources=checked,
            chunk_ids=[chunk_ids[s] for s in checked if s in chunk_ids],
            confidence=round(score, 3),
            files_read=list(dict.fromkeys(self.files_read)),
            dirs_explored=list(dict.fromkeys(self.dirs_explored)),
            trajectory="\n".join(step.render() for step in self.steps),
            steps=self.steps,
        )


def _chunk_ids(tools: Any, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    memories = tools.reader.memories()
    by_path = dict(
        zip(
            memories.column("path").to_pylist(),
            memories.column("chunk_id").to_pylist(),
            strict=True,
        )
    )
    return {path: by_path[path] for path in paths if path in by_path}


def _confidence(value: Any) -> float:
    """The model's stated confidence (0 is a statement too: "not found"); 0.5 when it gave none
    or something that is not a number."""
    try:
        return 0.5 if value is None else float(value)
    except (TypeError, ValueError):
        return 0.5


def _arguments(raw: str | None) -> dict[str, Any]:
    # Arguments that are not a JSON object reach the tool as none: its error goes back to the
    # model, which can call again.
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
    return data
