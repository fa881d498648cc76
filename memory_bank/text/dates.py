"""Session timestamps and the relative dates said in them.

"I went to the support group yesterday", said on 8 May 2023, means 7 May 2023; stored as said,
"When did Caroline go to the support group?" cannot be answered with a date. Each relative
expression is resolved against the date of the turn that says it and written next to it:
"yesterday (2023-05-07)".

Timestamps are read with python-dateutil (ISO 8601, "2023-05-08 13:56", "1:56 pm on 8 May,
2023"); the arithmetic is dateutil's `relativedelta`, which keeps month and year boundaries
right (one month before 31 March is 28 or 29 February; the Friday before Monday 2 January 2023
is 30 December 2022).

A relative expression is a calendar unit placed against the moment of speaking, and English
says it in a few ways, each read here for every unit (day, weekday, week, weekend, month,
named month, season, year):
- deictic words: today, tonight, this morning, last night, yesterday, tomorrow, the day
  before yesterday, the day after tomorrow;
- a direction and a unit: last / this / next / this past / this coming / past / previous /
  coming + unit ("last Fri", "this past weekend", "next March", "last summer"), and "the
  <unit> before last" / "the <unit> after next" (two steps), "the <unit> before" (one step
  back, said without another anchor), "over the weekend" (the latest one);
- an amount and a unit: N units ago / back / before, in N units, N units from now (N a
  numeral, a number word up to twelve, "a", "an", "a couple of");
- a weekday alone ("on Sunday", "on Tues", "we went hiking Sunday"): the latest one, or the
  next one when its clause speaks of the future ("will", "shall", "let's", "going to",
  "plan"); not a habit ("every Sunday").
A weekday read alone or a month name counts only with its capital, and an abbreviation that
is also an English word ("sun", "sat", "wed", "mon") only after "last", "next", "past" or
"on". Vague amounts ("a few days ago", "recently") name no date and are left as said.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Literal, NamedTuple

from dateutil import parser as date_parser
from dateutil.relativedelta import FR, MO, SA, SU, TH, TU, WE, relativedelta

from memory_bank.text.lexicon import MONTHS

Granularity = Literal["day", "week", "month", "season", "year"]

_WEEKDAY_NAMES = {
    "monday": (MO, ("mon",)),
    "tuesday": (TU, ("tue", "tues")),
    "wednesday": (WE, ("wed",)),
    "thursday": (TH, ("thu", "thur", "thurs")),
    "friday": (FR, ("fri",)),
    "saturday": (SA, ("sat",)),
    "sunday": (SU, ("sun",)),
}
_WEEKDAYS = {
    form: weekday
    for name, (weekday, short) in _WEEKDAY_NAMES.items()
    for form in (name, *short, *(f"{s}." for s in short))
}
# Read without a direction word before them when written with their capital: the full names,
# and the abbreviations that are no English word ("Fri", not "Sun").
_CAPITAL_WEEKDAYS = (
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|Tues?|Thu(?:rs?)?|Fri"
)
# Abbreviations that are English words too: "this sun" is no Sunday.
_WORD_ABBREVIATIONS = frozenset({"mon", "wed", "sat", "sun"})
_MONTH_NAMES = MONTHS
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}  # first month
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
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
_DAY_WORDS = {
    "the day before yesterday": -2,
    "the day after tomorrow": 2,
    "yesterday": -1,
    "last night": -1,
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "tomorrow": 1,
}
_DIRECTIONS = {
    "last": -1,
    "past": -1,
    "previous": -1,
    "this past": -1,
    "this": 0,
    "next": 1,
    "coming": 1,
    "this coming": 1,
}


def _alternatives(words) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_WEEKDAY = rf"(?:{_alternatives(_WEEKDAYS)})(?![\w])"
_UNIT_WORD = (
    rf"{_WEEKDAY}|weekend|week|month|year|{_alternatives(_MONTH_NAMES)}|{_alternatives(_SEASONS)}"
)
_AMOUNT = rf"\d{{1,3}}|{_alternatives(_NUMBERS)}"
_UNIT = r"day|week|month|year"
_PATTERN = re.compile(
    r"\b(?:"
    rf"(?P<dayword>{_alternatives(_DAY_WORDS)})\b"
    rf"|(?P<direction>{_alternatives(_DIRECTIONS)})\s+(?P<span>{_UNIT_WORD})\b"
    rf"|the\s+(?P<twice_span>{_UNIT_WORD})\s+(?P<twice>before\s+last|after\s+next)\b"
    rf"|the\s+(?P<before_span>weekend|week|month|year)\s+before\b(?!\s+(?:that|the|it|this|\w+ing)\b)"
    r"|over\s+the\s+(?P<over>weekend)\b"
    rf"|(?P<amount>{_AMOUNT})\s+(?P<unit>{_UNIT})s?\s+(?P<ago>ago|back|from\s+now)\b"
    rf"|in\s+(?P<amount_in>{_AMOUNT})\s+(?P<unit_in>{_UNIT})s?\b"
    rf"|on\s+(?P<bare>{_WEEKDAY})"
    r")"
    rf"|(?<!every )(?<!each )(?<![\w.])(?P<capital>{_CAPITAL_WEEKDAYS})\b(?!['’]s\b)",
    re.IGNORECASE,
)
_FUTURE = re.compile(
    r"\b(?:will|won't|'ll|shall|let's|going to|gonna|plan(?:s|ning)?|hope to|can't wait|looking forward|"
    r"next|tomorrow|upcoming|coming)\b",
    re.IGNORECASE,
)


class ResolvedDate(NamedTuple):
    """A relative expression in a text and the date it means."""

    expression: str  # as written
    start: int  # character span in the text
    end: int
    value: str  # "2023-05-07", "week of 2023-05-01", "2023-04", "summer 2022", "2022"
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


def utc_iso(timestamp: float) -> str:
    """A Unix timestamp as an ISO 8601 UTC string to the second: "2023-05-08T13:56:00Z"."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resolve_relative_dates(text: str, reference: date | datetime) -> list[ResolvedDate]:
    """Every relative date expression in `text`, resolved against `reference` (the date the
    text was said or written)."""
    day = reference.date() if isinstance(reference, datetime) else reference
    resolved = []
    for match in _PATTERN.finditer(text):
        if not _meant(match):
            continue
        value = _resolve(match, day, _future_clause(text, match))
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


def _meant(match: re.Match[str]) -> bool:
    """Whether a match is a date: a weekday read alone or a named month is written with its
    capital ("this may be" is no May), an abbreviation that is a word follows "last" or
    "next", not "this"."""
    if match.group("capital"):
        return match.group("capital")[0].isupper()
    span = match.group("span") or match.group("twice_span")
    if span and span.lower() in _MONTH_NAMES:
        return span[0].isupper()
    if span and span.lower() in _WORD_ABBREVIATIONS:
        return match.group("direction") is None or match.group("direction").lower() != "this"
    return True


def _future_clause(text: str, match: re.Match[str]) -> bool:
    """Whether the clause around a bare weekday speaks of the future."""
    start = max(text.rfind(mark, 0, match.start()) for mark in ".!?;")
    ends = [text.find(mark, match.end()) for mark in ".!?;"]
    end = min((e for e in ends if e >= 0), default=len(text))
    return _FUTURE.search(text[start + 1 : end]) is not None


def _resolve(match: re.Match[str], day: date, future: bool) -> tuple[str, Granularity] | None:
    groups = {key: (value.lower() if value else value) for key, value in match.groupdict().items()}
    if groups["dayword"]:
        offset = _DAY_WORDS[" ".join(groups["dayword"].split())]
        return (day + timedelta(days=offset)).isoformat(), "day"
    if groups["direction"]:
        step = _DIRECTIONS[" ".join(groups["direction"].split())]
        return _span(groups["span"], step, day)
    if groups["twice_span"]:
        return _span(groups["twice_span"], -2 if "before" in groups["twice"] else 2, day)
    if groups["before_span"]:
        return _span(groups["before_span"], -1, day)
    if groups["over"]:
        return _span("weekend", 0 if day.weekday() >= 5 else -1, day)
    if groups["ago"]:
        sign = 1 if groups["ago"].startswith("from") else -1
        return _shifted(day, sign * _amount(groups["amount"]), groups["unit"])
    if groups["unit_in"]:
        return _shifted(day, _amount(groups["amount_in"]), groups["unit_in"])
    weekday = groups["bare"] or groups["capital"]
    if weekday:
        return _weekday(_WEEKDAYS[weekday], 1 if future else -1, day, bare=True)
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


def _span(span: str, step: int, day: date) -> tuple[str, Granularity]:
    """The unit `span` `step` steps from the one holding `day` (0: this one)."""
    if span in _WEEKDAYS:
        return _weekday(_WEEKDAYS[span], step, day, bare=False)
    if span in ("week", "weekend"):
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        if span == "weekend":
            return f"weekend of {(monday + timedelta(days=5)).isoformat()}", "week"
        return f"week of {monday.isoformat()}", "week"
    if span == "month":
        shifted = day + relativedelta(months=step)
        return f"{shifted.year:04d}-{shifted.month:02d}", "month"
    if span == "year":
        return f"{day.year + step:04d}", "year"
    if span in _MONTH_NAMES:
        return _named_month(_MONTH_NAMES.index(span) + 1, step, day), "month"
    return _season(span, step, day), "season"


def _weekday(weekday, step: int, day: date, bare: bool) -> tuple[str, Granularity]:
    """ "last Friday": the latest Friday before `day`; "next Friday": the first after it;
    "this Friday": the one of `day`'s week (Monday to Sunday). A bare weekday ("on Friday")
    is the latest one or the next one (`step` -1 or 1), `day` itself included."""
    if step < 0:
        start = day if bare else day - timedelta(days=1)
        return (start + relativedelta(weekday=weekday(-1))).isoformat(), "day"
    if step > 0:
        start = day if bare else day + timedelta(days=1)
        return (start + relativedelta(weekday=weekday(+1))).isoformat(), "day"
    monday = day - timedelta(days=day.weekday())
    return (monday + relativedelta(weekday=weekday(+1))).isoformat(), "day"


def _named_month(month: int, step: int, day: date) -> str:
    """ "last March": the latest March before this month; "next March": the first after it;
    "this March": this year's."""
    year = day.year
    if step < 0:
        year -= 1 if month >= day.month else 0
    elif step > 0:
        year += 1 if month <= day.month else 0
    return f"{year:04d}-{month:02d}"


def _season(name: str, step: int, day: date) -> str:
    """A (northern, meteorological) season, three months from its first month, named by the
    year that month falls in. "last summer": the latest one over by `day`; "next summer": the
    first one to begin after `day`; "this summer": the one holding `day`, else this year's."""
    first = _SEASONS[name]
    starts = [date(year, first, 1) for year in range(day.year - 2, day.year + 2)]
    if step < 0:
        return f"{name} {[s for s in starts if s + relativedelta(months=3) <= day][-1].year}"
    if step > 0:
        return f"{name} {next(s for s in starts if s > day).year}"
    holding = [s for s in starts if s <= day < s + relativedelta(months=3)]
    return f"{name} {holding[0].year if holding else day.year}"


# --- periods: what a date names, as a range of days ---------------------------------------------

Period = tuple[date, date]  # first and last day, both included

_MONTH = (
    rf"(?P<month>{_alternatives(_MONTH_NAMES)}|{_alternatives(m[:3] for m in _MONTH_NAMES)})\.?"
)
_ABSOLUTE = re.compile(
    r"\b(?:"
    rf"(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH.replace('month', 'm1')},?\s+(?P<y1>(?:1[89]|20)\d\d)"
    rf"|{_MONTH.replace('month', 'm2')}\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>(?:1[89]|20)\d\d)"
    rf"|{_MONTH.replace('month', 'm3')},?\s+(?P<y3>(?:1[89]|20)\d\d)"
    r"|(?P<iso>(?:1[89]|20)\d\d-\d\d(?:-\d\d)?)"
    r"|(?P<y4>(?:1[89]|20)\d\d)"
    r")\b",
    re.IGNORECASE,
)


def named_periods(text: str) -> list[Period]:
    """The periods the absolute dates of `text` name: "25 May, 2022" a day, "November 2022" a
    month, "2024" a year (relative ones are `resolve_relative_dates`'s)."""
    periods = []
    for match in _ABSOLUTE.finditer(text):
        groups = match.groupdict()
        if groups["iso"]:
            periods.append(period_of(groups["iso"]))
            continue
        year = int(groups["y1"] or groups["y2"] or groups["y3"] or groups["y4"])
        month_name = groups["m1"] or groups["m2"] or groups["m3"]
        day = groups["d1"] or groups["d2"]
        if month_name is None:
            periods.append((date(year, 1, 1), date(year, 12, 31)))
            continue
        month = [m[:3] for m in _MONTH_NAMES].index(month_name.lower()[:3]) + 1
        if day is None:
            periods.append(_month_period(year, month))
        elif 1 <= int(day) <= 31:
            try:
                periods.append((date(year, month, int(day)),) * 2)
            except ValueError:
                continue  # "31 June": no such day
    return periods


def period_of(value: str) -> Period:
    """The days a resolved value stands for: "2023-05-07", "week of 2023-05-01", "weekend of
    2023-05-06", "2023-05", "summer 2023", "2023"."""
    if value.startswith(("week of ", "weekend of ")):
        first = date.fromisoformat(value.rsplit(" ", 1)[1])
        return first, first + timedelta(days=6 if value.startswith("week ") else 1)
    if " " in value:  # a season
        name, year = value.split(" ")
        start = date(int(year), _SEASONS[name], 1)
        return start, start + relativedelta(months=3) - timedelta(days=1)
    parts = [int(part) for part in value.split("-")]
    if len(parts) == 3:
        return (date(*parts),) * 2
    if len(parts) == 2:
        return _month_period(*parts)
    return date(parts[0], 1, 1), date(parts[0], 12, 31)


def _month_period(year: int, month: int) -> Period:
    start = date(year, month, 1)
    return start, start + relativedelta(months=1) - timedelta(days=1)
