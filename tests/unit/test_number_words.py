"""Numbers written in words are one number however many words they take
(memory_bank/text/number_words.py); sentences written for these tests."""

from __future__ import annotations

from memory_bank.graph.values import extract_values
from memory_bank.text.number_words import word_numbers


def _numbers(text: str) -> list[tuple[str, float]]:
    return [(text[start:end], value) for start, end, value in word_numbers(text)]


def test_a_compound_number_is_one_number():
    assert _numbers("A hundred and twenty walkers set out.") == [("A hundred and twenty", 120)]
    assert _numbers("It seats three thousand four hundred and fifty.") == [
        ("three thousand four hundred and fifty", 3450)
    ]
    assert _numbers("twenty-five boats and ninety nine oars") == [
        ("twenty-five", 25),
        ("ninety nine", 99),
    ]


def test_numbers_side_by_side_stay_apart_and_a_lone_one_is_no_number():
    assert _numbers("between seven and eight feet") == [("seven", 7), ("eight", 8)]
    assert _numbers("one of the oldest inns") == []
    assert _numbers("one hundred and one steps") == [("one hundred and one", 101)]


def test_a_counted_number_in_words_is_a_value_and_a_name_is_not():
    values = extract_values(
        "A hundred and twenty passengers crossed with the band Nine Inch Nails."
    )
    assert [(v.text, v.key) for v in values if v.kind.startswith("number")] == [
        ("A hundred and twenty", "n:120")
    ]
