"""Directory names and descriptions from ranked terms.

Names join the one to three most distinctive terms of a group ("neural_networks_training"); they
are lowercase ASCII, start with a letter, are at most 60 characters and unique among siblings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MAX_NAME_LENGTH = 60
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
TERMS_PER_NAME = 2  # a third term is added only to tell two siblings apart
MAX_TERMS_PER_NAME = 3
DESCRIPTION_TERMS = 3
MAX_TLDR_CHARS = 200
FALLBACK_STEM = "topic"  # for groups without any ASCII term (e.g. Japanese text)


def is_valid_name(name: str) -> bool:
    return len(name) <= MAX_NAME_LENGTH and NAME_PATTERN.fullmatch(name) is not None


def _is_variant(term: str, chosen: Sequence[str]) -> bool:
    """True for near-duplicates such as "database"/"databases" or "test"/"testing"."""
    for other in chosen:
        shorter, longer = sorted((term.lower(), other.lower()), key=len)
        if len(shorter) >= 4 and longer.startswith(shorter) and len(longer) - len(shorter) <= 3:
            return True
    return False


def distinct_terms(ranked: Sequence[str], count: int) -> list[str]:
    """The first `count` terms that are not variants of an earlier one and fit in a name."""
    chosen: list[str] = []
    for term in ranked:
        if len(chosen) == count:
            break
        if _is_variant(term, chosen):
            continue
        if len("_".join([*chosen, term])) > MAX_NAME_LENGTH:
            continue
        chosen.append(term)
    return chosen


def _with_suffix(base: str, taken: set[str]) -> str:
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = base[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


def name_siblings(rankings: Sequence[Sequence[str]]) -> list[str]:
    """One valid, sibling-unique name per group from its ranked distinctive terms.

    Two terms by default; groups whose names clash get their next distinctive term, and only
    if that still clashes (or no term is left) a numeric suffix. Groups without terms are called
    "topic_<n>" by position.
    """
    names: list[str] = []
    for position, ranked in enumerate(rankings, start=1):
        terms = distinct_terms(ranked, TERMS_PER_NAME)
        names.append("_".join(terms) if terms else f"{FALLBACK_STEM}_{position}")
    clashing = {name for name in names if names.count(name) > 1}
    for position, ranked in enumerate(rankings):
        if names[position] in clashing and ranked:
            longer = distinct_terms(ranked, MAX_TERMS_PER_NAME)
            names[position] = "_".join(longer)
    return make_unique(names)


def make_unique(names: Sequence[str]) -> list[str]:
    """Keep the first of each name, suffix later duplicates with _2, _3, ..."""
    unique: list[str] = []
    taken: set[str] = set()
    for name in names:
        final = name if name not in taken else _with_suffix(name, taken | set(names))
        taken.add(final)
        unique.append(final)
    return unique


def join_words(words: Sequence[str]) -> str:
    """"a", "a and b", "a, b and c"."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def one_line(text: str) -> str:
    """Collapse whitespace so the text fits on one Markdown line."""
    return " ".join(text.split())


def clip_sentence(text: str, limit: int = MAX_TLDR_CHARS) -> str:
    """One line, at most `limit` characters (cut at a word), ending in sentence punctuation."""
    line = one_line(text)
    if len(line) > limit:
        cut = line[:limit].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
        return cut.rstrip(",;:") + "…"
    return end_sentence(line)


def end_sentence(text: str) -> str:
    """`text` on one line with closing punctuation ("." added when it has none)."""
    line = one_line(text)
    return line if not line or line[-1] in ".!?。！？…" else line + "."


def describe(terms: Sequence[str], central_tldr: str | None) -> str:
    """ "Memories about X, Y and Z, including: <tldr of the most central memory>."

    `terms` are ranked, already spelled for display; variants of earlier terms are skipped.
    """
    shown = distinct_terms([term for term in terms if term], DESCRIPTION_TERMS)
    example = clip_sentence(central_tldr) if central_tldr and central_tldr.strip() else ""
    if shown and example:
        return f"Memories about {join_words(shown)}, including: {example}"
    if shown:
        return f"Memories about {join_words(shown)}."
    if example:
        return f"Memories such as: {example}"
    return "Memories grouped by similarity."


def humanize(name: str) -> str:
    """"neural_networks" -> "neural networks"."""
    return name.replace("_", " ").strip()
