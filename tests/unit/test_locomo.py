"""The LoCoMo replay's scoring: gold dates read from answers, either way of writing a date, and
evidence ids read leniently."""

from __future__ import annotations

import json
from pathlib import Path

from memory_bank.evaluation.locomo import (
    GoldDate,
    evidence_ids,
    evidence_recall,
    gold_date,
    holds_date,
    load_conversation,
)


def test_the_most_precise_date_a_gold_answer_names() -> None:
    assert gold_date("19 January, 2023") == GoldDate(2023, 1, 19)
    assert gold_date("The week before 9 June 2023") == GoldDate(2023, 6, 9)
    assert gold_date("February 24, 2023") == GoldDate(2023, 2, 24)
    assert gold_date("April.2023") == GoldDate(2023, 4)
    assert gold_date("In 2013") == GoldDate(2013)
    assert gold_date("A few years ago") is None


def test_a_date_is_held_written_either_way() -> None:
    day = GoldDate(2023, 5, 7)
    assert holds_date("yesterday (2023-05-07)", day)
    assert holds_date("on 7th May, 2023 we met", day)
    assert holds_date("May 7 2023", day)
    assert not holds_date("2023-05-17", day) and not holds_date("17 May 2023", day)
    month = GoldDate(2023, 5)
    assert holds_date("[2023-05-20T10:00:00] Ana: hi", month)  # a day of the month holds it
    assert not holds_date("2022-05-20", month)
    assert holds_date("week of 2022-12-26", GoldDate(2022))


def test_evidence_ids_are_read_leniently_and_scored(tmp_path: Path) -> None:
    assert evidence_ids(["D8:6; D9:17", "D:11:26", "D1:3"]) == ["D8:6", "D9:17", "D11:26", "D1:3"]
    assert evidence_recall({"D1:3", "D2:1"}, ("D1:3", "D4:4")) == 0.5
    path = tmp_path / "7.json"
    path.write_text(
        json.dumps(
            {
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": "D1:1", "text": "Look!", "blip_caption": "a cat"}
                ],
                "qa": [
                    {"question": "What?", "answer": "a cat", "evidence": ["D1:1"], "category": 4}
                ],
            }
        )
    )
    talk = load_conversation(path)
    assert talk.turns[0].text == "Look! [shares a cat]"
    assert load_conversation(path, captions=False).turns[0].text == "Look!"
    assert talk.questions[0].evidence == ("D1:1",)
