"""Name terms of memories and their scores over groups of memories.

A term is a word ("kubernetes") or a two-word key phrase ("neural network"). Phrases come from
the memories' keywords, which memorize already picked as key phrases; a memory uses a phrase when
its text or keywords hold the two words side by side. Terms are keyed in lowercase with a
plural "s" folded away, so "network" and "Networks" count as one; each key keeps its most common
written form for display ("networks", "PostgreSQL").

Directory names must be plain ASCII (`[a-z0-9_]`), so terms are ASCII words: accents are folded
("café" -> "cafe"), other scripts are dropped here (descriptions keep them via the tldrs).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise
from typing import NamedTuple

import numpy as np
from scipy import sparse

from memory_bank.text.lexicon import fold_to_ascii, is_name_word, plural_key

RANKED_TERMS = 10  # candidates per group handed to naming and descriptions
# A phrase that covers as many memories as its best word reads better than the word alone.
PHRASE_BONUS = 1.25
# Lowest factor of the spread penalty (for a term in every leaf group): ranks still hold.
SPREAD_FLOOR = 0.05
MIN_SPREAD_GROUPS = 4  # below this many groups, "spread across most groups" means nothing
# A term siblings use as much as the group tells nothing apart, but it may still be all there is.
DISTINCT_FLOOR = 0.05

# Letter-led words, or runs of anything that separates them except whitespace and hyphens:
# two words are adjacent (may form a phrase) only with nothing but " " or "-" between them. A
# single letter hyphenated to a word stays one word ("B-tree", "k-means", "t-SNE").
_TOKEN = re.compile(r"[A-Za-z](?:-[A-Za-z][A-Za-z0-9]*|[A-Za-z0-9]*)|[^A-Za-z\s-]+")
# Capitalized words opening a sentence or a line: the capital says nothing about the word there.
# (Two simple patterns: one alternation scanning every position was several times slower.)
_SENTENCE_OPENER = re.compile(r"[.!?][ \t]+([A-Z][A-Za-z0-9]*)")
_LINE_OPENER = re.compile(r"^[^A-Za-z\n]*([A-Z][A-Za-z0-9]*)", re.MULTILINE)


def is_phrase(term: str) -> bool:
    return " " in term


def phrase_mask(vocabulary: np.ndarray) -> np.ndarray:
    return np.fromiter(map(is_phrase, vocabulary), dtype=bool, count=len(vocabulary))


def _binary_matrix(rows: Sequence[set[str]], column: dict[str, int]) -> sparse.csr_matrix:
    """rows x vocabulary matrix with a 1 where the row holds the term."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.fromiter(
        chain.from_iterable(map(column.__getitem__, row) for row in rows),
        dtype=np.int64,
        count=int(indptr[-1]),
    )
    matrix = sparse.csr_matrix(
        (np.ones(len(indices)), indices, indptr), shape=(len(rows), len(column))
    )
    matrix.sort_indices()
    return matrix


class _Reader:
    """Turns texts into term keys, remembering each word's key and how often each form occurs."""

    # Joins a memory's keywords and title words into one text without making them adjacent.
    CURATED_SEPARATOR = " | "

    def __init__(self) -> None:
        self._keys: dict[str, str | None] = {}
        self._text_forms: Counter[str] = Counter()
        self._openers: list[str] = []  # forms opening a sentence, not counted in the end
        self._first_forms: dict[str, str] = {}  # key -> first form met, for words only in titles
        self.phrase_forms: dict[str, Counter[str]] = defaultdict(Counter)  # from keywords

    def curated_terms(self, title: str, keywords: Sequence[str]) -> set[str]:
        """Words of a memory's keywords and title, and the two-word phrases of its keywords
        (recorded with their form). A title chains several key phrases, so its words never make
        a phrase here."""
        parts = [*keywords, *title.split("_")]
        tokens = _TOKEN.findall(fold_to_ascii(self.CURATED_SEPARATOR.join(parts)))
        keys = self._keys_of(tokens)
        terms = set(filter(None, keys))
        for position, (first, second) in enumerate(pairwise(keys)):
            if first and second and first != second:
                phrase = f"{first} {second}"
                self.phrase_forms[phrase][f"{tokens[position]} {tokens[position + 1]}".lower()] += 1
                terms.add(phrase)
        return terms

    def text_keys(self, text: str) -> list[str | None]:
        """Key per token of `text`; None for separators and for words that are no terms."""
        folded = fold_to_ascii(text)
        tokens = _TOKEN.findall(folded)
        self._text_forms.update(tokens)  # counted in C; non-words are filtered out later
        if folded != folded.lower():  # a text without capitals has no capitalized opener
            self._openers.extend(_SENTENCE_OPENER.findall(folded))
            self._openers.extend(_LINE_OPENER.findall(folded))
        return self._keys_of(tokens)

    def _keys_of(self, tokens: Sequence[str]) -> list[str | None]:
        known = self._keys
        return [known[token] if token in known else self._learn(token) for token in tokens]

    def _learn(self, token: str) -> str | None:
        key = plural_key(token) if token[0].isalpha() and is_name_word(token) else None
        self._keys[token] = key
        if key:
            self._first_forms.setdefault(key, token.lower())
        return key

    def spellings(self, vocabulary: set[str]) -> dict[str, str]:
        """Display form of each term: `word_spellings`, and for a phrase the form its keywords
        use most, with the words' own capitals ("PostgreSQL indexes", "build automation")."""
        spellings = self.word_spellings({term for term in vocabulary if not is_phrase(term)})
        for term in vocabulary:
            if is_phrase(term):
                words = _most_common(self.phrase_forms[term]).split(" ")
                shown = [spellings[key] for key in term.split(" ")]
                spellings[term] = " ".join(
                    spelled if spelled.lower() == word else word
                    for word, spelled in zip(words, shown, strict=True)
                )
        return spellings

    def word_spellings(self, vocabulary: set[str]) -> dict[str, str]:
        """Display form of each word key: its most common plural form, lowercase unless the word
        is never written in lowercase ("PostgreSQL"); for words only met in titles and keywords,
        the first form met."""
        self._text_forms.subtract(self._openers)
        self._openers = []
        forms: dict[str, Counter[str]] = defaultdict(Counter)
        for form, count in self._text_forms.items():
            key = self._keys.get(form)
            if count > 0 and key in vocabulary:
                forms[key][form] += count
        spellings = {key: self._first_forms[key] for key in vocabulary}
        for key, counts in forms.items():
            lowered: Counter[str] = Counter()
            for form, count in counts.items():
                lowered[form.lower()] += count
            word = _most_common(lowered)
            if word not in counts:  # never in lowercase: a name, keep how it is written
                word = _most_common(Counter({f: c for f, c in counts.items() if f.lower() == word}))
            spellings[key] = word
        return spellings


def _most_common(counts: Counter[str]) -> str:
    """The most frequent entry, ties broken alphabetically for determinism."""
    return min(counts.items(), key=lambda pair: (-pair[1], pair[0]))[0]


def _phrases_among(keys: Sequence[str | None], phrases: dict[str, set[str]]) -> set[str]:
    """The known phrases formed by two adjacent keys; `phrases` maps a first word to phrases."""
    found: set[str] = set()
    for first, second in pairwise(keys):
        if first in phrases and second:
            phrase = f"{first} {second}"
            if phrase in phrases[first]:
                found.add(phrase)
    return found


@dataclass
class TermMatrix:
    """Which memory (row, in planning order) uses which term, and each term's display form."""

    presence: sparse.csr_matrix  # rows x terms: 1 where the memory's text, title or keywords use it
    curated: sparse.csr_matrix  # rows x terms: 1 where the memory's title or keywords hold it
    vocabulary: np.ndarray  # term keys, alphabetical (so ties in scores resolve alphabetically)
    spellings: dict[str, str]
    phrase_mask: np.ndarray = field(init=False)  # True for the two-word terms

    def __post_init__(self) -> None:
        self.phrase_mask = phrase_mask(self.vocabulary)

    @classmethod
    def build(
        cls, texts: Sequence[str], titles: Sequence[str], keywords: Sequence[Sequence[str]]
    ) -> TermMatrix:
        """`texts[i]`, `titles[i]` (snake_case) and `keywords[i]` describe memory i."""
        reader = _Reader()
        curated_rows = [
            reader.curated_terms(title, row) for title, row in zip(titles, keywords, strict=True)
        ]
        phrases_by_first_word: dict[str, set[str]] = defaultdict(set)
        for phrase in reader.phrase_forms:
            phrases_by_first_word[phrase.split(" ", 1)[0]].add(phrase)
        used_rows: list[set[str]] = []
        for text, curated in zip(texts, curated_rows, strict=True):
            text_keys = reader.text_keys(text)
            used = set(filter(None, text_keys))
            if phrases_by_first_word:
                used |= _phrases_among(text_keys, phrases_by_first_word)
            used |= curated
            used_rows.append(used)
        if not any(used_rows):  # e.g. every memory is Japanese: no ASCII terms at all
            empty = sparse.csr_matrix((len(used_rows), 0), dtype=np.float64)
            return cls(empty, empty.copy(), np.array([], dtype=object), {})
        vocabulary = np.array(sorted(set().union(*used_rows)), dtype=object)
        column = {term: number for number, term in enumerate(vocabulary)}
        presence = _binary_matrix(used_rows, column)
        curated_matrix = _binary_matrix(curated_rows, column)
        return cls(presence, curated_matrix, vocabulary, reader.spellings(set(vocabulary)))

    def spelling(self, term: str) -> str:
        return self.spellings.get(term, term)


@dataclass(frozen=True)
class GroupTerms:
    """Term statistics of sibling groups: what scoring needs, nothing per memory."""

    vocabulary: np.ndarray  # term keys, alphabetical
    item_counts: np.ndarray  # groups x terms: the group's memories using the term
    curated_counts: np.ndarray  # groups x terms: the group's memories whose title/keywords hold it
    sizes: np.ndarray  # memories per group
    phrases: np.ndarray  # True for the two-word terms
    # Per term, the share of the corpus's leaf groups that use it (None: not known).
    spread: np.ndarray | None = None

    @classmethod
    def from_rows(
        cls,
        matrix: TermMatrix,
        groups: Sequence[np.ndarray],
        spread: np.ndarray | None = None,
    ) -> GroupTerms:
        """Aggregate the rows of `matrix` belonging to each group (arrays of row numbers);
        `spread` is aligned with `matrix.vocabulary`."""
        membership = group_membership(groups, matrix.presence.shape[0])
        item_counts = membership @ matrix.presence
        curated_counts = membership @ matrix.curated
        # Only the terms these groups use: keeps the dense arrays small for big vocabularies.
        used = np.unique(item_counts.indices)
        return cls(
            vocabulary=matrix.vocabulary[used],
            item_counts=item_counts[:, used].toarray(),
            curated_counts=curated_counts[:, used].toarray(),
            sizes=np.array([len(rows) for rows in groups], dtype=np.float64),
            phrases=matrix.phrase_mask[used],
            spread=None if spread is None else spread[used],
        )


def group_membership(groups: Sequence[np.ndarray], n_rows: int) -> sparse.csr_matrix:
    """groups x rows matrix with a 1 where the row belongs to the group."""
    sizes = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    group_of_row = np.repeat(np.arange(len(groups)), sizes)
    member_rows = np.concatenate([np.asarray(rows, dtype=np.int64) for rows in groups])
    return sparse.csr_matrix(
        (np.ones(len(member_rows)), (group_of_row, member_rows)), shape=(len(groups), n_rows)
    )


def group_spread(item_counts: np.ndarray | sparse.spmatrix) -> np.ndarray | None:
    """Per term, the share of groups (rows) using it; None when there are too few groups."""
    n_groups = item_counts.shape[0]
    if n_groups < MIN_SPREAD_GROUPS:
        return None
    using = (item_counts > 0).sum(axis=0)
    return np.asarray(using, dtype=np.float64).ravel() / n_groups


class RankedTerm(NamedTuple):  # a tuple: thousands are made per planning call
    term: str  # key, e.g. "neural network"
    score: float
    coverage: float  # share of the group's memories using the term


def score_terms(groups: GroupTerms) -> np.ndarray:
    """groups x terms: how well each term represents its group among the sibling groups.

    support: share of the group's memories using the term, half of it only for terms that are
    never in a title or keyword list (memorize's own picks are better names than any text word).
    distinctiveness: 1 - p_siblings / p, with p the term's coverage in the group and p_siblings
    its coverage over the siblings' memories: 1 for a term no sibling uses, `DISTINCT_FLOOR` for
    one the siblings use as much (it tells nothing apart, but may be all a group has).
    spread: terms used across most leaf groups of the corpus are generic there, so the score
    falls with the square of that share. Two-word phrases get `PHRASE_BONUS`.
    """
    sizes = np.maximum(groups.sizes[:, None], 1.0)
    coverage = groups.item_counts / sizes
    scores = (coverage + groups.curated_counts / sizes) / 2.0
    if len(groups.sizes) > 1:
        other_sizes = np.maximum(groups.sizes.sum() - groups.sizes, 1.0)[:, None]
        elsewhere = (groups.item_counts.sum(axis=0) - groups.item_counts) / other_sizes
        lift = 1.0 - np.divide(elsewhere, coverage, out=np.ones_like(coverage), where=coverage > 0)
        scores *= np.clip(lift, DISTINCT_FLOOR, 1.0)
    if groups.spread is not None:
        scores *= np.maximum(1.0 - groups.spread**2, SPREAD_FLOOR)
    scores[:, groups.phrases] *= PHRASE_BONUS
    return scores


def rank_terms(groups: GroupTerms, limit: int = RANKED_TERMS) -> list[list[RankedTerm]]:
    """The `limit` best terms of each group (see `score_terms`), best first, ties alphabetical."""
    if groups.item_counts.size == 0:
        return [[] for _ in range(len(groups.sizes))]
    scores = score_terms(groups)
    # The vocabulary is alphabetical and the sort stable: ties resolve by the term itself.
    order = np.argsort(-scores, axis=1, kind="stable")[:, :limit]
    rows = np.arange(len(scores))[:, None]
    best_scores = scores[rows, order].tolist()
    coverage = (groups.item_counts[rows, order] / np.maximum(groups.sizes[:, None], 1.0)).tolist()
    terms = groups.vocabulary[order].tolist()
    return [
        [
            RankedTerm(term, score, share)
            for term, score, share in zip(row_terms, row_scores, row_coverage, strict=True)
            if score > 0
        ]
        for row_terms, row_scores, row_coverage in zip(terms, best_scores, coverage, strict=True)
    ]
