"""Score one question's retrieval result against its gold evidence.

This is the only place that reads `EvalQuestion.answers`, `gold_sources` and `gold_units`: the
runner retrieves with the question text alone, then hands the ranked passages here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from memory_bank.evaluation.evidence import EvalDataset, EvalQuestion
from memory_bank.evaluation.metrics import (
    Passage,
    TokenCounter,
    all_evidence_at_k,
    answer_in_text,
    answer_token_recall,
    answer_word_scores,
    cut_to_budget,
    distinct_sources,
    normalize_answer,
    recall_at_k,
    unit_recall,
)
from memory_bank.schemas import SearchHit

DEFAULT_BUDGETS: tuple[int, ...] = (512, 1024, 2048, 4096)
DEFAULT_KS: tuple[int, ...] = (2, 5)


class QuestionResult(BaseModel):
    """One question answered by one mode. A metric that does not apply is left out of its dict
    (no gold sources, no gold units, no scoreable answer), so averages skip it."""

    qid: str
    mode: str
    kind: str
    latency_seconds: float
    retrieved_sources: list[str]  # distinct corpus sources in rank order
    recall_at_k: dict[int, float]
    all_evidence_at_k: dict[int, bool]
    hit_at_k: dict[int, bool] = {}  # some gold source among the top k distinct sources
    # Some gold source anywhere in the result: set for results whose every passage counts
    # (a descent's reached leaves), not for ranked lists cut at k.
    hit: bool | None = None
    evidence_recall: dict[int, float]  # by token budget
    answer_recall: dict[int, bool]  # by token budget: a gold answer string inside the context
    answer_token_recall: dict[int, float]  # by token budget: best ROUGE-1 recall over gold answers
    context_tokens: dict[int, int]  # by token budget: tokens actually kept
    answer_match: bool | None = None  # a gold answer inside the generated answer (agent mode)
    # The generated answer's content words against the gold answer's: the share that are gold
    # words (precision) and the share of gold words it holds (recall).
    answer_precision: float | None = None
    answer_word_recall: float | None = None


def passages_from_hits(hits: Iterable[SearchHit]) -> list[Passage]:
    """Ranked passages from search hits; README hits keep their text but belong to no source."""
    return [Passage(hit.source if hit.kind == "chunk" else None, hit.text) for hit in hits]


def score_question(
    dataset: EvalDataset,
    question: EvalQuestion,
    passages: Sequence[Passage],
    *,
    mode: str,
    latency_seconds: float,
    count_tokens: TokenCounter,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    ks: Sequence[int] = DEFAULT_KS,
    generated_answer: str | None = None,
    whole_result_hit: bool = False,
) -> QuestionResult:
    """All metrics of one question for one mode, from its ranked passages (best first);
    `whole_result_hit` also scores whether any passage at all comes from a gold source."""
    # Corpus-relative sources once; a passage kept whole under several budgets is scored once.
    in_corpus = [
        Passage(dataset.source_key(passage.source), passage.text, passage.quoted)
        for passage in passages
    ]
    ranked_sources = [passage.source for passage in in_corpus if not passage.quoted]
    scoreable_answers = [answer for answer in question.answers if normalize_answer(answer)]

    @functools.cache
    def covered_units(passage: Passage) -> frozenset[str]:
        return frozenset(dataset.units_covered(passage))

    @functools.cache
    def holds_answer(passage: Passage) -> bool:
        # Passage by passage, so an answer never matches across the seam between two hits.
        return answer_in_text(scoreable_answers, passage.text)

    recall: dict[int, float] = {}
    all_evidence: dict[int, bool] = {}
    hits: dict[int, bool] = {}
    hit = None
    if question.gold_sources:
        recall = {k: recall_at_k(ranked_sources, question.gold_sources, k) for k in ks}
        all_evidence = {k: all_evidence_at_k(ranked_sources, question.gold_sources, k) for k in ks}
        hits = {k: recall[k] > 0 for k in ks}
        if whole_result_hit:
            hit = not set(question.gold_sources).isdisjoint(ranked_sources)
    evidence_recall: dict[int, float] = {}
    answer_recall: dict[int, bool] = {}
    token_recall: dict[int, float] = {}
    context_tokens: dict[int, int] = {}
    for budget in budgets:
        context = cut_to_budget(in_corpus, budget, count_tokens)
        context_tokens[budget] = sum(count_tokens(passage.text) for passage in context)
        if question.gold_units:
            covered = frozenset().union(*(covered_units(passage) for passage in context))
            evidence_recall[budget] = unit_recall(covered, question.gold_units)
        if question.answer_scoreable and scoreable_answers:
            answer_recall[budget] = any(holds_answer(passage) for passage in context)
        if scoreable_answers:
            context_text = "\n".join(passage.text for passage in context)
            token_recall[budget] = max(
                answer_token_recall(answer, context_text) for answer in scoreable_answers
            )

    answer_match = None
    words = None
    if generated_answer is not None and question.answer_scoreable and scoreable_answers:
        answer_match = answer_in_text(scoreable_answers, generated_answer)
        words = answer_word_scores(generated_answer, scoreable_answers)
    return QuestionResult(
        qid=question.qid,
        mode=mode,
        kind=question.kind,
        latency_seconds=latency_seconds,
        retrieved_sources=distinct_sources(ranked_sources),
        recall_at_k=recall,
        all_evidence_at_k=all_evidence,
        hit_at_k=hits,
        hit=hit,
        evidence_recall=evidence_recall,
        answer_recall=answer_recall,
        answer_token_recall=token_recall,
        context_tokens=context_tokens,
        answer_match=answer_match,
        answer_precision=words[0] if words else None,
        answer_word_recall=words[1] if words else None,
    )
