"""Session timestamps and the relative dates said in them.

"I went to the support group yesterday", said on 8 May 2023, means 7 May 2023; stored as said,
"When did Caroline go to the support group?" cannot be answered with a date. Each relative
expression is resolved against the date of the turn that says it and written next to it:
"yesterday (2023-05-07)".

Timestamps are read with python-dateutil (ISO 8601, "2023-05-08 13:56", "1:56 pm on 8 May,
2023"); the arithmetic is dateutil's `relativedelta`, which keeps month and year boundaries
right (one month before 31 March is 28 or 29 February; the Friday before Monday 2 January 2023
is 30 December 2022). The expressions recognised are the common English ones: today, tonight,
yesterday, tomorrow, the day before yesterday / after tomorrow; last / this / next + a weekday,
week, weekend, month or year; N days / weeks / months / years ago; in N days ... (N a numeral,
a number word up to twelve, "a" or "a couple of"). Anything else is left as it is.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from typing import Literal, NamedTuple

from dateutil import parser as date_parser
from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE, relativedelta

Granularity = Literal["day", "week", "month", "year"]

_WEEKDAYS = {
    "monday": MO,
    "tuesday": TU,
    "wednesday": WE,
    "thursday": TH,
    "friday": FR,
    "saturday": SA,
    "sunday": SU,
}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "couple of": 2,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_UNIT = r"(?P<unit>day|week|month|year)s?"
_AMOUNT = r"(?P<amount>\d{1,3}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_DAY_WORDS = {
    "the day before yesterday": -2,
    "the day after tomorrow": 2,
    "yesterday": -1,
    "today": 0,
    "tonight": 0,
    "tomorrow": 1,
}
_PATTERN = re.compile(
    r"\b(?:"
    rf"(?P<dayword>{'|'.join(sorted(_DAY_WORDS, key=len, reverse=True))})"
    r"|(?P<which>last|this|next)\s+(?P<span>monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|week|month|year)"
    rf"|{_AMOUNT}\s+{_UNIT}\s+(?P<ago>ago)"
    rf"|in\s+(?P<amount_in>\d{{1,3}}|a couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?P<unit_in>day|week|month|year)s?"
    r")\b",
    re.IGNORECASE,
)


class ResolvedDate(NamedTuple):
    """A relative expression in a text and the date it means."""

    expression: str  # as written
    start: int  # character span in the text
    end: int
    value: str  # ISO date "2023-05-07", month "2023-04", year "2022" or week "week of 2023-05-01"
    granularity: Granularity


def parse_timestamp(value: str | datetime | date) -> datetime:
    """A timestamp as a datetime: an ISO 8601 string (or any form dateutil reads, such as
    "1:56 pm on 8 May, 2023"), a datetime or a date. ValueError for anything else."""
    if isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a timestamp must be an ISO 8601 string or a datetime, not {value!r}")
    text = value.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        pass
    try:
        return date_parser.parse(text, fuzzy=True)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"cannot read {value!r} as a date and time") from exc


def resolve_relative_dates(text: str, reference: date | datetime) -> list[ResolvedDate]:
    """Every relative date expression in `text`, resolved against `reference` (the date the
    text was said or written)."""
    day = reference.date() if isinstance(reference, datetime) else reference
    resolved = []
    for match in _PATTERN.finditer(text):
        value = _resolve(match, day)
        if value is not None:
            resolved.append(ResolvedDate(match.group(0), match.start(), match.end(), *value))
    return resolved


def annotate_dates(text: str, reference: date | datetime | None) -> str:
    """`text` with each relative date followed by what it means: "yesterday (2023-05-07)".
    Unchanged without a reference date."""
    if reference is None:
        return text
    parts = []
    position = 0
    for found in resolve_relative_dates(text, reference):
        parts.append(text[position : found.end])
        parts.append(f" ({found.value})")
        position = found.end
    parts.append(text[position:])
    return "".join(parts)


def _resolve(match: re.Match[str], day: date) -> tuple[str, Granularity] | None:
    groups = {key: (value.lower() if value else value) for key, value in match.groupdict().items()}
    if groups["dayword"]:
        return (
            day + timedelta(days=_DAY_WORDS[" ".join(groups["dayword"].split())])
        ).isoformat(), "day"
    if groups["which"]:
        return _named_span(groups["which"], groups["span"], day)
    if groups["ago"]:
        return _shifted(day, -_amount(groups["amount"]), groups["unit"])
    if groups["unit_in"]:
        return _shifted(day, _amount(groups["amount_in"]), groups["unit_in"])
    return None


def _amount(text: str) -> int:
    text = " ".join(text.split())
    return int(text) if text.isdigit() else _NUMBERS[text]


def _shifted(day: date, amount: int, unit: str) -> tuple[str, Granularity]:
    if unit == "day":
        return (day + timedelta(days=amount)).isoformat(), "day"
    if unit == "week":
        return (day + timedelta(weeks=amount)).isoformat(), "day"
    if unit == "month":
        shifted = day + relativedelta(months=amount)
        return f"{shifted.year:04d}-{shifted.month:02d}", "month"
    return f"{day.year + amount:04d}", "year"


def _named_span(which: str, span: str, day: date) -> tuple[str, Granularity]:
    step = {"last": -1, "this": 0, "next": 1}[which]
    if span in _WEEKDAYS:
        weekday = _WEEKDAYS[span]
        if which == "last":  # the most recent one before today
            return (day + relativedelta(days=-1, weekday=weekday(-1))).isoformat(), "day"
        if which == "next":  # the first one after today
            return (day + relativedelta(days=+1, weekday=weekday(+1))).isoformat(), "day"
        monday = day - timedelta(days=day.weekday())  # this week's (Monday to Sunday)
        return (monday + relativedelta(weekday=weekday(+1))).isoformat(), "day"
    if span in ("week", "weekend"):
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        if span == "weekend":
            saturday = monday + timedelta(days=5)
            return f"weekend of {saturday.isoformat()}", "week"
        return f"week of {monday.isoformat()}", "week"
    if span == "month":
        shifted = day + relativedelta(months=step)
        return f"{shifted.year:04d}-{shifted.month:02d}", "month"
    return f"{day.year + step:04d}", "year"
