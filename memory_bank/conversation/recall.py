"""Finding the turns a query needs: an in-memory index over every turn of a conversation.

Each turn is scored like the store's hybrid search: alpha * lexical + (1 - alpha) * cosine, where
lexical is the BM25 idf of the query's stems the turn holds, divided by the best turn's (so the
best lexical match is 1 and "no query word" is 0). What the question asks then lifts the turns
that can answer it (`RecallFocus`): a question about someone is answered by what that person
said (their own turns), a question naming a date by the turns said or dated then, a "when"
question by turns that say when. Then, as in human free recall (seed 004 §4.3,
EM-LLM), *temporal contiguity*: a turn next to a strong hit is lifted by a share of its
neighbour's score, since a fact and the turns around it (the question before, the "yes, on
Friday" after) belong together; and a small *recency* term that halves every `half_life` turns.

The index grows by one row per turn (vectors in a doubling array, stems in posting lists), so
adding a turn costs no rebuild; a query costs one matrix-vector product and a few posting-list
sums, however long the conversation. bm25s is not used here because it cannot add a document
to a built index, and a live conversation adds one per turn.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from memory_bank.claims.questions import asked_kind
from memory_bank.index.embedding import EMBEDDING_DIM
from memory_bank.text.dates import Period, named_periods
from memory_bank.text.lexicon import QUESTION_WORDS, search_tokens, stem_words


@dataclass(frozen=True)
class RecallWeights:
    alpha: float = 0.5  # lexical share of the base score (as retrieval.alpha)
    contiguity: float = 0.2  # share of the best neighbour's base score a turn gains
    recency: float = 0.05  # bonus of the newest turn, halving every half_life turns
    half_life: float = 500.0
    speaker: float = 0.1  # bonus of a turn said by someone the question names
    period: float = 0.2  # bonus of a turn said or dated within a period the question names
    dated: float = 0.05  # bonus of a turn that says when, for a "when" question


@dataclass(frozen=True)
class RecallFocus:
    """What a question asks of the turns: whose they are, when they were said or are dated,
    whether they say when."""

    speakers: frozenset[str] = frozenset()  # speakers the question names (lower case)
    periods: tuple[Period, ...] = ()
    asks_date: bool = False

    @classmethod
    def of(cls, question: str, speakers: Sequence[str]) -> RecallFocus:
        words = set(re.findall(r"[\w'-]+", question.lower()))
        named = frozenset(
            speaker.lower()
            for speaker in speakers
            if speaker.lower() in words or speaker.lower().split()[0] in words
        )
        return cls(named, tuple(named_periods(question)), asked_kind(question) == "date")


@dataclass
class TurnDates:
    """When each turn was said (a day ordinal, -1 unknown) and the periods it names."""

    said: list[int] = field(default_factory=list)
    named: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


class TurnIndex:
    """Vectors and stems of a conversation's turns, row i = turn i."""

    def __init__(self) -> None:
        self._vectors = np.zeros((64, EMBEDDING_DIM), dtype=np.float32)
        self.size = 0
        self._postings: dict[str, list[int]] = defaultdict(list)
        self._cached: dict[str, np.ndarray] = {}
        self._speakers: list[str] = []
        self.dates = TurnDates()

    @property
    def vectors(self) -> np.ndarray:
        return self._vectors[: self.size]

    def add(
        self,
        text: str,
        vector: np.ndarray,
        speaker: str = "",
        said: date | None = None,
        periods: Sequence[Period] = (),
    ) -> None:
        """Index turn number `size`: its text, vector, speaker, the day it was said and the
        periods it names."""
        self._speakers.append(speaker.lower())
        self.dates.said.append(said.toordinal() if said is not None else -1)
        if periods:
            self.dates.named[self.size] = [(a.toordinal(), b.toordinal()) for a, b in periods]
        if self.size == len(self._vectors):
            grown = np.zeros((2 * len(self._vectors), EMBEDDING_DIM), dtype=np.float32)
            grown[: self.size] = self._vectors[: self.size]
            self._vectors = grown
        self._vectors[self.size] = vector
        for stem in set(stem_words(search_tokens(text))):
            self._postings[stem].append(self.size)
            self._cached.pop(stem, None)
        self.size += 1

    def vector(self, turn_id: int) -> np.ndarray:
        return self._vectors[turn_id]

    @property
    def speakers(self) -> list[str]:
        return list(dict.fromkeys(self._speakers))

    def scores(
        self,
        query: str,
        query_vector: np.ndarray,
        weights: RecallWeights,
        focus: RecallFocus | None = None,
    ) -> np.ndarray:
        """The recall score of every turn for the query (module docstring)."""
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        cosine = self.vectors @ query_vector
        lexical = np.zeros(self.size, dtype=np.float32)
        terms = [term for term in search_tokens(query) if term not in QUESTION_WORDS]
        for stem in set(stem_words(terms)):
            postings = self._posting_array(stem)
            if len(postings):
                frequency = len(postings)
                idf = math.log(1.0 + (self.size - frequency + 0.5) / (frequency + 0.5))
                lexical[postings] += idf
        best = float(lexical.max())
        if best > 0:
            lexical /= best
        base = weights.alpha * lexical + (1.0 - weights.alpha) * cosine
        if focus is not None:
            base = base + self._focus(focus, weights)
        neighbour = np.zeros_like(base)
        neighbour[1:] = base[:-1]
        neighbour[:-1] = np.maximum(neighbour[:-1], base[1:])
        age = np.arange(self.size - 1, -1, -1, dtype=np.float32)
        recency = weights.recency * np.power(0.5, age / weights.half_life)
        return base + weights.contiguity * np.maximum(neighbour, 0.0) + recency

    def _focus(self, focus: RecallFocus, weights: RecallWeights) -> np.ndarray:
        """The bonus each turn gets for what the question asks of it."""
        bonus = np.zeros(self.size, dtype=np.float32)
        if focus.speakers:
            bonus += weights.speaker * np.fromiter(
                (speaker in focus.speakers for speaker in self._speakers), bool, self.size
            )
        if focus.periods:
            said = np.asarray(self.dates.said)
            within = np.zeros(self.size, dtype=bool)
            for start, end in focus.periods:
                first, last = start.toordinal(), end.toordinal()
                within |= (said >= first) & (said <= last)
                for turn, named in self.dates.named.items():
                    within[turn] |= any(a <= last and b >= first for a, b in named)
            bonus += weights.period * within
        if focus.asks_date and self.dates.named:
            dated = np.zeros(self.size, dtype=bool)
            dated[list(self.dates.named)] = True
            bonus += weights.dated * dated
        return bonus

    def _posting_array(self, stem: str) -> np.ndarray:
        cached = self._cached.get(stem)
        if cached is None:
            cached = np.asarray(self._postings.get(stem, ()), dtype=np.int64)
            self._cached[stem] = cached
        return cached
