"""What is current in the extractive answer: the claims the Query Graph or the
question's slot knows were replaced leave the answer, the sentences that replaced them take
their place, and the replaced ones are history (`query.currency` supplies the claims)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memory_bank.graph.sentence_facts import mentions_value, same_frame, sentence_facts
from memory_bank.query.answer_sentences import (
    ANSWER_MARGIN,
    CURRENT_CLAIM,
    SENTENCE_TERM_WEIGHT,
    AnswerSentence,
    select_sentences,
)
from memory_bank.query.bridges import names_any
from memory_bank.query.question import term_coverage
from memory_bank.query.roles import ClaimHistory
from memory_bank.schemas import HistoryNote
from memory_bank.text.cues import REPLACED_CLAUSE
from memory_bank.text.lexicon import text_stems


def apply_claims(
    sentences: list[AnswerSentence],
    claims: Sequence[ClaimHistory],
    terms: list[str],
    query_vector: np.ndarray,
) -> tuple[list[AnswerSentence], list[HistoryNote], list[str], frozenset[int]]:
    """`sentences` (best first) without the superseded claims; where one would have been part
    of the answer, the current claim's sentence takes its place at its score. Returns the
    sentences, the history of the replaced claims, the files of the current claims used, and
    the chunks whose quoted claim was replaced (the current claim answers for them)."""
    superseded = [c for c in claims if c.kind == "superseded"]
    if not superseded or not sentences:
        return sentences, [], [], frozenset()
    stale = {}
    for sentence in sentences:
        claim = next(
            (c for c in superseded if c.chunk == sentence.chunk and states_claim(sentence.text, c)),
            None,
        )
        if claim is not None:
            stale[(sentence.chunk, sentence.number)] = claim
    if not stale:
        return sentences, [], [], frozenset()
    chosen = {(s.chunk, s.number) for s in select_sentences(sentences, terms)}
    best = sentences[0].score
    kept = [s for s in sentences if (s.chunk, s.number) not in stale]
    history: list[HistoryNote] = []
    paths: list[str] = []
    answered: set[int] = set()
    for sentence in sentences:
        key = (sentence.chunk, sentence.number)
        claim = stale.get(key)
        if claim is None or not (key in chosen or sentence.score >= best - ANSWER_MARGIN):
            continue
        if claim.note not in history:
            history.append(claim.note)
        if claim.current_vector is None or not claim.current_sentence:
            continue
        if sentence_facts(claim.current_sentence.strip()).frame & set(terms):
            # The current claim says what the question asks ("... is the guitarist of Third Eye
            # Blind" for "Which band is David Bryson a guitarist for?"): it answers for the
            # chunk whose claim it replaced.
            answered.add(sentence.chunk)
        number = -1 - len(history)  # no sentence number of its own evidence: a distinct key
        chunk = claim.current_chunk if claim.current_chunk is not None else CURRENT_CLAIM
        current = claim.current_sentence.strip()
        existing = next((s for s in kept if s.chunk == chunk and s.text.strip() == current), None)
        stems = text_stems(claim.current_sentence)
        coverage = term_coverage(terms, stems)
        own = float(claim.current_vector @ query_vector) + SENTENCE_TERM_WEIGHT * coverage
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
    return kept, history, paths, frozenset(answered)


def apply_bridges(
    sentences: list[AnswerSentence],
    claims: Sequence[ClaimHistory],
    terms: list[str],
    texts: dict[int, str],
) -> tuple[list[AnswerSentence], list[HistoryNote], list[str]]:
    """`sentences` (best first) with the current claim of each bridge (`query.bridges`) whose
    subject a sentence the answer would quote names (itself, or referring back to its
    chunk's subject: `texts`, by chunk): the current sentence ranks right after that sentence. Returns the sentences, the history of the bridged claims, and the files of
    their current claims."""
    bridges = [
        c
        for c in claims
        if c.kind == "bridge" and c.current_sentence and c.current_vector is not None
    ]
    if not bridges or not sentences:
        return sentences, [], []
    chosen = select_sentences(sentences, terms)
    added: list[AnswerSentence] = []
    history: list[HistoryNote] = []
    paths: list[str] = []
    for claim in bridges:
        # A quoted sentence names it, or another sentence of its chunk does ("He is best known
        # for his portrayal of Chris Halliwell in the television series "Charmed"" beside the
        # quoted "Drew Fuller (born May 19, 1980) is an American actor").
        naming = next(
            (s for s in chosen if names_any(s.text, claim.about, texts.get(s.chunk))), None
        ) or next(
            (
                s
                for s in chosen
                if any(
                    names_any(o.text, claim.about, texts.get(o.chunk))
                    for o in sentences
                    if o.chunk == s.chunk
                )
            ),
            None,
        )
        if naming is None or claim.note in history:
            continue
        history.append(claim.note)
        if claim.current_path and claim.current_path not in paths:
            paths.append(claim.current_path)
        if any(s.text.strip() == claim.current_sentence.strip() for s in sentences + added):
            continue
        chunk = claim.current_chunk if claim.current_chunk is not None else CURRENT_CLAIM
        stems = text_stems(claim.current_sentence)
        added.append(
            AnswerSentence(
                chunk,
                -100 - len(history),  # no sentence number of its own evidence: a distinct key
                claim.current_sentence,
                claim.current_vector,
                naming.score - 1e-6,
                stems,
            )
        )
    if not history:
        return sentences, [], []
    replaced = [c for c in bridges if c.note in history]
    kept = [s for s in sentences if not any(repeats_replaced(s.text, c) for c in replaced)]
    kept += added
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
        return repeats_replaced(text, claim)
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


def without_replaced(sentence: str, notes: Sequence[HistoryNote]) -> str:
    """`sentence` without the clause that names a value it replaced (", not The WB as earlier
    reported", ", replacing Alice Moreno"): the answer states what is current; what it
    replaced is in the history."""
    text = sentence
    for note in notes:
        if not note.superseded_value or not mentions_value(text, note.superseded_value):
            continue
        for match in REPLACED_CLAUSE.finditer(text):
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


def with_previous(sentence: str, notes: Sequence[HistoryNote]) -> str:
    """`sentence`, where it states a value that replaced another, with what it replaced and
    until when the memory held it: "... 17 million cubic metres of water (previously 14
    million, until 2026-11-28)." Said once per replaced value, after the sentence's words."""
    said = [
        note
        for note in notes
        if note.superseded_value
        and mentions_value(sentence, note.current_value)
        and not mentions_value(sentence, note.superseded_value)
    ]
    if not said:
        return sentence
    # Of the claims one value replaced, those said of this attribute (the sentence's frame);
    # the others stay in the history.
    framed = [n for n in said if same_frame(sentence, n.superseded_text)]
    said = framed or said[:1]
    previous = "; ".join(
        f"previously {value}, until {until}" if until else f"previously {value}"
        for value, until in dict.fromkeys((n.superseded_value, n.superseded_at[:10]) for n in said)
    )
    text = sentence.rstrip()
    end = text[-1] if text[-1:] in ".!?" else ""
    return f"{text[: len(text) - len(end)].rstrip()} ({previous}){end}"


def _without_clause_naming(sentence: str, note: HistoryNote) -> str:
    """`sentence` without its clauses (split at ";") that name the replaced value and not the
    current one, when another clause states the current value ("... was directed by Kim
    Jee-woon; Park Jin-pyo co-wrote the script")."""
    clauses = [c.strip() for c in sentence.split(";")]
    current, superseded = note.current_value, note.superseded_value
    kept = [c for c in clauses if mentions_value(c, current) or not mentions_value(c, superseded)]
    if len(kept) == len(clauses) or not any(mentions_value(c, current) for c in kept):
        return sentence
    text = "; ".join(kept)
    end = sentence.rstrip()[-1:]
    return text if text[-1:] in ".!?" or end not in ".!?" else text + end
