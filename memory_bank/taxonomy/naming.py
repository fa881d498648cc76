"""Directory names and descriptions from ranked terms.

A name joins one or two terms, each a word or a two-word key phrase ("neural_networks",
"coffee_sourdough"); names are lowercase ASCII, start with a letter, are at most 60 characters
and unique among siblings. Leaves are described by their terms and most central memory, parents
by their subdirectories and sizes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import NamedTuple

from memory_bank.taxonomy.terms import RankedTerm
from memory_bank.text.lexicon import MAX_NAME_LENGTH

TERMS_PER_NAME = 2
# A group whose best term is used by this share of its memories is named after that term.
UMBRELLA_COVERAGE = 0.6
# The runner-up term joins the name only when it scores at least this share of the best one.
SECOND_TERM_SHARE = 0.5
DESCRIPTION_TERMS = 3
SPARE_TERMS = 3  # further terms kept to tell clashing siblings apart
LISTED_CHILDREN = 7  # subdirectories a description names before "and N more"
MAX_TLDR_CHARS = 200
FALLBACK_STEM = "topic"  # for groups without any ASCII term (e.g. Japanese text)
# Forms of one word (see `_near_duplicate`): a prefix of 4+ letters or a stem of 5+ letters,
# and endings of at most 3.
NEAR_DUPLICATE_STEM = 4
SHARED_STEM = 5
MAX_ENDING = 3

Theme = tuple[str, int]  # a subgroup's best term and its number of memories
Listed = tuple[str, int]  # a subdirectory's label in a description and its number of memories


def _near_duplicate(first: str, second: str) -> bool:
    """Forms of one word: "test"/"testing" (one extends the other by at most 3 letters) or
    "branches"/"branching" (a stem of 5+ letters and two endings of at most 3)."""
    shorter, longer = (first, second) if len(first) <= len(second) else (second, first)
    if longer.startswith(shorter):
        return len(shorter) >= NEAR_DUPLICATE_STEM and len(longer) - len(shorter) <= MAX_ENDING
    stem = max(SHARED_STEM, len(longer) - MAX_ENDING)
    return shorter[:stem] == longer[:stem]


def distinct_terms(ranked: Iterable[str], count: int) -> list[str]:
    """The first `count` terms that are not variants of an earlier one: no near-duplicate
    ("databases" after "database") and no shared word ("network" after "neural network")."""
    chosen: list[str] = []
    chosen_lowered: list[str] = []
    chosen_words: set[str] = set()
    for term in ranked:
        if len(chosen) == count:
            break
        lowered = term.lower()
        words = lowered.split()
        if not chosen_words.isdisjoint(words):
            continue
        for other in chosen_lowered:
            # The first-letter test is a cheap filter: near-duplicates share a stem.
            if other[0] == lowered[0] and _near_duplicate(lowered, other):
                break
        else:
            chosen.append(term)
            chosen_lowered.append(lowered)
            chosen_words.update(words)
    return chosen


def choose_name_terms(ranked: Sequence[RankedTerm], themes: Sequence[Theme] = ()) -> list[str]:
    """The one or two terms (keys) a group is named after, best first.

    A group whose best term covers most of its memories is named after it, an umbrella such as
    "neural network", plus the runner-up when that scores at least half as well. A group with
    subgroups (`themes`) and no such term mixes topics: it is named after the best terms of its
    two largest subgroups ("coffee_sourdough"), since a word spread thinly over several themes
    says less than the themes themselves.
    """
    if themes and (not ranked or ranked[0].coverage < UMBRELLA_COVERAGE):
        largest_first = sorted(themes, key=lambda theme: -theme[1])  # stable: ties keep order
        named = distinct_terms([term for term, _ in largest_first], TERMS_PER_NAME)
        if len(named) == TERMS_PER_NAME:
            return named
    if not ranked:
        return []
    threshold = SECOND_TERM_SHARE * ranked[0].score
    # Ranked best first: a generator lets `distinct_terms` stop after the terms it needs.
    return distinct_terms((item.term for item in ranked if item.score >= threshold), TERMS_PER_NAME)


class NameChoice(NamedTuple):  # a tuple: one is made per directory
    """The display terms a directory is named after, and further ones to tell siblings apart."""

    terms: tuple[str, ...]
    spares: tuple[str, ...] = ()


def name_choice(
    ranked: Sequence[RankedTerm], themes: Sequence[Theme], spell: Callable[[str], str]
) -> NameChoice:
    """`choose_name_terms`, spelled for display, with the other ranked terms as spares."""
    chosen = choose_name_terms(ranked, themes)
    spares = islice((item.term for item in ranked if item.term not in chosen), SPARE_TERMS)
    return NameChoice(tuple(map(spell, chosen)), tuple(map(spell, spares)))


def name_from_terms(terms: Sequence[str]) -> str:
    """ "neural networks", "B-tree" -> "neural_networks_b_tree"; trailing terms that do not fit
    in `MAX_NAME_LENGTH` are left out. Empty when no term is given."""
    name = "_".join(terms).lower().replace(" ", "_").replace("-", "_")
    if len(name) <= MAX_NAME_LENGTH or len(terms) <= 1:
        return name[:MAX_NAME_LENGTH].rstrip("_")
    return name_from_terms(terms[:-1])


def name_siblings(choices: Sequence[NameChoice]) -> list[str]:
    """One valid, sibling-unique name per choice.

    Siblings whose names clash get their first spare term that is not a variant of their own;
    if that still clashes (or none is left), a numeric suffix. Choices without terms are called
    "topic_<n>" by position.
    """
    names = [
        name_from_terms(choice.terms) or f"{FALLBACK_STEM}_{position}"
        for position, choice in enumerate(choices, start=1)
    ]
    uses = Counter(names)
    clashing = {name for name, count in uses.items() if count > 1}
    for position, choice in enumerate(choices):
        if names[position] not in clashing or not choice.terms:
            continue
        extra = distinct_terms([*choice.terms, *choice.spares], len(choice.terms) + 1)
        if len(extra) > len(choice.terms):
            names[position] = name_from_terms(extra)
    return make_unique(names)


def _with_suffix(base: str, taken: set[str]) -> str:
    number = 2
    while True:
        suffix = f"_{number}"
        candidate = base[: MAX_NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        number += 1


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
    """ "a", "a and b", "a, b and c"."""
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


def describe(shown: Sequence[str], central_tldr: str | None) -> str:
    """A leaf: "Memories about X, Y and Z, including: <tldr of the most central memory>."

    `shown` are the terms to name, spelled for display (see `distinct_terms`).
    """
    example = clip_sentence(central_tldr) if central_tldr and central_tldr.strip() else ""
    if shown and example:
        return f"Memories about {join_words(shown)}, including: {example}"
    if shown:
        return f"Memories about {join_words(shown)}."
    if example:
        return f"Memories such as: {example}"
    return "Memories grouped by similarity."


def count_memories(count: int) -> str:
    return f"{count:,} memor{'y' if count == 1 else 'ies'}"


def list_children(children: Sequence[Listed]) -> str:
    """ "a (8), b (7) and c (6)": labels with sizes, largest first, at most `LISTED_CHILDREN`."""
    largest_first = sorted(children, key=lambda child: -child[1])  # stable: ties keep order
    shown = [f"{label} ({size:,})" for label, size in largest_first[:LISTED_CHILDREN]]
    if len(children) > LISTED_CHILDREN:
        shown.append(f"{len(children) - LISTED_CHILDREN} more")
    return join_words(shown)


def describe_parent(about: Sequence[str], children: Sequence[Listed]) -> str:
    """A parent or the root: "21 memories about coffee and sourdough in 3 subdirectories:
    sourdough starter (8), photosynthesis (7) and coffee beans (6)."

    `about` are display terms (none for the root); `children` are (label, memory count) pairs.
    """
    total = sum(size for _, size in children)
    topic = f" about {join_words(list(about))}" if about else ""
    kind = "subdirectory" if len(children) == 1 else "subdirectories"
    return f"{count_memories(total)}{topic} in {len(children)} {kind}: {list_children(children)}."


def humanize(name: str) -> str:
    """ "neural_networks" -> "neural networks"."""
    return name.replace("_", " ").strip()
