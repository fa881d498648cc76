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


# Said on Friday 9 June 2023 (a summer day) unless told otherwise.
FRIDAY = date(2023, 6, 9)


@pytest.mark.parametrize(
    ("text", "expression", "value"),
    [
        ("We met last Fri. at the pub.", "last Fri", "2023-06-02"),
        ("I'll call on Tues about it.", "on Tues", "2023-06-13"),  # future: the next one
        ("I saw her on Tues, briefly.", "on Tues", "2023-06-06"),  # past: the latest one
        ("Thurs was a long day.", "Thurs", "2023-06-08"),
        ("We went hiking Sunday.", "Sunday", "2023-06-04"),
        ("I'm gonna paint Monday.", "Monday", "2023-06-12"),
        ("last sat was quiet", "last sat", "2023-06-03"),
        ("this past weekend was busy", "this past weekend", "weekend of 2023-06-03"),
        ("over the weekend we baked", "over the weekend", "weekend of 2023-06-03"),
        ("the week before last we moved", "the week before last", "week of 2023-05-22"),
        ("the week before, I was ill", "the week before", "week of 2023-05-29"),
        ("a couple weeks ago", "a couple weeks ago", "2023-05-26"),
        ("two years back", "two years back", "2021"),
        ("three days from now", "three days from now", "2023-06-12"),
        ("last night was fun", "last night", "2023-06-08"),
        ("this morning I ran", "this morning", "2023-06-09"),
        ("the past week was hard", "past week", "week of 2023-05-29"),
        ("We married last May.", "last May", "2023-05"),
        ("We'll move next March.", "next March", "2024-03"),
        ("It was cold last winter.", "last winter", "winter 2022"),
        ("Last summer we sailed.", "Last summer", "summer 2022"),  # this one is under way
        ("Next spring we plant.", "Next spring", "spring 2024"),
    ],
)
def test_every_way_of_placing_a_unit_against_the_moment_of_speaking(
    text: str, expression: str, value: str
) -> None:
    found = resolve_relative_dates(text, FRIDAY)
    assert [(item.expression, item.value) for item in found] == [(expression, value)]


@pytest.mark.parametrize(
    "text",
    [
        "this may be fine",  # the verb, not the month
        "the sun was out and we sat down",  # words, not weekdays
        "this sun is hot",
        "we jog every Sunday",  # a habit, not a day
        "a few days ago",  # a vague amount names no date
        "the week before the wedding",  # placed against the wedding, not against now
        "Friday's market",  # a name of something
    ],
)
def test_what_is_no_date_against_now_is_left_as_said(text: str) -> None:
    assert [f.expression for f in resolve_relative_dates(text, FRIDAY)] == []


def test_periods_of_resolved_values_and_of_absolute_dates() -> None:
    from memory_bank.text.dates import named_periods, period_of

    assert period_of("week of 2023-05-29") == (date(2023, 5, 29), date(2023, 6, 4))
    assert period_of("weekend of 2023-06-03") == (date(2023, 6, 3), date(2023, 6, 4))
    assert period_of("winter 2022") == (date(2022, 12, 1), date(2023, 2, 28))
    assert period_of("2024-02") == (date(2024, 2, 1), date(2024, 2, 29))
    assert named_periods("What did she bake on 3 June, 2023 and in November 2022?") == [
        (date(2023, 6, 3), date(2023, 6, 3)),
        (date(2022, 11, 1), date(2022, 11, 30)),
    ]
    assert named_periods("Which team won in 2019?") == [(date(2019, 1, 1), date(2019, 12, 31))]
