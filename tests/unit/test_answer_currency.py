"""The extractive answer with replaced claims: nothing of what a later claim replaced is quoted
beside the current one (`query.answer_currency`)."""

from __future__ import annotations

from memory_bank.llm.roles import ClaimHistory
from memory_bank.query.answer_currency import repeats_replaced, without_replaced
from memory_bank.schemas import HistoryNote


def _note(old: str, new: str) -> HistoryNote:
    return HistoryNote(
        subject="Love Forecast",
        attribute="direct",
        superseded_value=old,
        current_value=new,
        superseded_text="",
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
