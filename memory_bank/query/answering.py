"""The extractive answer: which sentences of the chunks read answer the question, and how sure.

Sentences are scored by their cosine to the question plus the share of question terms they hold;
the answer takes the best ones within a margin (a few per chunk, no near-duplicates), then a
sentence for each question term still uncovered, then the best sentence of every chunk still
unquoted (in a two-hop question the answer often sits in the less similar chunk), then the list
a chosen lead-in ("It came in two sizes:") announces. Confidence maps the best evidence's cosine
and the question-term coverage onto 0..1.
"""

from __future__ import annotations

import numpy as np

from memory_bank.query.answer_currency import (
    apply_bridges,
    apply_claims,
    current_notes,
    with_previous,
    without_replaced,
)
from memory_bank.query.answer_sentences import (
    NOT_FOUND_THRESHOLD,
    SENTENCE_TERM_WEIGHT,
    AnswerSentence,
    answer_text,
    calibrate_confidence,
    complete_lead_ins,
    is_section_title,
    select_sentences,
)
from memory_bank.query.question import content_terms, term_coverage
from memory_bank.query.roles import AnswerRequest, AnswerResult
from memory_bank.text.lexicon import text_stems


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
    chunk_texts: dict[int, str] = {}
    for position, evidence in enumerate(request.evidence):
        chunk = evidence.index if evidence.index is not None else position
        chunk_texts[chunk] = evidence.text
        texts = evidence.sentences or []
        evidence_stems |= text_stems(" ".join(texts) or evidence.text)
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
            stems = text_stems(text)
            score = float(cosine) + SENTENCE_TERM_WEIGHT * term_coverage(terms, stems)
            sentences.append(AnswerSentence(chunk, number, text, vector, score, stems))
    sentences.sort(key=lambda s: (-s.score, s.chunk, s.number))
    sentences, history, current_paths, answered = apply_claims(
        sentences, request.claims, terms, query_vector
    )
    sentences, bridged, bridge_paths = apply_bridges(sentences, request.claims, terms, chunk_texts)
    known = {(n.superseded_text, n.current_text) for n in history}
    history += [n for n in bridged if (n.superseded_text, n.current_text) not in known]
    current_paths += [p for p in bridge_paths if p not in current_paths]
    if not sentences:
        return AnswerResult(
            answer="", sources=[], confidence=0.0, found=False, notes="no readable evidence"
        )
    chosen = complete_lead_ins(select_sentences(sentences, terms, answered), sentences)
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
        answer=answer_text(
            [with_previous(without_replaced(s.text, history), history) for s in ordered]
        ),
        sources=sources,
        confidence=confidence,
        notes=f"{len(ordered)} sentences",
        history=history,
    )
