"""The answer's sentences: how they are scored, chosen (the best within a margin, a few per
chunk, no near-duplicates, every question term and every chunk read covered, lead-ins
completed) and joined, and how sure the answer is."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.text.lexicon import LIST_MARKER, MARKDOWN_HEADER

MAX_ANSWER_SENTENCES = 4
MAX_SENTENCES_PER_CHUNK = 2
ANSWER_MARGIN = 0.2  # answer sentences score at least best - margin
NEAR_DUPLICATE_COSINE = 0.92  # a sentence this close to a chosen one adds nothing
SENTENCE_TERM_WEIGHT = 0.3  # sentence score = cosine + weight * share of question terms it has
# A chosen sentence that ends in ":" ("It came in two sizes:") announces what follows: the
# list items after it join the answer, up to this many (or the one sentence after it).
MAX_LIST_ITEMS = 6
CURRENT_CLAIM = -1  # AnswerSentence.chunk of a current claim that is no evidence file
NOT_FOUND_THRESHOLD = 0.3  # below this confidence the evidence does not answer the question
# Cosine of the best evidence mapped linearly onto 0..1 between these two points: below 0.2
# all-MiniLM-L6-v2 pairs are unrelated, above 0.55 they are about the same thing.
COSINE_FLOOR, COSINE_CEILING = 0.2, 0.55


def is_section_title(sentence: str) -> bool:
    """A Markdown header line: it names a topic and answers nothing by itself."""
    return MARKDOWN_HEADER.match(sentence) is not None


@dataclass(frozen=True)
class AnswerSentence:
    """A sentence of a chunk read, scored for the question."""

    chunk: int  # memory index
    number: int  # sentence number within the chunk
    text: str
    vector: np.ndarray
    score: float
    stems: frozenset[str]


def select_sentences(
    sentences: list[AnswerSentence], terms: list[str], answered: frozenset[int] = frozenset()
) -> list[AnswerSentence]:
    """The best sentences within a margin of the best, a few per chunk, no near-duplicates; then
    for every question term still uncovered, the best sentence that covers it (comparisons);
    then the best sentence of every chunk still unquoted, so each cited chunk backs the answer
    in its own words (in a two-hop question the answer often sits in the less similar chunk).
    Neither of the last two draws on the `answered` chunks, whose answer a later memory's claim
    replaced: the claim quoted in their place backs them."""
    best = sentences[0].score
    chosen: list[AnswerSentence] = []
    per_chunk: dict[int, int] = {}

    def take(sentence: AnswerSentence) -> None:
        chosen.append(sentence)
        per_chunk[sentence.chunk] = per_chunk.get(sentence.chunk, 0) + 1

    for sentence in sentences:
        if len(chosen) >= MAX_ANSWER_SENTENCES or sentence.score < best - ANSWER_MARGIN:
            break
        if per_chunk.get(sentence.chunk, 0) < MAX_SENTENCES_PER_CHUNK and not _near_duplicate(
            sentence, chosen
        ):
            take(sentence)
    for term in terms:
        if any(term in s.stems for s in chosen):
            continue
        covering = next((s for s in sentences if term in s.stems and s.chunk not in answered), None)
        if covering is not None and covering not in chosen:
            take(covering)
    for sentence in sentences:  # best first, so the first sentence seen of a chunk is its best
        if (
            sentence.chunk not in per_chunk
            and sentence.chunk not in answered
            and not _near_duplicate(sentence, chosen)
        ):
            take(sentence)
    return chosen


def complete_lead_ins(
    chosen: list[AnswerSentence], sentences: list[AnswerSentence]
) -> list[AnswerSentence]:
    """`chosen` plus what its lead-ins announce: after a sentence ending in ":", the list items
    that follow it in its chunk (at most MAX_LIST_ITEMS), or else the next sentence."""
    by_position = {(s.chunk, s.number): s for s in sentences}
    completed = list(chosen)
    taken = {(s.chunk, s.number) for s in chosen}
    for lead_in in chosen:
        if not lead_in.text.rstrip().endswith(":"):
            continue
        for offset in range(1, MAX_LIST_ITEMS + 1):
            following = by_position.get((lead_in.chunk, lead_in.number + offset))
            if following is None or (offset > 1 and not LIST_MARKER.match(following.text)):
                break
            if (following.chunk, following.number) not in taken:
                completed.append(following)
                taken.add((following.chunk, following.number))
            if not LIST_MARKER.match(following.text):
                break  # a plain sentence completes the lead-in by itself
    return completed


def answer_text(sentences: Sequence[str]) -> str:
    """Sentences joined by spaces, list items on lines of their own."""
    parts: list[str] = []
    for number, sentence in enumerate(sentences):
        if number:
            parts.append("\n" if LIST_MARKER.match(sentence) else " ")
        parts.append(sentence.strip())
    return "".join(parts)


def _near_duplicate(sentence: AnswerSentence, chosen: Iterable[AnswerSentence]) -> bool:
    return any(float(sentence.vector @ other.vector) > NEAR_DUPLICATE_COSINE for other in chosen)


def calibrate_confidence(best_cosine: float, coverage: float | None) -> float:
    """0..1 from the best evidence's cosine to the question and its coverage of the question's
    content terms (None when the question has no content terms: the cosine alone decides)."""
    semantic = float(
        np.clip((best_cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR), 0.0, 1.0)
    )
    if coverage is None:
        return semantic
    return 0.5 * semantic + 0.5 * coverage
