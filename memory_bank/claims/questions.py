"""What a question asks for: the kind of value that answers it.

English marks the kind with its question word, or with the noun after "what"/"which": "when",
"what year" ask for a date; "how many", "how tall", "what is the population" for a number;
"who" for a person; "where", "which city" for a place; anything else for a thing (a common
noun phrase or a name).
"""

from __future__ import annotations

import re
from typing import Literal

AskedKind = Literal["date", "number", "person", "place", "thing"]

_DATE_NOUNS = r"year|date|day|month|decade|century|time|season|birthday|anniversary"
_QUANTITY_NOUNS = (
    r"number|population|capacity|height|elevation|altitude|length|width|depth|area|size|"
    r"price|cost|fee|fare|salary|wage|budget|revenue|age|speed|distance|weight|count|total|"
    r"amount|percentage|share|rate|score|attendance|enrol?ment|workforce|duration"
)
_PLACE_NOUNS = (
    r"city|town|village|country|state|province|county|region|place|location|venue|island|"
    r"street|address|headquarters|capital"
)
_WHAT = r"\b(?:what|which)\s+(?:(?:is|was|are|were)\s+(?:the\s+)?)?(?:\w+\s+){0,2}?"
_DATE = re.compile(
    rf"\bwhen\b|\bsince when\b|\bhow long ago\b|{_WHAT}(?:{_DATE_NOUNS})s?\b", re.IGNORECASE
)
_NUMBER = re.compile(
    r"\bhow\s+(?:many|much|long|old|tall|high|far|big|large|heavy|deep|wide|fast|often)\b|"
    rf"{_WHAT}(?:{_QUANTITY_NOUNS})\b",
    re.IGNORECASE,
)
_PERSON = re.compile(r"\b(?:who|whom|whose)\b", re.IGNORECASE)
_PLACE = re.compile(rf"\bwhere\b|{_WHAT}(?:{_PLACE_NOUNS})\b", re.IGNORECASE)


def asked_kind(question: str) -> AskedKind:
    """The kind of value that answers `question` (module docstring); the first question word
    decides where several appear ("Who founded the firm, and when?" asks for a person)."""
    found = [
        (match.start(), kind)
        for kind, pattern in (
            ("date", _DATE),
            ("number", _NUMBER),
            ("person", _PERSON),
            ("place", _PLACE),
        )
        if (match := pattern.search(question))
    ]
    return min(found)[1] if found else "thing"
