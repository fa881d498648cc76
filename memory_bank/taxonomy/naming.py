"""Directory names and descriptions: one straight pipeline per set of sibling directories.

1. evidence (`gather_evidence`): per directory, how many of its memories and of its documents
   use each term (`terms.TermMatrix`: words and two-word key phrases), how many memories have it
   among their memorized key terms, and its most central memory;
2. candidates (`candidates`): the terms that pass the cohesion test (`is_cohesive`), i.e.
   describe most members rather than one: a key term of some member, used by at least half
   the memories of a one-document group, or describing more than half the documents (and the
   memories they hold) of a group of several; scored by that cohesion, by how much more the
   directory uses the term than its siblings do, and by how often memorize picked it;
3. distinct among siblings (`name_siblings`): directories take their best candidate, the most
   confident first; a name equal to or a variant of a sibling's (or the parent's) is passed
   over; a directory whose every option is taken is named by the terms of its description
   (`_fallback_options`: "switchboard" beside "meeting", not "meeting_2");
4. a directory without a cohesive candidate (or whose candidates the siblings took) gets an
   honest plain phrase (`mixed_phrase`): its main document's when that document holds most of
   it, else its two largest documents' ("launch, carrots and more"), never one member's term
   standing for all (the planner splits such a group at the top level when its parts separate
   better, see `planner.split_unnamed`);
5. description (`describe`): the cohesive terms and the central memory's TL;DR (leaves), or
   the cohesive terms and the subdirectories with their sizes (parents).

Names are lowercase words of any script joined by "_", start with a letter, at most 60
characters, unique among siblings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from memory_bank.taxonomy.evidence import COHESION, PHRASE_BONUS, GroupEvidence, TermCounts
from memory_bank.taxonomy.terms import is_phrase
from memory_bank.text.lexicon import MAX_NAME_LENGTH, is_name_word, normalize_text, plural_key

# A term the siblings use as much as the directory tells nothing apart, but may be all it has.
DISTINCT_FLOOR = 0.05
# Terms memorize never picked as a key term of any member keep this share of their score.
CURATED_FLOOR = 0.25
DESCRIPTION_TERMS = 3
FALLBACK_STEM = "topic"  # for directories without any term
MIXED_DOCUMENTS = 2  # documents a mixed group's name names before "and more"
# Forms of one word (see `_near_duplicate`): a prefix of 4+ letters or a stem of 5+ letters,
# and endings of at most 3.
NEAR_DUPLICATE_STEM = 4
SHARED_STEM = 5
MAX_ENDING = 3


class Candidate(NamedTuple):
    term: str  # key, e.g. "neural network"
    score: float
    cohesion: float


@dataclass(frozen=True)
class DirectoryName:
    name: str
    terms: tuple[str, ...]  # display forms of the terms descriptions name, best first


# --- 2. candidates ----------------------------------------------------------------------------


def candidates(
    group: GroupEvidence, siblings: Sequence[GroupEvidence], cohesion_test: bool = True
) -> list[Candidate]:
    """The key terms of `group` that pass the cohesion test (all of them, scored alike, with
    `cohesion_test` False), best first (ties alphabetical).

    `siblings` are all directories of the level, `group` among them (by identity)."""
    others = [sibling for sibling in siblings if sibling is not group]
    other_size = sum(sibling.size for sibling in others)
    picked_any = any(counts.curated for counts in group.terms.values())
    found = []
    for term, counts in group.terms.items():
        memory_share = counts.memories / max(group.size, 1)
        cohesion = _cohesion(counts, group)
        if cohesion_test and not is_cohesive(counts, group, needs_key_term=picked_any):
            continue
        lift = 1.0
        if other_size:
            used_elsewhere = sum(
                sibling.terms[term].memories for sibling in others if term in sibling.terms
            )
            lift = 1.0 - (used_elsewhere / other_size) / memory_share
        curated = counts.curated / group.size
        score = (
            cohesion * max(lift, DISTINCT_FLOOR) * (CURATED_FLOOR + (1 - CURATED_FLOOR) * curated)
        )
        found.append(Candidate(term, score * (PHRASE_BONUS if is_phrase(term) else 1.0), cohesion))
    found.sort(key=lambda candidate: (-candidate.score, candidate.term))
    return found


def _cohesion(counts: TermCounts, group: GroupEvidence) -> float:
    """How much of the group the term describes: the share of its memories using it (one
    document) or of its documents and of the memories they hold, the lesser (several)."""
    if group.documents <= 1 or group.documents >= group.size:
        return counts.memories / max(group.size, 1)
    reach = counts.reach if counts.reach >= 0 else counts.memories
    return min(counts.documents / group.documents, reach / max(group.size, 1))


def is_cohesive(counts: TermCounts, group: GroupEvidence, needs_key_term: bool = True) -> bool:
    """The cohesion test: the term describes most members. Memorize picked it as a key term of
    at least one member (unless `needs_key_term` is False: no member has key terms), since a
    word members merely use ("rows" of a garden bed and of a table) names none of them; and

    - in a group of one document (or of memories that are each a document of their own), at
      least `COHESION` of the memories use it;
    - in a group of several documents the members are the documents: more than `COHESION` of
      them use it, and they hold more than `COHESION` of the memories. (A meeting transcript
      does not name its topic in every chunk; a term of one of two documents describes half
      the group, not most of it.)"""
    if needs_key_term and counts.curated < 1:
        return False
    size = max(group.size, 1)
    if group.documents <= 1:
        return counts.memories / size >= COHESION
    reach = counts.reach if counts.reach >= 0 else counts.memories
    if group.documents >= group.size:
        reach = counts.memories
    return counts.documents / group.documents > COHESION and reach / size > COHESION


def has_honest_name(group: GroupEvidence) -> bool:
    """True when a name can describe most of the group: a term passes the cohesion test, or one
    document holds most of its memories (its phrase then)."""
    if candidates(group, [group]):
        return True
    return bool(group.document_phrases) and group.document_phrases[0][0] * 2 > group.size


def mixed_phrase(group: GroupEvidence) -> str:
    """A plain, honest phrase for a group no term describes: the phrase of its largest
    document when that document holds most of the memories; else the phrases of its two
    largest documents ("lighthouse keeping and night ferry"), with "and more" when it holds
    other documents too. Without document phrases, the central memory's phrase."""
    phrases = [(size, phrase) for size, phrase in group.document_phrases if phrase]
    if not phrases:
        return group.central_phrase
    if phrases[0][0] * 2 > group.size or len(phrases) == 1:
        return phrases[0][1]
    words = distinct_terms([phrase for _, phrase in phrases], MIXED_DOCUMENTS)
    if group.documents <= MIXED_DOCUMENTS and len(words) > 1:
        return " and ".join(words)
    return ", ".join(words) + " and more"


def title_phrase(group: GroupEvidence, ranked: Sequence[Candidate]) -> str:
    """The title of the one whole document the group holds, as a phrase ("climate of mars"
    from "the_climate_of_mars.md"), when a word of it passes the cohesion test (is among the
    `ranked` candidates): a title is what a person named the document, but a file called
    "Bed002" or "notes" says nothing of what is inside. "" else."""
    words = _name_parts(group.document_title)
    while words and not is_name_word(words[0]):
        words.pop(0)
    while words and not is_name_word(words[-1]):
        words.pop()
    cohesive = {candidate.term for candidate in ranked}
    if not any(plural_key(word) in cohesive or word in cohesive for word in words):
        return ""
    return " ".join(words)


def _name_options(group: GroupEvidence, ranked: Sequence[Candidate]) -> list[str]:
    """Display forms of the names the directory could take, best first: the title of the
    document it holds whole (`title_phrase`), its distinct candidates, then a plain phrase
    (`mixed_phrase`)."""
    title = title_phrase(group, ranked)
    terms = distinct_terms([candidate.term for candidate in ranked], len(ranked))
    spelled = [group.spellings.get(term, term) for term in terms]
    return ([title] if title else []) + spelled + [mixed_phrase(group)]


# --- 3. and 4. distinct among siblings, with the central phrase as fallback ---------------------


def name_siblings(
    groups: Sequence[GroupEvidence], reserved: Iterable[str] = ()
) -> list[DirectoryName]:
    """One valid, sibling-unique name per directory (see the module docstring); names in
    `reserved` (the parent's) are avoided like a sibling's."""
    reserved = [name for name in reserved if name]
    ranked = [candidates(group, groups) for group in groups]
    order = sorted(
        range(len(groups)), key=lambda g: (-(ranked[g][0].score if ranked[g] else 0.0), g)
    )
    chosen: dict[int, str] = {}
    for g in order:
        options = [name_from_terms([term]) for term in _name_options(groups[g], ranked[g])]
        taken = [*reserved, *chosen.values()]
        chosen[g] = _first_fresh(options, taken) or _first_fresh(
            _fallback_options(groups[g], groups), taken
        )
        if not chosen[g]:
            chosen[g] = next((name for name in options if name), "")
    names = [chosen[g] or f"{FALLBACK_STEM}_{g + 1}" for g in range(len(groups))]
    return [
        DirectoryName(name, _description_terms(groups[g], groups))
        for g, name in enumerate(make_unique(names))
    ]


def _description_terms(group: GroupEvidence, siblings: Sequence[GroupEvidence]) -> tuple[str, ...]:
    """What a description names: the best key terms, cohesive ones first, then those of some
    members (a description may list what several members are about; a name may not)."""
    ranked = candidates(group, siblings) + candidates(group, siblings, cohesion_test=False)
    terms = distinct_terms(dict.fromkeys(candidate.term for candidate in ranked), DESCRIPTION_TERMS)
    return tuple(group.spellings.get(term, term) for term in terms)


def name_among(
    group: GroupEvidence, siblings: Sequence[GroupEvidence], taken: Iterable[str]
) -> DirectoryName:
    """The name of a directory joining named siblings (their evidence in `siblings`, their
    names in `taken`): its best candidate among them that no sibling has, else its phrase."""
    levels = [*siblings, group]
    options = [name_from_terms([term]) for term in _name_options(group, candidates(group, levels))]
    taken = list(taken)
    name = (
        _first_fresh(options, taken)
        or _first_fresh(_fallback_options(group, levels), taken)
        or next((name for name in options if name), FALLBACK_STEM)
    )
    return DirectoryName(make_unique([*taken, name])[-1], _description_terms(group, levels))


def name_alone(group: GroupEvidence, fallback: str) -> DirectoryName:
    """The name of a directory without siblings (yet): its best cohesive candidate or phrase."""
    return (
        name_siblings([group])[0]
        if group.terms or group.central_phrase
        else DirectoryName(fallback, ())
    )


def _first_fresh(options: Iterable[str], taken: Sequence[str]) -> str:
    """The first non-empty name of `options` that no name in `taken` clashes with, or ""."""
    return next((name for name in options if name and not _clashes(name, taken)), "")


def _fallback_options(group: GroupEvidence, siblings: Sequence[GroupEvidence]) -> list[str]:
    """Names for a directory whose every option a sibling or its parent took ("meeting" for
    three meetings, "buttons" under "buttons"): the terms its description says it is about
    (`_description_terms`), rather than the taken name with a number ("meeting_2")."""
    return [name_from_terms([term]) for term in _description_terms(group, siblings)]


def _clashes(name: str, taken: Iterable[str]) -> bool:
    return any(name == other or _near_duplicate(name, other) for other in taken)


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
    chosen_words: set[str] = set()
    for term in ranked:
        if len(chosen) == count:
            break
        lowered = term.lower()
        words = lowered.split()
        if not chosen_words.isdisjoint(words):
            continue
        if any(
            other[0] == lowered[0] and _near_duplicate(lowered, other.lower()) for other in chosen
        ):
            continue
        chosen.append(term)
        chosen_words.update(words)
    return chosen


def name_from_terms(terms: Sequence[str]) -> str:
    """ "neural networks", "B-tree" -> "neural_networks_b_tree"; trailing terms that do not fit
    in `MAX_NAME_LENGTH` are left out. Empty when no term has a letter."""
    words = [word for term in terms for word in _name_parts(term)]
    if not words:
        return ""
    name = "_".join(words)
    if len(name) <= MAX_NAME_LENGTH or len(terms) <= 1:
        return name[:MAX_NAME_LENGTH].rstrip("_")
    return name_from_terms(terms[:-1])


def _name_parts(term: str) -> list[str]:
    cleaned = "".join(char if char.isalnum() else " " for char in normalize_text(term).lower())
    parts = cleaned.split()
    while parts and not parts[0][0].isalpha():  # a name starts with a letter
        parts = parts[1:]
    return parts


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
