"""A small, deterministic sentence splitter that returns character spans.

Spans (not strings) let chunking, embedding, memorizing and answer extraction all point back
into the same original text. Handles Latin punctuation with common abbreviations, CJK full-stop
punctuation, and line breaks between list items or headers.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "no",
    "fig",
    "al",
    "a.m",
    "p.m",
    "approx",
    "inc",
    "ltd",
    "lit",
    "co",
    "corp",
    "u.s",
    "u.k",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "mt",
    "vol",
    "p",
    "pp",
    "cf",
}

# A field of a record or a list opens with a short capitalized label and a colon ("Head coach:
# Ewan Stroud", "Founded: 1874", "ELSDON: We have 310"): it starts a sentence of its own.
_FIELD = r"[A-Z][\w'’-]*(?:[ ][\w'’-]+){0,3}:\s"
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace,
# at CJK sentence punctuation, or at a line break that starts a new block/list item/header or
# a field.
# Closing quotes/brackets (group "close") belong to the sentence they close.
_BOUNDARY = re.compile(
    r"(?<=[.!?])(?P<close>[\"'”’)\]]*)\s+"
    r"|(?<=[。！？])(?P<cjk_close>[」』）]*)"
    r"|\n\s*\n"
    r"|\n(?=\s*(?:[-*+]\s|\d+[.)]\s|#{1,6}\s|\||" + _FIELD + "))"
)
_FIELD_START = re.compile(_FIELD)


_LOWERCASE_START = re.compile(r"[a-z]")
_BLANK_LINE = re.compile(r"\n\s*\n")
_INITIALISM = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")


class Span(NamedTuple):
    start: int
    end: int


def _ends_with_abbreviation(text: str) -> bool:
    tail = text.rstrip().rstrip("\"'”’)]")
    if not tail.endswith("."):
        return False
    word = re.split(r"\s", tail[:-1])[-1].lower() if tail[:-1] else ""
    if len(word) == 1 and word.isalpha():  # an initial such as "J."
        return True
    if _INITIALISM.fullmatch(word):  # letters with their dots: "F.C.", "D.C.", "A.E."
        return True
    if word.isdigit() and len(word) <= 3 and tail.lstrip() == word + ".":
        return True  # the number of a numbered list item: "1. Database storage"
    return word in _ABBREVIATIONS


def split_sentence_spans(text: str) -> list[Span]:
    """Split `text` into sentence spans (whitespace-trimmed, never empty)."""
    spans: list[Span] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.start() + len(match.group("close") or match.group("cjk_close") or "")
        piece = text[start:end]
        # A blank line ends a block whatever precedes it ("# Airspeed Ltd." over its text).
        blank_line = _BLANK_LINE.search(match.group(0)) is not None
        if (
            not blank_line
            and piece.strip()
            and match.group(0).strip() == ""
            and _ends_with_abbreviation(piece)
            and not _FIELD_START.match(text, match.end())
        ):
            continue  # "e.g. this" is one sentence; "Ltd. Founded: 1911" is two
        if (
            not blank_line
            and piece.rstrip()[-1:] in (".", "?", "!")
            and _LOWERCASE_START.match(text, match.end())
        ):
            continue  # "Washington, D.C. and Little Rock", "Arthur? is a 1969 film": a
            # sentence does not open in lowercase
        if end == start:
            continue
        _append_trimmed(text, start, end, spans)
        start = match.end()
    _append_trimmed(text, start, len(text), spans)
    return spans


def _append_trimmed(text: str, start: int, end: int, spans: list[Span]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append(Span(start, end))


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentence strings."""
    return [text[s.start : s.end] for s in split_sentence_spans(text)]
