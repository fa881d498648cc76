"""The extractive answer: which sentences of the chunks read answer the question, and how sure.

Sentences are scored by their cosine to the question plus the share of question terms they hold;
the answer takes the best ones within a margin (a few per chunk, no near-duplicates), then a
sentence for each question term still uncovered, then the best sentence of every chunk still
unquoted (in a two-hop question the answer often sits in the less similar chunk), then the list
a chosen lead-in ("It came in two sizes:") announces. Confidence maps the best evidence's cosine
and the question-term coverage onto 0..1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.llm.roles import AnswerRequest, AnswerResult
from memory_bank.query.question import content_terms, stem_all, term_coverage
from memory_bank.text.lexicon import LIST_MARKER, MARKDOWN_HEADER, search_tokens

MAX_ANSWER_SENTENCES = 4
MAX_SENTENCES_PER_CHUNK = 2
ANSWER_MARGIN = 0.2  # answer sentences score at least best - margin
NEAR_DUPLICATE_COSINE = 0.92  # a sentence this close to a chosen one adds nothing
SENTENCE_TERM_WEIGHT = 0.3  # sentence score = cosine + weight * share of question terms it has
# A chosen sentence that ends in ":" ("It came in two sizes:") announces what follows: the
# list items after it join the answer, up to this many (or the one sentence after it).
MAX_LIST_ITEMS = 6
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


def select_sentences(sentences: list[AnswerSentence], terms: list[str]) -> list[AnswerSentence]:
    """The best sentences within a margin of the best, a few per chunk, no near-duplicates; then
    for every question term still uncovered, the best sentence that covers it (comparisons);
    then the best sentence of every chunk still unquoted, so each cited chunk backs the answer
    in its own words (in a two-hop question the answer often sits in the less similar chunk)."""
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
        covering = next((s for s in sentences if term in s.stems), None)
        if covering is not None and covering not in chosen:
            take(covering)
    for sentence in sentences:  # best first, so the first sentence seen of a chunk is its best
        if sentence.chunk not in per_chunk and not _near_duplicate(sentence, chosen):
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


def extractive_answer(request: AnswerRequest) -> AnswerResult:
    """The offline `answer` role: the best sentences of the evidence (see the module docstring),
    every evidence file cited in the order given; `found` is False below NOT_FOUND_THRESHOLD.

    Needs the question's vector and each evidence's sentences with their vectors (and the
    memory vector, for the confidence); evidence without sentences is not quoted."""
    if request.query_vector is None:
        raise ValueError("the extractive answer needs the question's vector")
    query_vector = request.query_vector
    terms = content_terms(request.question)
    sentences: list[AnswerSentence] = []
    evidence_stems: set[str] = set()
    memory_vectors: dict[int, np.ndarray] = {}
    for position, evidence in enumerate(request.evidence):
        chunk = evidence.index if evidence.index is not None else position
        texts = evidence.sentences or []
        evidence_stems |= stem_all(search_tokens(" ".join(texts) or evidence.text))
        if evidence.vector is not None:
            memory_vectors[chunk] = evidence.vector
        if not texts or evidence.sentence_vectors is None:
            continue
        cosines = evidence.sentence_vectors @ query_vector
        for number, (text, vector, cosine) in enumerate(
            zip(texts, evidence.sentence_vectors, cosines, strict=True)
        ):
            if is_section_title(text):
                continue  # a section title names a topic; it answers nothing by itself
            stems = stem_all(search_tokens(text))
            score = float(cosine) + SENTENCE_TERM_WEIGHT * term_coverage(terms, stems)
            sentences.append(AnswerSentence(chunk, number, text, vector, score, stems))
    sentences.sort(key=lambda s: (-s.score, s.chunk, s.number))
    if not sentences:
        return AnswerResult(
            answer="", sources=[], confidence=0.0, found=False, notes="no readable evidence"
        )
    chosen = complete_lead_ins(select_sentences(sentences, terms), sentences)
    chosen_chunks = sorted({s.chunk for s in chosen})
    chunk_cosines = [
        float(memory_vectors[c] @ query_vector) for c in chosen_chunks if c in memory_vectors
    ]
    best_cosine = max([float(s.vector @ query_vector) for s in chosen] + chunk_cosines)
    confidence = calibrate_confidence(
        best_cosine, term_coverage(terms, frozenset(evidence_stems)) if terms else None
    )
    sources = [evidence.path for evidence in request.evidence]
    if confidence < NOT_FOUND_THRESHOLD:
        return AnswerResult(answer="", sources=sources, confidence=confidence, found=False)
    # The answer quotes chunk by chunk, in document order within each, the chunk of the best
    # sentence first (`chosen` opens with the best sentences).
    quote_order = list(dict.fromkeys(s.chunk for s in chosen))
    ordered = sorted(chosen, key=lambda s: (quote_order.index(s.chunk), s.number))
    return AnswerResult(
        answer=answer_text([s.text for s in ordered]),
        sources=sources,
        confidence=confidence,
        notes=f"{len(ordered)} sentences",
    )
