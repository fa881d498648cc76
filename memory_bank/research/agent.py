"""The offline research agent: plan -> search -> integrate -> reflect, round after round
(seed 003's ResearchAgent without a language model).

1. plan: round one searches the question (BM25 and vectors at once) and each exact entity it
   names (keyword); later rounds search what reflection proposed.
2. search: each query through the store's hybrid search (`HybridSearch`, without title links:
   the hops here come from names read in the text); what a query finds is offered to the
   evidence pool on the question's scale (`evidence.py`).
3. integrate: the running abstract, the best sentences of the leading passages.
4. reflect: coverage of the question's terms by the leading passages; names read in them that
   the question lacks become the next round's queries, with the residual terms
   (`reflection.py`). Stops when the evidence is enough, when nothing new is left to search,
   or at `max_iterations` rounds.

The result is a `ChatResult`: the answer is the abstract, the sources are the evidence passages
best first (at most `retrieval.top_k`), the trajectory shows each round.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from memory_bank.config import ResearchConfig, RetrievalConfig
from memory_bank.errors import ToolError
from memory_bank.index.bm25 import top_positive
from memory_bank.index.hybrid import HybridSearch
from memory_bank.query.answer_sentences import answer_text, calibrate_confidence, complete_lead_ins
from memory_bank.query.question import term_coverage
from memory_bank.research.evidence import EvidencePool, SentenceSource, integrate, score_sentences
from memory_bank.research.plans import (
    ResearchQuery,
    SearchPlan,
    follow_up_plan,
    question_plan,
    question_terms,
)
from memory_bank.research.reflection import reflect
from memory_bank.schemas import ChatResult, TrajectoryStep
from memory_bank.store.tables import directory_of
from memory_bank.text.lexicon import search_tokens, text_stems

NOT_FOUND_THRESHOLD = 0.3
NOT_FOUND_ANSWER = "The memory does not contain information to answer this question."
# Candidates each hybrid query contributes (the pool a final top_k is ranked from).
QUERY_POOL = 50
# A keyword query for an entity the question names lifts this many of its best passages.
KEYWORD_HITS = 1
# A bridge's keyword search (its name alone) proposes this many passages.
NAME_HITS = 10
# A follow-up query lends its chain score to this many of its best passages.
FOLLOW_UP_HITS = 2
# A name whose rarest word occurs in more than this share of the passages (and in more than
# MIN_GENERIC_COUNT of them) is too common to be a bridge.
GENERIC_NAME_SHARE = 0.05
MIN_GENERIC_COUNT = 3
CACHE_SIZE = 4096


@dataclass
class _Run:
    question: str
    query_vector: np.ndarray
    terms: list[str]
    bm25_scores: np.ndarray
    pool: EvidencePool = field(default_factory=EvidencePool)
    steps: list[TrajectoryStep] = field(default_factory=list)
    explored: set[str] = field(default_factory=set)
    searches: int = 0
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # every text embedded

    def step(self, action: str, target: str = "", detail: str = "", *, call: bool = False) -> None:
        if call:
            self.searches += 1
        number = self.searches if call else None
        self.steps.append(
            TrajectoryStep(number=number, action=action, target=target, detail=detail)
        )


class ResearchAgent:
    """Answers multi-hop questions about one store by iterative research (module docstring)."""

    def __init__(
        self,
        search: HybridSearch,
        config: ResearchConfig | None = None,
        retrieval: RetrievalConfig | None = None,
    ) -> None:
        self.search = search
        self.corpus = search.corpus
        self.config = config or ResearchConfig()
        self.retrieval = retrieval or search.config
        self.sentences = SentenceSource(self.corpus, search.embedder)
        # Per-passage words and per-name specificity, remembered across questions (bounded: a
        # store of 100,000 passages must not keep every passage's words).
        self._passage_tokens = functools.lru_cache(maxsize=CACHE_SIZE)(self._tokens_of)
        self._passage_stems = functools.lru_cache(maxsize=CACHE_SIZE)(self._stems_of)
        self._specific = functools.lru_cache(maxsize=CACHE_SIZE)(self._is_specific)

    def research(self, question: str, max_iterations: int | None = None) -> ChatResult:
        if not question.strip():
            raise ToolError("the question must not be empty")
        rounds = self.config.max_iterations if max_iterations is None else max_iterations
        if rounds < 1:
            raise ToolError(f"max_iterations must be at least 1, got {rounds}")
        if self.corpus.num_chunks == 0:
            return self._result(question, [], NOT_FOUND_ANSWER, [], 0.0, "the store is empty")
        plan = question_plan(question)
        # One model call for the question and the names it contains.
        first = [question, *dict.fromkeys(q.subject for q in plan.queries if q.subject)]
        vectors = dict(zip(first, self._encode(first), strict=True))
        run = _Run(
            question,
            vectors[question],
            question_terms(question),
            self.search.bm25_scores(question),
            vectors=vectors,
        )
        reflection = None
        for number in range(1, rounds + 1):
            run.step("plan", f"round {number}", "; ".join(plan.info_needs))
            self._search(run, plan, number)
            leading = [passage.index for passage in run.pool.top(self.config.leading_passages)]
            sentences = score_sentences(self.sentences, leading, run.query_vector, run.terms)
            abstract = integrate(sentences, run.terms)
            run.step(
                "integrate",
                f"round {number}",
                f"{len(abstract)} sentences from {len({s.chunk for s in abstract})} passages",
            )
            reflection = reflect(
                question,
                run.terms,
                leading,
                {index: self._passage_stems(index) for index in leading},
                sentences,
                {index: run.pool.score(index) for index in leading},
                run.explored,
                self._specific,
            )
            run.step(
                "reflect",
                f"round {number}",
                ("enough: " if reflection.enough else "not enough: ") + reflection.reason,
            )
            if reflection.enough:
                break
            plan = follow_up_plan(question, reflection, self.config.follow_ups)
            if not plan.queries:
                run.step("stop", detail="no follow-up query left")
                break
        else:
            if reflection is not None and not reflection.enough:
                run.step("stop", detail=f"max_iterations={rounds} rounds done")
        return self._answer(run)

    # --- search -------------------------------------------------------------------------------

    def _search(self, run: _Run, plan: SearchPlan, round_number: int) -> None:
        # One model call for the round: every follow-up text (and name of a keyword search).
        texts = [query.text for query in plan.queries if query.tool == "hybrid"]
        texts += [query.subject for query in plan.queries if query.tool == "keyword"]
        texts = [text for text in dict.fromkeys(texts) if text not in run.vectors]
        run.vectors.update(zip(texts, self._encode(texts), strict=True))
        vectors = run.vectors
        for query in plan.queries:
            tag = f"round {round_number}: {query.reason}"
            if query.tool == "keyword":
                self._keyword(run, query, vectors[query.subject], tag)
            elif query.text == run.question:
                found = self.search.hybrid_candidates(
                    query.text,
                    run.query_vector,
                    QUERY_POOL,
                    bm25_scores=run.bm25_scores,
                    links=False,
                )
                for index, score in found:
                    run.pool.offer(index, score, tag)
                run.step("search", query.text, f"(hybrid) -> {len(found)} candidates", call=True)
            else:
                self._follow_up(run, query, vectors[query.text], tag)
            if query.subject:
                run.explored.add(query.subject.lower())

    def _about(
        self, name: str, name_vector: np.ndarray, exclude: int | None
    ) -> list[tuple[int, float]]:
        """Passages that name `name`, the one most *about* it first: the best NAME_HITS of a
        keyword search for the name, scored by hybrid search for the name alone (a passage
        about a thing repeats its name and reads like it)."""
        name_bm25 = self.search.bm25_scores(name)
        candidates = [
            index
            for index, _ in top_positive(name_bm25, NAME_HITS)
            if index != exclude and self._names(index, name)
        ]
        scores = self.search.hybrid_scores(name_bm25, name_vector, candidates)
        return sorted(
            zip(candidates, map(float, scores), strict=True), key=lambda item: (-item[1], item[0])
        )

    def _keyword(self, run: _Run, query: ResearchQuery, name_vector: np.ndarray, tag: str) -> None:
        """An entity the question names: the passage most about it, lifted as if the question
        named it (referrer score 1) with its own hybrid score for the question."""
        about = self._about(query.subject, name_vector, None)[:KEYWORD_HITS]
        if about:
            indices = [index for index, _ in about]
            own = self.search.hybrid_scores(run.bm25_scores, run.query_vector, indices)
            for index, score in zip(indices, own, strict=True):
                run.pool.offer_chain(index, 1.0, float(score), tag)
        best = self.corpus.chunk_path(about[0][0]) if about else "nothing"
        run.step("search", query.text, f"(keyword) -> {best}", call=True)

    def _follow_up(self, run: _Run, query: ResearchQuery, vector: np.ndarray, tag: str) -> None:
        """A bridge: the passages that name it (from keyword search for the name and hybrid
        search for the name with the residual words), scored by the mean of how much each is
        about the name (BM25 of the name) and how well it matches name and residual; the best
        FOLLOW_UP_HITS are offered as the next link of the referrer's chain.

        One vector per follow-up, the query's (name and residual), serves both scores: a
        second vector for the name alone cost a third more model time per round and gained
        next to nothing (docs/benchmarks.md)."""
        about = dict(self._about(query.subject, vector, query.referrer))
        bm25_scores = self.search.bm25_scores(query.text)
        found = self.search.hybrid_candidates(
            query.text, vector, QUERY_POOL, bm25_scores=bm25_scores, links=False
        )
        candidates = sorted(
            set(about)
            | {
                index
                for index, _ in found
                if index != query.referrer and self._names(index, query.subject)
            }
        )
        others = [index for index in candidates if index not in about]
        name_bm25 = self.search.bm25_scores(query.subject)
        about.update(
            zip(
                others,
                map(float, self.search.hybrid_scores(name_bm25, vector, others)),
                strict=True,
            )
        )
        match = self.search.hybrid_scores(bm25_scores, vector, candidates)
        own = [
            0.5 * about[index] + 0.5 * float(score)
            for index, score in zip(candidates, match, strict=True)
        ]
        ranked = sorted(zip(candidates, own, strict=True), key=lambda item: (-item[1], item[0]))
        referrer_score = run.pool.score(query.referrer) if query.referrer is not None else 1.0
        lifted = []
        for index, score in ranked[:FOLLOW_UP_HITS]:
            run.pool.offer_chain(index, referrer_score, float(score), tag)
            lifted.append(self.corpus.chunk_path(index))
        run.step(
            "search", query.text, f"(hybrid) -> {', '.join(lifted) or 'nothing new'}", call=True
        )

    def _names(self, index: int, name: str) -> bool:
        """Whether passage `index` names `name`: holds at least half of its words. Only such a
        passage is a bridge's next link, not one that merely matches the residual words."""
        words = set(search_tokens(name))
        return bool(words) and len(words & self._passage_tokens(index)) * 2 >= len(words)

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        if not texts:
            return []
        if self.search.embedder is None:
            raise ToolError("research needs an embedding model")
        return list(np.asarray(self.search.embedder.encode(texts), dtype=np.float32))

    def _is_specific(self, name: str) -> bool:
        """Whether a name is specific enough to search for: its rarest word occurs in at most
        GENERIC_NAME_SHARE of the passages ("American", "Germany" are everywhere in a corpus
        of biographies; a person's or a work's name is not)."""
        bm25 = self.corpus.bm25.get()
        counts = [
            int(np.count_nonzero(bm25.scores(token)))
            for token in dict.fromkeys(search_tokens(name.lower()))
        ]
        limit = max(MIN_GENERIC_COUNT, GENERIC_NAME_SHARE * self.corpus.num_chunks)
        return bool(counts) and min(counts) <= limit

    def _tokens_of(self, index: int) -> frozenset[str]:
        return frozenset(search_tokens(self.corpus.chunk_text(index)))

    def _stems_of(self, index: int) -> frozenset[str]:
        return text_stems(self.corpus.chunk_text(index))

    # --- the answer ---------------------------------------------------------------------------

    def _answer(self, run: _Run) -> ChatResult:
        ranked = run.pool.covering(self.retrieval.top_k, run.terms, self._passage_stems)
        indices = [passage.index for passage in ranked]
        sentences = score_sentences(
            self.sentences, indices[: self.config.leading_passages], run.query_vector, run.terms
        )
        if not sentences:
            run.step("answer", detail="not found (no readable evidence)")
            return self._result(run.question, run.steps, NOT_FOUND_ANSWER, [], 0.0, "no evidence")
        chosen = complete_lead_ins(integrate(sentences, run.terms), sentences)
        evidence = frozenset().union(*(self._passage_stems(index) for index in indices[:2]))
        best_cosine = max(float(s.vector @ run.query_vector) for s in chosen)
        confidence = calibrate_confidence(
            best_cosine, term_coverage(run.terms, evidence) if run.terms else None
        )
        if confidence < NOT_FOUND_THRESHOLD:
            run.step("answer", detail=f"not found (confidence {confidence:.2f})")
            return self._result(
                run.question,
                run.steps,
                NOT_FOUND_ANSWER,
                [],
                min(confidence, NOT_FOUND_THRESHOLD - 0.01),
                "low confidence",
            )
        order = list(dict.fromkeys(s.chunk for s in chosen))
        quoted = sorted(chosen, key=lambda s: (order.index(s.chunk), s.number))
        sources = [self.corpus.chunk_path(index) for index in indices]
        run.step(
            "answer",
            detail=f"{len(quoted)} sentences, {len(sources)} sources (confidence {confidence:.2f})",
        )
        return self._result(
            run.question,
            run.steps,
            answer_text([s.text for s in quoted]),
            indices,
            confidence,
            f"{run.searches} searches",
        )

    def _result(
        self,
        question: str,
        steps: list[TrajectoryStep],
        answer: str,
        indices: list[int],
        confidence: float,
        notes: str,
    ) -> ChatResult:
        sources = [self.corpus.chunk_path(index) for index in indices]
        return ChatResult(
            question=question,
            answer=answer,
            sources=sources,
            confidence=round(max(confidence, 0.0), 3),
            chunk_ids=[self.corpus.chunk_ids[index] for index in indices],
            files_read=sources,
            dirs_explored=list(dict.fromkeys(directory_of(path) for path in sources)),
            trajectory="\n".join(step.render() for step in steps),
            steps=steps,
            notes=notes,
        )
