"""The extractive answer: which sentences of the chunks read answer the question, and how sure.

Sentences are scored by their cosine to the question plus the share of question terms they hold;
the answer takes the best ones within a margin (a few per chunk, no near-duplicates), then a
sentence for each question term still uncovered, then the best sentence of every chunk still
unquoted (in a two-hop question the answer often sits in the less similar chunk), then the list
a chosen lead-in ("It came in two sizes:") announces. Confidence maps the best evidence's cosine
and the question-term coverage onto 0..1.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.graph.sentence_facts import mentions_value, same_frame
from memory_bank.llm.roles import AnswerRequest, AnswerResult, ClaimHistory
from memory_bank.query.question import content_terms, stem_all, term_coverage
from memory_bank.schemas import HistoryNote
from memory_bank.text.lexicon import LIST_MARKER, MARKDOWN_HEADER, search_tokens

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
    sentences, history, current_paths = apply_claims(sentences, request.claims, terms, query_vector)
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
    sources += [path for path in current_paths if path not in sources]
    if confidence < NOT_FOUND_THRESHOLD:
        return AnswerResult(answer="", sources=sources, confidence=confidence, found=False)
    # The answer quotes chunk by chunk, in document order within each, the chunk of the best
    # sentence first (`chosen` opens with the best sentences).
    quote_order = list(dict.fromkeys(s.chunk for s in chosen))
    ordered = sorted(chosen, key=lambda s: (quote_order.index(s.chunk), s.number))
    history += [n for n in current_notes(ordered, request.claims) if n not in history]
    return AnswerResult(
        answer=answer_text([without_replaced(s.text, history) for s in ordered]),
        sources=sources,
        confidence=confidence,
        notes=f"{len(ordered)} sentences",
        history=history,
    )


# --- what is current (issue 12: claims the Query Graph knows were replaced) -------------------


def apply_claims(
    sentences: list[AnswerSentence],
    claims: Sequence[ClaimHistory],
    terms: list[str],
    query_vector: np.ndarray,
) -> tuple[list[AnswerSentence], list[HistoryNote], list[str]]:
    """`sentences` (best first) without the superseded claims; where one would have been part
    of the answer, the current claim's sentence takes its place at its score. Returns the
    sentences, the history of the replaced claims, and the files of the current claims used."""
    superseded = [c for c in claims if c.kind == "superseded"]
    if not superseded or not sentences:
        return sentences, [], []
    stale = {}
    for sentence in sentences:
        claim = next(
            (c for c in superseded if c.chunk == sentence.chunk and states_claim(sentence.text, c)),
            None,
        )
        if claim is not None:
            stale[(sentence.chunk, sentence.number)] = claim
    if not stale:
        return sentences, [], []
    chosen = {(s.chunk, s.number) for s in select_sentences(sentences, terms)}
    best = sentences[0].score
    kept = [s for s in sentences if (s.chunk, s.number) not in stale]
    history: list[HistoryNote] = []
    paths: list[str] = []
    for sentence in sentences:
        key = (sentence.chunk, sentence.number)
        claim = stale.get(key)
        if claim is None or not (key in chosen or sentence.score >= best - ANSWER_MARGIN):
            continue
        if claim.note not in history:
            history.append(claim.note)
        if claim.current_vector is None or not claim.current_sentence:
            continue
        number = -1 - len(history)  # no sentence number of its own evidence: a distinct key
        chunk = claim.current_chunk if claim.current_chunk is not None else CURRENT_CLAIM
        existing = next(
            (
                s
                for s in kept
                if s.chunk == chunk and s.text.strip() == claim.current_sentence.strip()
            ),
            None,
        )
        stems = stem_all(search_tokens(claim.current_sentence))
        own = float(claim.current_vector @ query_vector) + SENTENCE_TERM_WEIGHT * term_coverage(
            terms, stems
        )
        score = max(own, sentence.score) + 1e-6
        if existing is not None:
            kept.remove(existing)
            number = existing.number
        kept.append(
            AnswerSentence(
                chunk, number, claim.current_sentence, claim.current_vector, score, stems
            )
        )
        if claim.current_path and claim.current_path not in paths:
            paths.append(claim.current_path)
    # What the replaced claims said stays out of the answer wherever it is said again: another
    # sentence naming an old value about the same attribute (a bridge paragraph describing the
    # old value) would put it back beside the current one.
    replaced = [c for c in superseded if c.note in history]
    kept = [s for s in kept if not any(repeats_replaced(s.text, c) for c in replaced)]
    kept.sort(key=lambda s: (-s.score, s.chunk, s.number))
    return kept, history, paths


def repeats_replaced(sentence: str, claim: ClaimHistory) -> bool:
    """Whether `sentence` names a replaced claim's old value, without its new one, about the
    claim's attribute (it shares a frame word with the claim's sentence)."""
    return (
        bool(claim.old_value)
        and mentions_value(sentence, claim.old_value)
        and not mentions_value(sentence, claim.new_value)
        and same_frame(sentence, claim.sentence)
    )


def states_claim(sentence: str, claim: ClaimHistory) -> bool:
    """Whether `sentence` states the claim: it is the claim's sentence, or it names the claim's
    old value (not the new one) about the same attribute."""
    text = sentence.strip()
    if text == claim.sentence.strip():
        return True
    if claim.kind == "superseded":
        return (
            bool(claim.old_value)
            and mentions_value(text, claim.old_value)
            and not mentions_value(text, claim.new_value)
            and same_frame(text, claim.sentence)
        )
    return mentions_value(text, claim.new_value) and same_frame(text, claim.sentence)


def current_notes(
    sentences: Sequence[AnswerSentence], claims: Sequence[ClaimHistory]
) -> list[HistoryNote]:
    """The history of the claims the answer states that replaced earlier ones."""
    notes: list[HistoryNote] = []
    for claim in claims:
        if (
            claim.kind == "current"
            and any(s.chunk == claim.chunk and states_claim(s.text, claim) for s in sentences)
            and claim.note not in notes
        ):
            notes.append(claim.note)
    return notes


_REPLACED_CLAUSE = re.compile(
    r"(?:,|;|\(|—|–)?\s*(?:not|rather than|instead of|replacing|succeeding|formerly|previously|"
    r"(?:who|which)\s+(?:took over|replaced|succeeded)[^,;()]*?)\b[^,;()]*",
    re.IGNORECASE,
)


def without_replaced(sentence: str, notes: Sequence[HistoryNote]) -> str:
    """`sentence` without the clause that names a value it replaced (", not The WB as earlier
    reported", ", replacing Alice Moreno"): the answer states what is current; what it
    replaced is in the history."""
    text = sentence
    for note in notes:
        if not note.superseded_value or not mentions_value(text, note.superseded_value):
            continue
        for match in _REPLACED_CLAUSE.finditer(text):
            if note.superseded_value.lower() in match.group(0).lower():
                trimmed = (text[: match.start()] + text[match.end() :]).strip()
                if mentions_value(trimmed, note.current_value):
                    text = re.sub(r"\s+([.,;])", r"\1", trimmed)
                    if text[-1:].isalnum() and sentence.rstrip()[-1:] in ".!?":
                        text += sentence.rstrip()[-1]
                break
        if mentions_value(text, note.superseded_value):
            text = _without_clause_naming(text, note)
    return text


def _without_clause_naming(sentence: str, note: HistoryNote) -> str:
    """`sentence` without its clauses (split at ";") that name the replaced value and not the
    current one, when another clause states the current value ("... was directed by Kim
    Jee-woon; Park Jin-pyo co-wrote the script")."""
    clauses = [c.strip() for c in sentence.split(";")]
    kept = [
        c
        for c in clauses
        if not (
            mentions_value(c, note.superseded_value) and not mentions_value(c, note.current_value)
        )
    ]
    if len(kept) == len(clauses) or not any(mentions_value(c, note.current_value) for c in kept):
        return sentence
    text = "; ".join(kept)
    end = sentence.rstrip()[-1:]
    return text if text[-1:] in ".!?" or end not in ".!?" else text + end
