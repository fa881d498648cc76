"""The evidence a research run has gathered: passages with their scores, and the running
abstract integrated from them.

Every passage is scored on one scale, the question's hybrid score (0..1). A passage found by a
follow-up query is part of a chain: the passage that named the bridge entity (its referrer),
then the passage the entity led to. A chain is only as good as both of its links, so the second
passage scores the mean of its referrer's score and its own score for the query that found it,
or its own score for the question when that is higher (the same rule the title links use, with
names read from text instead of titles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from memory_bank.query.answer_sentences import (
    SENTENCE_TERM_WEIGHT,
    AnswerSentence,
    is_section_title,
    select_sentences,
)
from memory_bank.query.question import term_coverage
from memory_bank.text.lexicon import text_stems
from memory_bank.text.sentences import split_sentences

# The chain rule's weight of the referrer's score (the plain mean; see the module docstring).
REFERRER_WEIGHT = 0.5
# Weight of the share of question terms a passage adds to the evidence chosen before it. Any
# weight in a wide range helps the final ranking alike; used for reflection's leading passages
# too, it hurt, so only the final ranking uses it (docs/benchmarks.md).
COVERAGE_WEIGHT = 0.5
# The covering set is chosen among this many best-scoring passages.
CANDIDATES_FOR_COVERAGE = 20


@dataclass
class Passage:
    index: int  # memory index
    score: float
    found_by: str  # the query (and round) that gave it its score


@dataclass
class EvidencePool:
    """Passages found so far (memory index -> best score) and how each was found."""

    passages: dict[int, Passage] = field(default_factory=dict)

    def offer(self, index: int, score: float, found_by: str) -> bool:
        """Keep `score` for passage `index` if it beats the one it has; True if it did."""
        current = self.passages.get(index)
        if current is not None and current.score >= score:
            return False
        self.passages[index] = Passage(index, float(score), found_by)
        return True

    def offer_chain(
        self, index: int, referrer_score: float, own_score: float, found_by: str
    ) -> bool:
        chain = REFERRER_WEIGHT * referrer_score + (1.0 - REFERRER_WEIGHT) * own_score
        return self.offer(index, chain, found_by)

    def score(self, index: int) -> float:
        passage = self.passages.get(index)
        return passage.score if passage is not None else 0.0

    def ranked(self) -> list[Passage]:
        return sorted(self.passages.values(), key=lambda passage: (-passage.score, passage.index))

    def top(self, count: int) -> list[Passage]:
        return self.ranked()[:count]

    def covering(
        self,
        count: int,
        terms: list[str],
        stems_of: Callable[[int], frozenset[str]],
        weight: float = COVERAGE_WEIGHT,
    ) -> list[Passage]:
        """`count` passages chosen greedily for score plus the share of the question's terms
        each adds to those already chosen: the evidence as a set that covers the question (the
        second passage of a chain holds what the first lacks; two compared things both count),
        rather than the best-scoring near-duplicates of one passage."""
        candidates = self.ranked()[: max(count, CANDIDATES_FOR_COVERAGE)]
        chosen: list[Passage] = []
        covered: set[str] = set()
        wanted = set(terms)
        while candidates and len(chosen) < count:
            missing = frozenset(wanted - covered)
            best = max(
                candidates,
                key=lambda passage, missing=missing: (
                    passage.score + weight * _share(missing, stems_of(passage.index), len(wanted)),
                    -passage.index,
                ),
            )
            chosen.append(best)
            candidates.remove(best)
            covered |= wanted & stems_of(best.index)
        return chosen


def _share(missing: frozenset[str], stems: frozenset[str], total: int) -> float:
    return len(missing & stems) / total if total else 0.0


class SentenceSource:
    """Sentences and sentence vectors of a passage: the stored ones, else embedded on demand."""

    def __init__(self, corpus, embedder) -> None:
        self.corpus = corpus
        self.embedder = embedder

    def of(self, index: int) -> tuple[list[str], np.ndarray]:
        texts, vectors = self.corpus.chunk_sentences(index)
        if texts:
            return texts, vectors
        texts = split_sentences(self.corpus.chunk_text(index))
        if not texts or self.embedder is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        return texts, np.asarray(self.embedder.encode(texts), dtype=np.float32)


def score_sentences(
    sentences: SentenceSource,
    indices: list[int],
    query_vector: np.ndarray,
    terms: list[str],
) -> list[AnswerSentence]:
    """Every sentence of the passages, scored for the question (cosine + term share), best first."""
    scored = []
    for index in indices:
        texts, vectors = sentences.of(index)
        if not texts:
            continue
        cosines = vectors @ query_vector
        for number, (text, vector, cosine) in enumerate(zip(texts, vectors, cosines, strict=True)):
            if is_section_title(text):
                continue
            stems = text_stems(text)
            score = float(cosine) + SENTENCE_TERM_WEIGHT * term_coverage(terms, stems)
            scored.append(AnswerSentence(index, number, text, vector, score, stems))
    return sorted(scored, key=lambda s: (-s.score, s.chunk, s.number))


def integrate(sentences: list[AnswerSentence], terms: list[str]) -> list[AnswerSentence]:
    """The running abstract: the best sentences of the leading passages, each passage's best
    among them, every question term covered where a sentence covers it (`select_sentences`)."""
    if not sentences:
        return []
    return select_sentences(sentences, terms)
