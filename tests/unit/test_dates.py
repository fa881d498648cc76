"""Relative dates resolved against the date they were said, across month and year boundaries."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memory_bank.text.dates import annotate_dates, parse_timestamp, resolve_relative_dates


@pytest.mark.parametrize(
    ("said_on", "text", "value"),
    [
        (date(2023, 5, 8), "yesterday", "2023-05-07"),
        (date(2023, 3, 1), "yesterday", "2023-02-28"),  # into a 28-day February
        (date(2024, 3, 1), "yesterday", "2024-02-29"),  # a leap year
        (date(2023, 1, 1), "yesterday", "2022-12-31"),  # into last year
        (date(2023, 12, 31), "tomorrow", "2024-01-01"),
        (date(2023, 12, 30), "the day after tomorrow", "2024-01-01"),
        (date(2023, 1, 2), "last Friday", "2022-12-30"),  # Monday 2 January
        (date(2023, 5, 12), "last Friday", "2023-05-05"),  # said on a Friday: a week before
        (date(2023, 12, 29), "next Monday", "2024-01-01"),
        (date(2023, 5, 8), "this Friday", "2023-05-12"),
        (date(2023, 1, 15), "last month", "2022-12"),
        (date(2023, 12, 5), "next month", "2024-01"),
        (date(2023, 3, 31), "a month ago", "2023-02"),
        (date(2023, 1, 10), "last year", "2022"),
        (date(2023, 1, 3), "two weeks ago", "2022-12-20"),
        (date(2023, 12, 28), "in 5 days", "2024-01-02"),
        (date(2023, 1, 4), "last week", "week of 2022-12-26"),
        (date(2023, 5, 8), "3 years ago", "2020"),
    ],
)
def test_relative_dates_resolve_across_boundaries(said_on: date, text: str, value: str) -> None:
    found = resolve_relative_dates(f"We talked about it {text}.", said_on)
    assert [(item.expression, item.value) for item in found] == [(text, value)]


def test_annotation_writes_each_date_after_its_expression() -> None:
    text = "Yesterday I booked it; we fly next Friday and return in two weeks."
    assert annotate_dates(text, datetime(2023, 5, 8, 13, 56)) == (
        "Yesterday (2023-05-07) I booked it; we fly next Friday (2023-05-12) and return "
        "in two weeks (2023-05-22)."
    )
    assert annotate_dates(text, None) == text
    assert annotate_dates("A yesterday-ish mood, todays news.", date(2023, 5, 8)) == (
        "A yesterday (2023-05-07)-ish mood, todays news."
    )


def test_timestamps_in_the_forms_conversations_use() -> None:
    assert parse_timestamp("2023-05-08T13:56:00Z").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_timestamp("2023-05-08 13:56") == datetime(2023, 5, 8, 13, 56)
    assert parse_timestamp("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_timestamp(date(2023, 5, 8)) == datetime(2023, 5, 8)
    for bad in ("", "soon", None, 12):
        with pytest.raises(ValueError):
            parse_timestamp(bad)  # type: ignore[arg-type]
