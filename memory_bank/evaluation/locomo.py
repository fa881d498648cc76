"""LoCoMo (very long dated two-person conversations) as a replay for the conversation memory.

A LoCoMo file holds sessions (`session_<n>`: turns `{speaker, dia_id "D<n>:<i>", text}`, some
with `blip_caption`, the caption of a photo the speaker shared) with their dates
(`session_<n>_date_time`, "1:56 pm on 8 May, 2023") and questions (`qa`: question, answer,
evidence dia ids, category 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).

Measured without a language model: evidence recall (share of the gold evidence turns among the
recalled ones) and, for temporal questions, whether the date the gold answer names appears in
the recalled text, written either way ("7 May 2023" or "2023-05-07"; a month as "May 2023" or
"2023-05", which a day of that month also holds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_bank.evaluation.dataset_files import read_json
from memory_bank.text.lexicon import MONTHS

ADVERSARIAL = 5
TEMPORAL = 2
_MONTHS = MONTHS
_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"
_DAY = r"(?P<day>\d{1,2})"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_SEPARATOR = r"[\s,.`]*"
_DATE_FORMS = (
    re.compile(rf"\b{_DAY}(?:st|nd|rd|th)?{_SEPARATOR}{_MONTH}{_SEPARATOR}{_YEAR}\b"),
    re.compile(rf"\b{_MONTH}{_SEPARATOR}{_DAY}(?:st|nd|rd|th)?{_SEPARATOR}{_YEAR}\b"),
    re.compile(rf"\b{_MONTH}{_SEPARATOR}{_YEAR}\b"),
    re.compile(rf"\b{_YEAR}\b"),
)
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str  # "D3:12"
    speaker: str
    text: str  # the turn, with the caption of a shared photo in brackets
    timestamp: str  # the session's date as written


@dataclass(frozen=True)
class LocomoQuestion:
    question: str
    answer: str
    evidence: tuple[str, ...]  # dia ids
    category: int


@dataclass(frozen=True)
class GoldDate:
    """The date a gold answer names, as precisely as it names it."""

    year: int
    month: int | None = None
    day: int | None = None

    def written_forms(self) -> list[str]:
        """Lower-case spellings a text may hold it in (ISO first)."""
        if self.month is None:
            return [f"{self.year:04d}"]
        name = _MONTHS[self.month - 1]
        if self.day is None:
            return [f"{self.year:04d}-{self.month:02d}", f"{name} {self.year}"]
        return [
            f"{self.year:04d}-{self.month:02d}-{self.day:02d}",
            f"{self.day} {name} {self.year}",
            f"{name} {self.day} {self.year}",
        ]


@dataclass(frozen=True)
class LocomoConversation:
    name: str
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]


def load_conversation(path: Path, captions: bool = True) -> LocomoConversation:
    data: dict[str, Any] = read_json(path)
    sessions = sorted(
        (int(key.split("_")[1]), key)
        for key in data
        if re.fullmatch(r"session_\d+", key) and isinstance(data[key], list)
    )
    turns = []
    for _, key in sessions:
        when = str(data.get(f"{key}_date_time", ""))
        for turn in data[key]:
            text = str(turn.get("text", "")).strip()
            caption = str(turn.get("blip_caption", "") or "").strip()
            if caption and captions:
                text = f"{text} [shares {caption}]"
            turns.append(LocomoTurn(str(turn["dia_id"]), str(turn["speaker"]), text, when))
    questions = tuple(
        LocomoQuestion(
            question=str(item["question"]),
            answer=str(item.get("answer", "")),
            evidence=tuple(evidence_ids(item.get("evidence", []))),
            category=int(item.get("category", 0)),
        )
        for item in data.get("qa", [])
    )
    return LocomoConversation(path.stem, tuple(turns), questions)


def evidence_ids(raw: list[str]) -> list[str]:
    """Gold evidence ids, read leniently ("D8:6; D9:17" and "D:11:26" occur)."""
    found = []
    for item in raw:
        for session, turn in _EVIDENCE_ID.findall(str(item)):
            found.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(found))


def gold_date(answer: str) -> GoldDate | None:
    """The most precise date a gold answer names, or None ("a few years ago")."""
    text = answer.lower()
    for form in _DATE_FORMS:
        match = form.search(text)
        if match:
            groups = match.groupdict()
            month = _MONTHS.index(groups["month"]) + 1 if groups.get("month") else None
            day = int(groups["day"]) if groups.get("day") else None
            return GoldDate(int(groups["year"]), month, day)
    return None


def holds_date(text: str, date: GoldDate) -> bool:
    """Whether `text` writes `date` in one of its forms (a day of the month holds the month)."""
    plain = re.sub(r"[\s,.`]+", " ", text.lower())
    plain = re.sub(r"\b(\d{1,2})(?:st|nd|rd|th)\b", r"\1", plain)
    return any(
        re.search(rf"(?<![\d-]){re.escape(form)}(?!\d)", plain) for form in date.written_forms()
    )


def evidence_recall(returned: set[str], gold: tuple[str, ...]) -> float:
    return sum(1 for dia_id in gold if dia_id in returned) / len(gold) if gold else 0.0
