"""The extractive answer with replaced claims: nothing of what a later claim replaced is quoted
beside the current one (`query.answer_currency`)."""

from __future__ import annotations

from memory_bank.query.answer_currency import repeats_replaced, with_previous, without_replaced
from memory_bank.query.roles import ClaimHistory
from memory_bank.schemas import HistoryNote


def _note(old: str, new: str, old_text: str = "") -> HistoryNote:
    return HistoryNote(
        subject="Love Forecast",
        attribute="direct",
        superseded_value=old,
        current_value=new,
        superseded_text=old_text,
        current_text="",
        superseded_source="a.md",
        current_source="b.md",
        recorded_at="2026-01-01T00:00:00Z",
        superseded_at="2026-01-02T00:00:00Z",
        conflict_id="",
        basis="question",
    )


def test_a_clause_naming_only_the_replaced_value_is_cut_from_the_current_sentence():
    sentence = "The 2015 film Love Forecast was directed by Kim Jee-woon; Park Jin-pyo co-wrote it."

    trimmed = without_replaced(sentence, [_note("Park Jin-pyo", "Kim Jee-woon")])

    assert trimmed == "The 2015 film Love Forecast was directed by Kim Jee-woon."
    # without the current value elsewhere in the sentence, nothing is cut
    alone = "Park Jin-pyo co-wrote it; the film opened in 2015."
    assert without_replaced(alone, [_note("Park Jin-pyo", "Kim Jee-woon")]) == alone


def test_another_sentence_repeating_a_replaced_value_about_the_same_attribute_is_stale():
    claim = ClaimHistory(
        kind="superseded",
        chunk=0,
        sentence="He attended the district school and graduated from Hebron Academy.",
        old_value="Hebron Academy",
        new_value="Gould Academy",
        note=_note("Hebron Academy", "Gould Academy"),
    )

    assert repeats_replaced(
        "Hebron Academy, founded in 1804, is a small college preparatory school.", claim
    )
    assert not repeats_replaced("Hebron Academy has a rowing team on the lake.", claim)
    assert not repeats_replaced("He left Hebron Academy for Gould Academy school.", claim)


def test_a_chunk_whose_claim_was_replaced_is_quoted_only_through_the_current_claim(embedder):
    import numpy as np

    from memory_bank.query.answer_currency import apply_claims
    from memory_bank.query.answer_sentences import AnswerSentence, select_sentences
    from memory_bank.query.question import content_terms
    from memory_bank.text.lexicon import search_tokens, stem_words

    question = "Which band is David Bryson a guitarist for?"
    old = [
        "David Bryson (born October 5, 1961) is a guitarist and vocalist for Counting Crows.",
        "He formed Counting Crows with Duritz in San Francisco in 1991.",
    ]
    other = ["The Himalayans were a band from San Francisco."]
    current = "David Bryson is the guitarist of Third Eye Blind."
    query = np.asarray(embedder.encode([question])[0], dtype=np.float32)
    terms = content_terms(question)

    def scored(chunk: int, texts: list[str]) -> list[AnswerSentence]:
        vectors = np.asarray(embedder.encode(texts), dtype=np.float32)
        return [
            AnswerSentence(
                chunk, n, t, v, float(v @ query), frozenset(stem_words(search_tokens(t)))
            )
            for n, (t, v) in enumerate(zip(texts, vectors, strict=True))
        ]

    sentences = sorted(scored(0, old) + scored(1, other), key=lambda s: -s.score)
    claim = ClaimHistory(
        kind="superseded",
        chunk=0,
        sentence=old[0],
        old_value="Counting Crows",
        new_value="Third Eye Blind",
        current_sentence=current,
        current_chunk=2,
        current_vector=np.asarray(embedder.encode([current])[0], dtype=np.float32),
        note=_note("Counting Crows", "Third Eye Blind"),
    )

    kept, history, _, answered = apply_claims(sentences, [claim], terms, query)
    quoted = [s.text for s in select_sentences(kept, terms, answered)]

    assert answered == frozenset({0}) and len(history) == 1
    assert current in quoted
    assert not any("Counting Crows" in text for text in quoted)
    # Without the replacement, every chunk read is quoted: the old chunk's other sentence too.
    assert any("Counting Crows" in s.text for s in select_sentences(kept, terms))
    # A question about another attribute: the current claim does not answer for the chunk.
    other_question = "Where did David Bryson grow up?"
    other_query = np.asarray(embedder.encode([other_question])[0], dtype=np.float32)
    *_, answered = apply_claims(sentences, [claim], content_terms(other_question), other_query)
    assert answered == frozenset()


def test_the_current_value_is_said_with_what_it_replaced_and_until_when():
    sentence = "The Orrin Reservoir holds 17 million cubic metres of water."
    note = _note("14 million", "17 million", "The Orrin Reservoir holds 14 million cubic metres.")
    assert with_previous(sentence, [note]) == (
        "The Orrin Reservoir holds 17 million cubic metres of water "
        "(previously 14 million, until 2026-01-02)."
    )
    # of the claims one value replaced, the one said of this attribute
    other = _note("1962", "17 million", "The dam of the Orrin Reservoir was finished in 1962.")
    assert with_previous(sentence, [other, note]).endswith(
        "(previously 14 million, until 2026-01-02)."
    )
    # a sentence that does not state the current value is left as it is
    assert (
        with_previous("The reservoir supplies Dunmow.", [note]) == "The reservoir supplies Dunmow."
    )
