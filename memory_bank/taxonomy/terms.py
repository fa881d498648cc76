"""Terms of memories and class-based TF-IDF (c-TF-IDF) over groups of them.

Directory names must be plain ASCII (`[a-z0-9_]`), so terms are ASCII words: accents are folded
("café" -> "cafe"), other scripts are dropped here (descriptions keep them via the tldrs).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

MIN_TERM_LENGTH = 3
# Longer "words" are hashes, URLs or base64, never a good directory name.
MAX_TERM_LENGTH = 30
# Titles and keywords are already distilled by memorize, so they count twice as much as text.
CURATED_TERM_REPEAT = 2
RANKED_TERMS = 10  # candidates per group handed to naming and descriptions

# Words that carry no topic in technical prose, on top of scikit-learn's English list.
_GENERIC_WORDS = frozenset(
    {
        "allow", "allows", "based", "called", "different", "example", "examples", "include",
        "included", "includes", "including", "just", "like", "made", "make", "makes", "provide",
        "provided", "provides", "use", "used", "uses", "using", "various", "way", "ways",
    }
)
STOPWORDS = frozenset(ENGLISH_STOP_WORDS) | _GENERIC_WORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# The same words, with group 1 set when the word opens a sentence or a line: there a capital
# letter says nothing about how the word is usually spelled.
_WORD_AFTER_BREAK = re.compile(r"([.!?]\s+|\n\s*)?([A-Za-z][A-Za-z0-9]*)")


_COMBINING_MARKS = re.compile(r"[\u0300-\u036f]")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _fold_to_ascii(text: str) -> str:
    """Strip accents; turn every other non-ASCII character into a word break."""
    if text.isascii():
        return text
    decomposed = _COMBINING_MARKS.sub("", unicodedata.normalize("NFKD", text))
    return _NON_ASCII.sub(" ", decomposed)


def _is_term(word: str) -> bool:
    return MIN_TERM_LENGTH <= len(word) <= MAX_TERM_LENGTH and word.lower() not in STOPWORDS


def tokenize(text: str) -> list[str]:
    """Lowercase ASCII terms of `text`: letters first, 3-30 characters, no stopwords."""
    return [word.lower() for word in _WORD.findall(_fold_to_ascii(text)) if _is_term(word)]


def _terms_and_spellings(text: str, spelling_counts: dict[str, Counter[str]]) -> list[str]:
    """Lowercase terms of `text`; records the spelling of each term not opening a sentence."""
    terms: list[str] = []
    for position, (opener, word) in enumerate(_WORD_AFTER_BREAK.findall(_fold_to_ascii(text))):
        term = word.lower()
        if not MIN_TERM_LENGTH <= len(word) <= MAX_TERM_LENGTH or term in STOPWORDS:
            continue
        terms.append(term)
        if not opener and position > 0:
            spelling_counts[term][word] += 1
    return terms


def _identity(tokens: list[str]) -> list[str]:
    return tokens


@dataclass
class TermMatrix:
    """Weighted term counts per memory (rows in planning order) plus each term's usual spelling."""

    counts: sparse.csr_matrix  # rows x terms
    vocabulary: np.ndarray  # term strings, column order
    spellings: dict[str, str] = field(default_factory=dict)
    presence: sparse.csr_matrix = field(init=False)  # 1 where the memory uses the term

    def __post_init__(self) -> None:
        self.presence = self.counts.copy()
        self.presence.data[:] = 1.0

    @classmethod
    def build(cls, texts: Sequence[str], curated: Sequence[Sequence[str]]) -> TermMatrix:
        """`texts[i]` is memory i's text; `curated[i]` its title words and keywords."""
        spelling_counts: dict[str, Counter[str]] = defaultdict(Counter)
        documents: list[list[str]] = []
        for text, curated_terms in zip(texts, curated, strict=True):
            tokens = _terms_and_spellings(text, spelling_counts)
            tokens.extend(tokenize(" ".join(curated_terms)) * CURATED_TERM_REPEAT)
            documents.append(tokens)
        if not any(documents):  # e.g. every memory is Japanese: no ASCII terms at all
            empty = sparse.csr_matrix((len(documents), 0), dtype=np.float64)
            return cls(empty, np.array([], dtype=object))
        vectorizer = CountVectorizer(analyzer=_identity, dtype=np.float64)
        counts = vectorizer.fit_transform(documents).tocsr()
        vocabulary = vectorizer.get_feature_names_out()
        spellings = {
            term: _usual_spelling(spelling_counts[term])
            for term in vocabulary
            if term in spelling_counts
        }
        return cls(counts, vocabulary, spellings)

    def spelling(self, term: str) -> str:
        return self.spellings.get(term, term)


def _usual_spelling(counts: Counter[str]) -> str:
    """Most frequent spelling ("PostgreSQL"), ties broken alphabetically for determinism."""
    return min(counts.items(), key=lambda pair: (-pair[1], pair[0]))[0]


@dataclass(frozen=True)
class GroupTerms:
    """Term statistics of sibling groups: what c-TF-IDF needs, nothing per memory."""

    vocabulary: np.ndarray  # term strings, column order
    counts: np.ndarray  # groups x terms, weighted term counts
    item_counts: np.ndarray  # groups x terms, number of the group's memories with the term
    sizes: np.ndarray  # memories per group

    @classmethod
    def from_rows(cls, matrix: TermMatrix, groups: Sequence[np.ndarray]) -> GroupTerms:
        """Aggregate the rows of `matrix` belonging to each group (arrays of row numbers)."""
        n_rows = matrix.counts.shape[0]
        group_of_row = np.concatenate(
            [np.full(len(rows), number) for number, rows in enumerate(groups)]
        )
        member_rows = np.concatenate([np.asarray(rows) for rows in groups])
        membership = sparse.csr_matrix(
            (np.ones(len(member_rows)), (group_of_row, member_rows)),
            shape=(len(groups), n_rows),
        )
        counts = membership @ matrix.counts
        item_counts = membership @ matrix.presence
        # Only the terms these groups use: keeps the dense arrays small for big vocabularies.
        used = np.unique(counts.indices)
        return cls(
            vocabulary=matrix.vocabulary[used],
            counts=counts[:, used].toarray(),
            item_counts=item_counts[:, used].toarray(),
            sizes=np.array([len(rows) for rows in groups], dtype=np.float64),
        )


def rank_terms(groups: GroupTerms, limit: int = RANKED_TERMS) -> list[list[str]]:
    """The `limit` most distinctive terms of each group, best first.

    c-TF-IDF (as in BERTopic): tf of the term in the group, times log(1 + A / f) with A the average
    number of terms per group and f the term's count over all sibling groups. The score is further
    scaled by the share of the group's memories that use the term, so one verbose memory cannot
    name a whole directory. Ties are broken alphabetically.
    """
    if groups.counts.size == 0:
        return [[] for _ in range(len(groups.sizes))]
    totals = groups.counts.sum(axis=1, keepdims=True)
    term_frequency = np.divide(
        groups.counts, totals, out=np.zeros_like(groups.counts), where=totals > 0
    )
    average_terms = groups.counts.sum() / len(groups.counts)
    idf = np.log1p(average_terms / np.maximum(groups.counts.sum(axis=0), 1e-12))
    coverage = groups.item_counts / np.maximum(groups.sizes[:, None], 1.0)
    scores = term_frequency * idf * coverage
    # Alphabetical vocabulary order + stable sort = ties resolved by the term itself.
    alphabetical = np.argsort(groups.vocabulary, kind="stable")
    ranked: list[list[str]] = []
    for group_scores in scores:
        order = alphabetical[np.argsort(-group_scores[alphabetical], kind="stable")]
        ranked.append([groups.vocabulary[i] for i in order[:limit] if group_scores[i] > 0])
    return ranked
