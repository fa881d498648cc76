"""Directory names and descriptions: one straight pipeline per set of sibling directories.

1. evidence (`gather_evidence`): per directory, how many of its memories and of its documents
   use each term (`terms.TermMatrix`: words and two-word key phrases), how many memories have it
   among their memorized key terms, and its most central memory;
2. candidates (`candidates`): the terms that pass the cohesion test, i.e. describe most members
   rather than one: at least `COHESION` of the memories and of the documents use the term; scored by that cohesion, by how much more the directory uses
   the term than its siblings do, and by how often memorize picked it as a key term;
3. distinct among siblings (`name_siblings`): directories take their best candidate, the most
   confident first; a name equal to or a variant of a sibling's is passed over;
4. a directory without a cohesive candidate (or whose candidates the siblings took) is named by a
   plain phrase from its most central memory, its first key phrase, never by a collage of terms
   from different members;
5. description: the cohesive terms and the central memory's TL;DR (leaves), or the cohesive
   terms and the subdirectories with their sizes (parents).

Names are lowercase ASCII, start with a letter, at most 60 characters, unique among siblings.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import sparse

from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.terms import TermMatrix, group_membership, is_phrase
from memory_bank.text.lexicon import MAX_NAME_LENGTH, name_words

# A name describes most members: at least this share of the memories and of the documents.
COHESION = 0.5
# A term the siblings use as much as the directory tells nothing apart, but may be all it has.
DISTINCT_FLOOR = 0.05
# A phrase that covers as many members as its best word reads better than the word alone.
PHRASE_BONUS = 1.25
# Terms memorize never picked as a key term of any member keep this share of their score.
CURATED_FLOOR = 0.25
EVIDENCE_TERMS = 200  # terms kept per directory: enough to compare top-level groups
DESCRIPTION_TERMS = 3
LISTED_CHILDREN = 7  # subdirectories a description names before "and N more"
MAX_TLDR_CHARS = 200
FALLBACK_STEM = "topic"  # for directories without any ASCII term (e.g. Japanese text)
# Forms of one word (see `_near_duplicate`): a prefix of 4+ letters or a stem of 5+ letters,
# and endings of at most 3.
NEAR_DUPLICATE_STEM = 4
SHARED_STEM = 5
MAX_ENDING = 3

Listed = tuple[str, int]  # a subdirectory's label in a description and its number of memories


class TermCounts(NamedTuple):
    memories: int  # memories of the directory using the term
    documents: int  # documents with a memory in the directory using it
    curated: int  # memories with the term among their title words or keywords


@dataclass(frozen=True)
class GroupEvidence:
    """What naming knows of one directory: serializable, nothing per memory."""

    size: int  # memories
    documents: int
    terms: dict[str, TermCounts]  # term key -> counts, the best-supported `EVIDENCE_TERMS`
    spellings: dict[str, str]  # display form of each term
    central_phrase: str = ""  # a plain phrase from the most central memory (display form)
    central_tldr: str = ""


class Candidate(NamedTuple):
    term: str  # key, e.g. "neural network"
    score: float
    cohesion: float


@dataclass(frozen=True)
class DirectoryName:
    name: str
    terms: tuple[str, ...]  # display forms of the terms descriptions name, best first


# --- 1. evidence ------------------------------------------------------------------------------


def gather_evidence(
    matrix: TermMatrix,
    groups: Sequence[np.ndarray],
    documents: np.ndarray,
    central_rows: Sequence[int],
    items: Sequence[TaxonomyItem],
) -> list[GroupEvidence]:
    """Evidence of each group of rows (of `matrix` and `items`); `documents[row]` is the row's
    document number and `central_rows[g]` the most central row of group g."""
    n_rows = matrix.presence.shape[0]
    membership = group_membership(groups, n_rows)
    memory_counts = (membership @ matrix.presence).toarray()
    curated_counts = (membership @ matrix.curated).toarray()
    # Documents per group: one row per (group, document) pair, then pairs summed by group.
    pair_group = np.repeat(np.arange(len(groups)), [len(rows) for rows in groups])
    pair_rows = np.concatenate([np.asarray(rows, dtype=np.int64) for rows in groups])
    pairs, pair_of_row = np.unique(
        np.stack([pair_group, documents[pair_rows]], axis=1), axis=0, return_inverse=True
    )
    pair_membership = sparse.csr_matrix(
        (np.ones(len(pair_rows)), (pair_of_row.ravel(), pair_rows)), shape=(len(pairs), n_rows)
    )
    pair_uses = ((pair_membership @ matrix.presence) > 0).astype(np.float64)
    to_group = sparse.csr_matrix(
        (np.ones(len(pairs)), (pairs[:, 0], np.arange(len(pairs)))), shape=(len(groups), len(pairs))
    )
    document_counts = (to_group @ pair_uses).toarray()
    document_totals = np.bincount(pairs[:, 0], minlength=len(groups))
    evidence = []
    for g, rows in enumerate(groups):
        support = memory_counts[g] + curated_counts[g]
        kept = [int(i) for i in np.argsort(-support, kind="stable")[:EVIDENCE_TERMS] if support[i]]
        vocabulary = [str(matrix.vocabulary[i]) for i in kept]
        central = items[central_rows[g]]
        coverage = memory_counts[g] / max(len(rows), 1)
        evidence.append(
            GroupEvidence(
                size=len(rows),
                documents=int(document_totals[g]),
                terms={
                    term: TermCounts(
                        int(memory_counts[g, i]),
                        int(document_counts[g, i]),
                        int(curated_counts[g, i]),
                    )
                    for term, i in zip(vocabulary, kept, strict=True)
                },
                spellings={term: matrix.spelling(term) for term in vocabulary},
                central_phrase=central_phrase(central, matrix, coverage),
                central_tldr=central.tldr,
            )
        )
    return evidence


def central_phrase(item: TaxonomyItem, matrix: TermMatrix, coverage: np.ndarray) -> str:
    """A plain phrase from a memory: the keyword of it whose words the group uses most
    (`coverage`: share of the group's memories using each term of `matrix`), phrases of two or
    more words ahead at equal use; else the first words of its title; "" when none is ASCII."""
    best, best_score = "", 0.0
    for keyword in item.keywords:
        words = [word for word in name_words(keyword) if word not in matrix.annotations]
        if not words:
            continue
        shares = [coverage[column] for word in words if (column := matrix.column(word)) >= 0]
        score = (sum(shares) / len(words)) * (PHRASE_BONUS if len(words) > 1 else 1.0)
        if score > best_score:
            best, best_score = " ".join(words), score
    if best:
        return best
    title = [
        word for word in name_words(item.title.replace("_", " ")) if word not in matrix.annotations
    ]
    return " ".join(title[:3])


# --- 2. candidates ----------------------------------------------------------------------------


def candidates(
    group: GroupEvidence, siblings: Sequence[GroupEvidence], cohesion_test: bool = True
) -> list[Candidate]:
    """The key terms of `group` that pass the cohesion test (all of them, scored alike, with
    `cohesion_test` False), best first (ties alphabetical).

    `siblings` are all directories of the level, `group` among them (by identity)."""
    others = [sibling for sibling in siblings if sibling is not group]
    other_size = sum(sibling.size for sibling in others)
    found = []
    for term, counts in group.terms.items():
        memory_share = counts.memories / max(group.size, 1)
        document_share = counts.documents / max(group.documents, 1)
        cohesion = min(memory_share, document_share)
        if cohesion_test and cohesion < COHESION:
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


def _name_options(group: GroupEvidence, ranked: Sequence[Candidate]) -> list[str]:
    """Display forms of the names the directory could take, best first: its distinct
    candidates, then the plain phrase of its central memory."""
    terms = distinct_terms([candidate.term for candidate in ranked], len(ranked))
    return [group.spellings.get(term, term) for term in terms] + [group.central_phrase]


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
        fresh = [name for name in options if name and not _clashes(name, taken)]
        chosen[g] = fresh[0] if fresh else next((name for name in options if name), "")
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
    fresh = [name for name in options if name and not _clashes(name, taken)]
    name = fresh[0] if fresh else next((name for name in options if name), FALLBACK_STEM)
    return DirectoryName(make_unique([*taken, name])[-1], _description_terms(group, levels))


def name_alone(group: GroupEvidence, fallback: str) -> DirectoryName:
    """The name of a directory without siblings (yet): its best cohesive candidate or phrase."""
    return (
        name_siblings([group])[0]
        if group.terms or group.central_phrase
        else DirectoryName(fallback, ())
    )


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
    in `MAX_NAME_LENGTH` are left out. Empty when no term has an ASCII letter."""
    words = [word for term in terms for word in _name_parts(term)]
    if not words:
        return ""
    name = "_".join(words)
    if len(name) <= MAX_NAME_LENGTH or len(terms) <= 1:
        return name[:MAX_NAME_LENGTH].rstrip("_")
    return name_from_terms(terms[:-1])


def _name_parts(term: str) -> list[str]:
    cleaned = "".join(char if char.isascii() and char.isalnum() else " " for char in term.lower())
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


# --- 5. descriptions --------------------------------------------------------------------------


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
