"""The research loop with a model deciding each step (seed 003's ResearchAgent); offline, the
research agent of `agent.py`.

Each round is three model calls with the typed roles of `roles.py`:
- `research_plan`: the request and the abstracts of the pages the store's hybrid search finds
  for the question ("page i") -> a `SearchPlan` (sub-questions, keyword queries, vector
  queries, pages to read);
- the plan runs on the store: keyword queries through BM25, vector queries through the vector
  index, page numbers read directly (`ResearchTools`); every hit is a page of the store, its id
  the chunk file's path;
- `research_integrate`: the question, this round's hits and the running result -> the merged
  `ResearchResult` (content and the page ids it rests on; ids the model did not see are sent
  back as a validation problem);
- `research_reflect`: the question and the result -> `ReflectionDecision`: enough, or 1-5
  follow-up requests, which become the next round's request.

A step whose replies stay unusable (after the client's repairs) ends the model's loop: the
offline research agent answers instead, counted as a fallback of that role.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from memory_bank.config import ResearchConfig, RetrievalConfig
from memory_bank.errors import LLMError, ToolError
from memory_bank.index.bm25 import top_positive
from memory_bank.index.hybrid import HybridSearch
from memory_bank.llm.seam import LLM, prompt
from memory_bank.query.answer_sentences import calibrate_confidence
from memory_bank.query.question import content_terms, term_coverage
from memory_bank.research.agent import ResearchAgent
from memory_bank.research.roles import (
    Hit,
    ReflectionDecision,
    ReflectRequest,
    ResearchIntegrateRequest,
    ResearchPlanRequest,
    ResearchResult,
    SearchPlan,
)
from memory_bank.schemas import ChatResult, TrajectoryStep
from memory_bank.text.lexicon import text_stems

PAGES = 8  # abstracts shown to the planner: the question's best hybrid hits
HITS_PER_QUERY = 3
MAX_QUERIES = 5  # of each kind per plan
SNIPPET_CHARS = 1500
NOT_FOUND_ANSWER = "The memory does not contain information to answer this question."


class ResearchTools:
    """The search tools of a plan over one store: keyword, vector and page reads."""

    def __init__(self, search: HybridSearch) -> None:
        self.search = search
        self.corpus = search.corpus

    def pages(self, question: str) -> list[int]:
        vector = self.search.encode_query(question)
        return [index for index, _ in self.search.hybrid_candidates(question, vector)[:PAGES]]

    def abstract(self, index: int) -> str:
        return self.corpus.chunk_text(index)[:300]

    def keyword(self, query: str) -> list[tuple[int, float]]:
        return top_positive(self.search.bm25_scores(query), HITS_PER_QUERY)

    def vector(self, queries: list[str]) -> list[list[tuple[int, float]]]:
        if not queries:
            return []
        if self.search.embedder is None:
            raise ToolError("vector search needs an embedding model")
        vectors = np.asarray(self.search.embedder.encode(queries), dtype=np.float32)
        return [self.search.vector_candidates(vector, HITS_PER_QUERY) for vector in vectors]

    def hit(self, index: int, score: float | None, tool: str) -> Hit:
        return Hit(
            page_id=self.corpus.chunk_path(index),
            snippet=self.corpus.chunk_text(index)[:SNIPPET_CHARS],
            source=tool,
            score=None if score is None else round(float(score), 4),
        )


class LLMResearcher:
    """Research with a model deciding each step (see the module docstring)."""

    def __init__(
        self,
        llm: LLM,
        search: HybridSearch,
        config: ResearchConfig,
        retrieval: RetrievalConfig,
    ) -> None:
        self.llm = llm
        self.search = search
        self.config = config
        self.retrieval = retrieval
        self.tools = ResearchTools(search)

    def research(self, question: str, max_iterations: int | None = None) -> ChatResult:
        if not question.strip():
            raise ToolError("the question must not be empty")
        rounds = self.config.max_iterations if max_iterations is None else max_iterations
        if rounds < 1:
            raise ToolError(f"max_iterations must be at least 1, got {rounds}")
        if self.tools.corpus.num_chunks == 0:
            return self._offline(question, rounds, "the store is empty")
        steps: list[TrajectoryStep] = []
        pages = self.tools.pages(question)
        abstracts = [self.tools.abstract(index) for index in pages]
        seen: dict[str, int] = {}  # page id -> memory index, every page shown to the model
        result = ResearchResult(content="", sources=[])
        request = question
        for number in range(1, rounds + 1):
            try:
                plan = self._plan(request, abstracts)
                steps.append(_step("plan", f"round {number}", "; ".join(plan.info_needs)))
                hits = self._run(plan, pages, seen, steps)
                result = self._integrate(question, hits, result, seen)
                steps.append(
                    _step("integrate", f"round {number}", f"{len(result.sources)} sources")
                )
                decision = self._reflect(question, result)
            except LLMError as exc:
                steps.append(_step("stop", detail=f"model step failed: {exc}"))
                return self._offline(question, rounds, f"model step failed ({exc})", steps)
            steps.append(
                _step(
                    "reflect",
                    f"round {number}",
                    "enough" if decision.enough else "; ".join(decision.new_requests),
                )
            )
            if decision.enough or not decision.new_requests:
                break
            request = " ".join(decision.new_requests)
        return self._result(question, result, seen, steps)

    # --- the model's steps --------------------------------------------------------------------

    def _structured(self, role: str, payload: Any, result_model: type, check=None) -> Any:
        try:
            return self.llm.complete(
                role, prompt(__package__, role), payload, result_model, check=check, purpose="chat"
            )
        except LLMError:
            self.llm.ledger.count(role, "fallbacks")
            raise

    def _plan(self, request: str, abstracts: list[str]) -> SearchPlan:
        payload = ResearchPlanRequest(question=request, abstracts=abstracts).model_dump()

        def check(plan: SearchPlan) -> list[str]:
            return [
                f"page_index {page} is not one of the pages 0..{len(abstracts) - 1}"
                for page in plan.page_index
                if not 0 <= page < len(abstracts)
            ]

        return self._structured("research_plan", payload, SearchPlan, check)

    def _run(
        self,
        plan: SearchPlan,
        pages: list[int],
        seen: dict[str, int],
        steps: list[TrajectoryStep],
    ) -> list[Hit]:
        hits: dict[str, Hit] = {}

        def keep(index: int, score: float | None, tool: str) -> None:
            hit = self.tools.hit(index, score, tool)
            seen[hit.page_id] = index
            hits.setdefault(hit.page_id, hit)

        for query in plan.keyword_collection[:MAX_QUERIES]:
            found = self.tools.keyword(query)
            for index, score in found:
                keep(index, score, "keyword")
            steps.append(
                _step("search", query, f"(keyword) -> {len(found)} hits", number=_next_call(steps))
            )
        queries = plan.vector_queries[:MAX_QUERIES]
        for query, found in zip(queries, self.tools.vector(queries), strict=True):
            for index, score in found:
                keep(index, score, "vector")
            steps.append(
                _step("search", query, f"(vector) -> {len(found)} hits", number=_next_call(steps))
            )
        for page in plan.page_index[:MAX_QUERIES]:
            keep(pages[page], None, "page_index")
            steps.append(
                _step("cat", self.tools.corpus.chunk_path(pages[page]), number=_next_call(steps))
            )
        return list(hits.values())

    def _integrate(
        self, question: str, hits: list[Hit], result: ResearchResult, seen: dict[str, int]
    ) -> ResearchResult:
        payload = ResearchIntegrateRequest(
            question=question, evidence=hits, result=result.content
        ).model_dump()

        def check(reply: ResearchResult) -> list[str]:
            return [
                f"source {source!r} is not a page id of the evidence or the result"
                for source in reply.sources
                if source not in seen
            ]

        return self._structured("research_integrate", payload, ResearchResult, check)

    def _reflect(self, question: str, result: ResearchResult) -> ReflectionDecision:
        payload = ReflectRequest(question=question, result=result).model_dump()
        return self._structured("research_reflect", payload, ReflectionDecision)

    # --- results ------------------------------------------------------------------------------

    def _result(
        self,
        question: str,
        result: ResearchResult,
        seen: dict[str, int],
        steps: list[TrajectoryStep],
    ) -> ChatResult:
        indices = list(dict.fromkeys(seen[source] for source in result.sources if source in seen))
        if not result.content.strip() or not indices:
            steps.append(_step("answer", detail="not found"))
            return _chat(question, NOT_FOUND_ANSWER, [], [], 0.0, steps, self.tools.corpus)
        terms = content_terms(question)
        vector = self.search.encode_query(question)
        evidence = frozenset().union(
            *(text_stems(self.tools.corpus.chunk_text(i)) for i in indices)
        )
        confidence = calibrate_confidence(
            float(self.search.cosines(vector, indices).max()),
            term_coverage(terms, evidence) if terms else None,
        )
        steps.append(
            _step("answer", detail=f"{len(indices)} sources (confidence {confidence:.2f})")
        )
        return _chat(
            question, result.content.strip(), indices, indices, confidence, steps, self.tools.corpus
        )

    def _offline(
        self,
        question: str,
        rounds: int,
        reason: str,
        steps: list[TrajectoryStep] | None = None,
    ) -> ChatResult:
        answered = ResearchAgent(self.search, self.config, self.retrieval).research(
            question, max_iterations=rounds
        )
        all_steps = [*(steps or []), *answered.steps]
        return answered.model_copy(
            update={
                "steps": all_steps,
                "trajectory": "\n".join(step.render() for step in all_steps),
                "notes": f"offline research ({reason})",
            }
        )


def _step(
    action: str, target: str = "", detail: str = "", number: int | None = None
) -> TrajectoryStep:
    return TrajectoryStep(number=number, action=action, target=target, detail=detail)


def _next_call(steps: list[TrajectoryStep]) -> int:
    return 1 + sum(1 for step in steps if step.number is not None)


def _chat(
    question: str,
    answer: str,
    indices: list[int],
    read: list[int],
    confidence: float,
    steps: list[TrajectoryStep],
    corpus: Any,
) -> ChatResult:
    sources = [corpus.chunk_path(index) for index in indices]
    return ChatResult(
        question=question,
        answer=answer,
        sources=sources,
        confidence=round(max(0.0, min(confidence, 1.0)), 3),
        chunk_ids=[corpus.chunk_ids[index] for index in indices],
        files_read=[corpus.chunk_path(index) for index in read],
        trajectory="\n".join(step.render() for step in steps),
        steps=steps,
        notes="research through the model",
    )


def researcher(
    search: HybridSearch, config: ResearchConfig, retrieval: RetrievalConfig, llm: LLM | None
) -> ResearchAgent | LLMResearcher:
    """The research loop over one store's search: the model's, or offline the research agent."""
    if llm is None:
        return ResearchAgent(search, config, retrieval)
    return LLMResearcher(llm, search, config, retrieval)
