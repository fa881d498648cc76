"""Named things in retrieved text: the bridge entities a follow-up query is built from.

A bridge question ("who directed the film shot in Leland in 1986?") is answered in two steps:
the first passage found names the thing the question only describes ("Maximum Overdrive"), and
that name, searched for, finds the passage holding the answer. The name is read from the text
itself, not from a list of document titles, so this works on any corpus that writes names the
way English prose does: runs of capitalized words ("Two Dollar Radio", "University of
Cambridge"), with the numbers that continue them ("BWV 1033"), and quoted phrases ("The Hukilau
Song").

A capitalized word that starts a sentence is a name only when it is not a common word ("The",
"However", "He"): the sentence start capitalizes every word.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from memory_bank.text.lexicon import (
    FUNCTION_WORDS,
    MONTHS,
    QUESTION_WORDS,
    WEEKDAYS,
    search_tokens,
)

# Lowercase words that may join two capitalized words inside one name.
NAME_CONNECTORS = frozenset({"of", "de", "du", "da", "di", "del", "der", "van", "von", "la", "le"})
# Names longer than this many words are more likely a title-cased heading than a name.
MAX_NAME_WORDS = 8

# Calendar words start with a capital but name a time, not a thing to look up.
CALENDAR_WORDS = frozenset([*MONTHS, *(month[:3] for month in MONTHS), "sept", *WEEKDAYS])
_WORD = re.compile(r"[^\W_](?:[\w'’.-]*[^\W_])?")
_QUOTED = re.compile(r"[\"“]([^\"“”]{2,80})[\"”]")
_SENTENCE_END = re.compile(r"[.!?:;]\s*$|^\s*$")


class Mention(NamedTuple):
    """A name found in a text, with the character span of its first occurrence."""

    text: str
    start: int
    end: int


def _capitalized(word: str) -> bool:
    return word[0].isupper()


def _calendar(word: str) -> bool:
    return word.isdigit() or word.lower().rstrip(".") in CALENDAR_WORDS


def _common_word(word: str) -> bool:
    lowered = word.lower().strip("'’")
    return lowered in FUNCTION_WORDS or lowered in QUESTION_WORDS


def name_mentions(text: str) -> list[Mention]:
    """The names in `text`, first occurrence order, each once (see the module docstring)."""
    mentions: list[Mention] = [
        Mention(match.group(1).strip(), match.start(1), match.end(1))
        for match in _QUOTED.finditer(text)
        if not match.group(1).strip()[:1].islower()  # a title, not prose between two quotes
    ]
    words = list(_WORD.finditer(text))
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).lower() in NAME_CONNECTORS:
            run.pop()  # "University of" -> "University"
        if run and len(run) <= MAX_NAME_WORDS:
            first = run[0].group(0)
            sentence_start = _SENTENCE_END.search(text[: run[0].start()]) is not None
            if not (
                len(run) == 1 and (_common_word(first) or (sentence_start and first.isalpha()))
            ):
                while run and _common_word(run[0].group(0)):
                    run.pop(0)  # "In Paris" -> "Paris"; "The Exies" -> "Exies" (same search)
                if run and not all(_calendar(match.group(0)) for match in run):
                    start, end = run[0].start(), run[-1].end()
                    mentions.append(Mention(text[start:end], start, end))
        run.clear()

    for match in words:
        word = match.group(0)
        gap = text[run[-1].end() : match.start()] if run else ""
        initial = bool(run) and len(run[-1].group(0)) == 1 and gap == ". "  # "M. Ward"
        joined = not run or gap in (" ", "-", " - ") or initial
        continues = bool(run) and (word in NAME_CONNECTORS or word.isdigit())  # "BWV 1033"
        if joined and (_capitalized(word) or continues):
            run.append(match)
        else:
            close()
            if _capitalized(word):
                run.append(match)
    close()
    return _unique(mentions)


def _unique(mentions: Iterable[Mention]) -> list[Mention]:
    seen: set[tuple[str, ...]] = set()
    unique: list[Mention] = []
    for mention in sorted(mentions, key=lambda mention: mention.start):
        key = tuple(search_tokens(mention.text))
        if key and key not in seen:
            seen.add(key)
            unique.append(mention)
    return unique


def names_in_question(question: str, entities: Iterable[str]) -> list[str]:
    """The question's names (`name_mentions`) and its other exact `entities` (acronyms,
    numbers, identifiers), without those whose words another one already holds."""
    candidates = [mention.text for mention in name_mentions(question)] + list(entities)
    keys = [frozenset(search_tokens(candidate)) for candidate in candidates]
    names: list[str] = []
    for number, (candidate, key) in enumerate(zip(candidates, keys, strict=True)):
        if not key:
            continue
        subsumed = any(
            key < other or (key == other and earlier < number)
            for earlier, other in enumerate(keys)
            if earlier != number
        )
        if not subsumed:
            names.append(candidate)
    return names


def mentions_overlap(mention: str, text_tokens: frozenset[str]) -> bool:
    """Whether every search token of `mention` occurs in `text_tokens` (it names nothing new)."""
    tokens = search_tokens(mention)
    return bool(tokens) and all(token in text_tokens for token in tokens)
