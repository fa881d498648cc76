"""The navigation agent (seed 000 §6): answers a question about one store by exploring it with
its tools, on the one agent loop (`llm.agent`), and cites the memory files it rests on.

Who decides the next tool call is the policy: with a model, `ModelPolicy` over `TOOL_SCHEMAS`
(the model calls `answer` to finish); offline, the retrieval-guided descent of
`descent_policy`. With a model, after `max_iterations` tool calls (or when the model replies in
prose instead of calling `answer`) the answer is synthesized by the `answer` role from the
memory files read so far (seed 000 §6.1), and such a forced answer gets a lower confidence. The
confidence is not the model's word alone: it is scaled by how much of what the answer cites
was actually read in this run. Every cited file is checked to exist; the chunk ids of cited
memory files come with the result.
"""

from __future__ import annotations

from typing import Any

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ToolError
from memory_bank.index.embedding import TextEncoder
from memory_bank.index.hybrid import HybridSearch
from memory_bank.llm.agent import ModelPolicy, Run, run_policy
from memory_bank.llm.seam import LLM, prompt
from memory_bank.query.answer_role import answer
from memory_bank.query.currency import Currency
from memory_bank.query.descent_policy import DescentPolicy, readme_stems
from memory_bank.query.roles import AnswerEvidence, AnswerRequest, memory_evidence
from memory_bank.query.toolbox import TOOL_SCHEMAS, StoreToolbox
from memory_bank.query.tools import StoreTools
from memory_bank.schemas import ChatResult

ROLE = "navigate"
FORCED_ANSWER_FACTOR = 0.6


class NavigationAgent:
    """Answers questions about one store (see the module docstring)."""

    def __init__(
        self,
        tools: StoreTools,
        search: HybridSearch,
        embedder: TextEncoder | None = None,
        config: RetrievalConfig | None = None,
        llm: LLM | None = None,
    ) -> None:
        """`llm`: the model that decides (None: the offline descent)."""
        self.tools = tools
        self.search = search
        self.embedder = embedder or search.embedder
        self.config = config or search.config
        self.llm = llm
        self._readme_stems: list[frozenset[str]] | None = None
        # What is current (`query.currency`): set by the query service when the store has a
        # Query Graph; the answer then states current claims, the replaced ones as history.
        self.currency: Currency | None = None

    def request(
        self, question: str, max_iterations: int | None = None, system_prompt: str | None = None
    ) -> ChatResult:
        """Explore the store for `question` with at most `max_iterations` tool calls and answer.
        `system_prompt` adds instructions for a model (the offline policy has none to add)."""
        if not question.strip():
            raise ToolError("the question must not be empty")
        budget = self.config.max_iterations if max_iterations is None else max_iterations
        if budget < 1:
            raise ToolError(f"max_iterations must be at least 1, got {budget}")
        run = Run(budget)
        toolbox = StoreToolbox(self.tools, self.search, self.currency)
        if self.llm is None:
            if self._readme_stems is None:
                self._readme_stems = readme_stems(self.search)
            policy = DescentPolicy(
                question, run, toolbox, self.search, self.config, self._readme_stems, self.embedder
            )
            return run_policy(policy.decide(), toolbox, run)
        return self._ask_model(question, run, toolbox, system_prompt)

    # --- with a model -----------------------------------------------------------------------

    def _ask_model(
        self, question: str, run: Run, toolbox: StoreToolbox, system_prompt: str | None
    ) -> ChatResult:
        system = prompt(__package__, ROLE)
        if system_prompt:
            system += f"\n\n{system_prompt.strip()}"
        policy = ModelPolicy(self.llm, ROLE, system, question, TOOL_SCHEMAS, finish="answer")
        conclusion = run_policy(policy.decide(run), toolbox, run)
        if conclusion is None or conclusion.kind != "finish":
            return self._synthesize(question, run, toolbox, system_prompt)
        arguments = conclusion.arguments
        return self._result(
            question,
            run,
            toolbox,
            str(arguments.get("answer", "")),
            [str(source) for source in arguments.get("sources") or []],
            _confidence(arguments.get("confidence")),
            forced=False,
        )

    def _synthesize(
        self, question: str, run: Run, toolbox: StoreToolbox, system_prompt: str | None
    ) -> ChatResult:
        """The answer role over the memory files this run read: a forced answer."""
        evidence = self._evidence(toolbox)
        indices = [e.index for e in evidence if e.index is not None]
        query_vector = self.search.encode_query(question)
        request = AnswerRequest(
            question=question,
            evidence=evidence,
            query_vector=query_vector,
            system_prompt=system_prompt,
            claims=self.currency.claims(indices, question, query_vector)
            if self.currency is not None
            else [],
        )
        result = answer(request, self.llm)
        if not result.found:
            run.note("answer", detail="not found")
            return self._result(question, run, toolbox, result.answer, [], 0.0, True, False)
        answered = self._result(
            question, run, toolbox, result.answer, result.sources, result.confidence, True
        )
        answered.history = result.history
        return answered

    def _evidence(self, toolbox: StoreToolbox) -> list[AnswerEvidence]:
        """The memory files read (by `cat`, or by `deep_retrieval` of their chunk), in order."""
        column = self.tools.reader.memories().column
        rows = zip(
            *(column(name).to_pylist() for name in ("chunk_id", "index", "memory")), strict=True
        )
        by_path = dict(zip(column("path").to_pylist(), rows, strict=True))
        path_of_chunk = {chunk_id: path for path, (chunk_id, _, _) in by_path.items()}
        paths = list(toolbox.files_read)
        paths += [path_of_chunk[c] for c in sorted(toolbox.chunks_read) if c in path_of_chunk]
        # A README read is a map of the store, not evidence.
        read = [by_path[path] for path in dict.fromkeys(paths) if path in by_path]
        corpus = self.search.corpus
        return [memory_evidence(corpus, index, text, chunk_id) for chunk_id, index, text in read]

    def _result(
        self,
        question: str,
        run: Run,
        toolbox: StoreToolbox,
        text: str,
        sources: list[str],
        confidence: float,
        forced: bool,
        record: bool = True,
    ) -> ChatResult:
        checked: list[str] = []
        for source in sources:
            try:
                checked.extend(self.tools.answer("x", 0.5, [source.lstrip("/")]).sources)
            except ToolError:
                continue  # a path the model made up is not a source
        chunk_ids = _chunk_ids(self.tools, checked)
        read = set(toolbox.files_read)
        supported = sum(1 for s in checked if s in read or chunk_ids.get(s) in toolbox.chunks_read)
        evidence = supported / len(checked) if checked else 0.0
        score = min(max(confidence, 0.0), 1.0) * (0.4 + 0.6 * evidence)
        if forced:
            score *= FORCED_ANSWER_FACTOR
        if record:
            run.note("answer", detail="forced" if forced else "")
        return ChatResult(
            question=question,
            answer=text.strip() or "I could not find an answer in this memory.",
            sources=checked,
            chunk_ids=[chunk_ids[s] for s in checked if s in chunk_ids],
            confidence=round(score, 3),
            files_read=toolbox.files_read,
            dirs_explored=toolbox.dirs_explored,
            trajectory=run.trajectory,
            steps=run.steps,
        )


def _chunk_ids(tools: StoreTools, paths: list[str]) -> dict[str, str]:
    if not paths:
        return {}
    column = tools.reader.memories().column
    by_path = dict(zip(column("path").to_pylist(), column("chunk_id").to_pylist(), strict=True))
    return {path: by_path[path] for path in paths if path in by_path}


def _confidence(value: Any) -> float:
    """The model's stated confidence (0 is a statement too: "not found"); 0.5 when it gave none
    or something that is not a number."""
    try:
        return 0.5 if value is None else float(value)
    except (TypeError, ValueError):
        return 0.5
