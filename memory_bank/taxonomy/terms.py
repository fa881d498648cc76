"""Name terms of memories: which memory uses which candidate term (naming scores them).

A term is a word ("kubernetes") or a two-word key phrase ("neural network"). Phrases come from
the memories' keywords, which memorize already picked as key phrases; a memory uses a phrase when
its text or keywords hold the two words side by side. Terms are keyed in lowercase with a
plural "s" folded away, so "network" and "Networks" count as one; each key keeps its most common
written form for display ("networks", "PostgreSQL").

Terms are words of any script (`lexicon.name_tokens`): accents kept ("café"), Chinese and
Japanese segmented into words; the function words of each text's own language are no terms.

Transcript markup is no term: a word the texts write in braces, brackets or angle brackets
("{vocalsound}", "[laughter]", "<noise>") is an annotation, removed from texts and keywords; and
speaker labels opening the lines of a conversation ("Project Manager: ...") say who speaks, not
what about, so they are left out of its text.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain, pairwise

import numpy as np
from scipy import sparse

from memory_bank.text.lexicon import (
    NAME_STOPWORDS,
    TRANSCRIPT_ANNOTATION,
    function_words_of,
    is_name_word,
    name_tokens,
    normalize_text,
    plural_key,
)

# Speaker labels opening the lines of a transcript ("Grad A: ...", "Project Manager: ...").
_SPEAKER_LABEL = re.compile(
    r"^[ \t]*[A-Z][A-Za-z0-9.'_-]*(?:[ \t][A-Za-z0-9.'_-]+){0,3}:[ \t]", re.MULTILINE
)

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
        tokens = name_tokens(self.CURATED_SEPARATOR.join(parts))
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
        normal = normalize_text(text)
        tokens = name_tokens(normal)
        self._text_forms.update(tokens)  # counted in C; non-words are filtered out later
        if normal != normal.lower():  # a text without capitals has no capitalized opener
            self._openers.extend(_SENTENCE_OPENER.findall(normal))
            self._openers.extend(_LINE_OPENER.findall(normal))
        keys = self._keys_of(tokens)
        if normal.isascii():
            return keys
        # Another language's function words ("der", "est") are no terms in its texts.
        stopwords = function_words_of(token.lower() for token in tokens) - NAME_STOPWORDS
        if not stopwords:
            return keys
        return [
            None if key and token.lower() in stopwords else key
            for token, key in zip(tokens, keys, strict=True)
        ]

    def _keys_of(self, tokens: Sequence[str]) -> list[str | None]:
        known = self._keys
        return [known[token] if token in known else self._learn(token) for token in tokens]

    def _learn(self, token: str) -> str | None:
        key = plural_key(token) if is_name_word(token) else None
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


def _without_speakers(text: str) -> str:
    """`text` without the speaker labels of its lines, when at least two lines have one."""
    if ":" not in text or len(_SPEAKER_LABEL.findall(text)) < 2:
        return text
    return _SPEAKER_LABEL.sub("", text)


def _without(keywords: Sequence[str], annotations: set[str]) -> list[str]:
    """Keywords with the annotation words taken out (a keyword of nothing else is dropped)."""
    kept = []
    for keyword in keywords:
        words = [word for word in keyword.split() if word.lower() not in annotations]
        if words:
            kept.append(" ".join(words))
    return kept


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
    annotations: frozenset[str] = frozenset()  # markup words removed from the texts
    phrase_mask: np.ndarray = field(init=False)  # True for the two-word terms

    def __post_init__(self) -> None:
        self.phrase_mask = phrase_mask(self.vocabulary)

    @classmethod
    def build(
        cls, texts: Sequence[str], titles: Sequence[str], keywords: Sequence[Sequence[str]]
    ) -> TermMatrix:
        """`texts[i]`, `titles[i]` (snake_case) and `keywords[i]` describe memory i."""
        annotations = {
            word.lower()
            for text in texts
            if "{" in text or "[" in text or "<" in text
            for match in TRANSCRIPT_ANNOTATION.findall(text)
            for word in match.replace("_", " ").replace("-", " ").split()
        }
        if annotations:
            texts = [TRANSCRIPT_ANNOTATION.sub(" ", text) for text in texts]
            keywords = [_without(row, annotations) for row in keywords]
            titles = [
                "_".join(part for part in title.split("_") if part.lower() not in annotations)
                for title in titles
            ]
        texts = [_without_speakers(text) for text in texts]
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
            return cls(empty, empty.copy(), np.array([], dtype=object), {}, frozenset(annotations))
        vocabulary = np.array(sorted(set().union(*used_rows)), dtype=object)
        column = {term: number for number, term in enumerate(vocabulary)}
        presence = _binary_matrix(used_rows, column)
        curated_matrix = _binary_matrix(curated_rows, column)
        spellings = reader.spellings(set(vocabulary))
        return cls(presence, curated_matrix, vocabulary, spellings, frozenset(annotations))

    def spelling(self, term: str) -> str:
        return self.spellings.get(term, term)

    def column(self, word: str) -> int:
        """Column of a word's term (any written form), -1 when it is not in the vocabulary."""
        key = plural_key(normalize_text(word))
        position = int(np.searchsorted(self.vocabulary, key)) if len(self.vocabulary) else 0
        found = position < len(self.vocabulary) and self.vocabulary[position] == key
        return position if found else -1


def group_membership(groups: Sequence[np.ndarray], n_rows: int) -> sparse.csr_matrix:
    """groups x rows matrix with a 1 where the row belongs to the group."""
    sizes = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    group_of_row = np.repeat(np.arange(len(groups)), sizes)
    member_rows = np.concatenate([np.asarray(rows, dtype=np.int64) for rows in groups])
    return sparse.csr_matrix(
        (np.ones(len(member_rows)), (group_of_row, member_rows)), shape=(len(groups), n_rows)
    )
