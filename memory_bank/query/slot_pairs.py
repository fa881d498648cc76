"""The memories the slot rules compare, and the sentence pairs worth judging between two of them.

Which sentences of an earlier and a later memory are worth comparing (a shared value or frame
word, or close vectors) does not depend on the question, and the same memories meet question
after question: every question about a meeting series reads its dated turns. Finding the pairs
is a loop over every sentence of one memory against every sentence of the other, a large share
of the cost of such a question; `SentencePairs` keeps them per pair of memories for one store
version, within which a memory's text, sentences and stored vectors never change.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from memory_bank.graph.contradictions import PARAPHRASE_COSINE
from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.subjects import TextFacts

# Sentence pairs sharing no value and no frame word are compared only from this cosine.
CANDIDATE_COSINE = PARAPHRASE_COSINE


@dataclass(frozen=True)
class SlotMemory:
    """A memory the answer may draw on: its chunk, when it was added, its sentences."""

    chunk: int  # memory index
    node_id: str
    added_at: float
    text: str  # the chunk's raw text (what it is about: its title or first subject)
    sentences: Sequence[str]
    vectors: np.ndarray  # one row per sentence (normalized), or an empty array


@dataclass(frozen=True)
class SentencePair:
    """A sentence of an earlier memory and one of a later memory, with both memories' facts."""

    old_facts: TextFacts
    new_facts: TextFacts
    earlier: SentenceFacts
    later: SentenceFacts
    cosine: float | None  # of the two sentences' stored vectors
    new_vector: np.ndarray | None


class Candidate(NamedTuple):
    """A sentence pair to judge for the question, between these two memories."""

    older: SlotMemory
    newer: SlotMemory
    pair: SentencePair


# A memory's facts and their `fact_vectors`, worked out once per question that pairs it.
FactsOf = Callable[[SlotMemory], tuple[TextFacts, np.ndarray]]


def sentence_pairs(
    old: tuple[TextFacts, np.ndarray], new: tuple[TextFacts, np.ndarray]
) -> list[SentencePair]:
    """The sentence pairs worth judging: a shared value or frame word, or close vectors.
    Each memory comes with its facts and their `fact_vectors`."""
    (old_facts, old_rows), (new_facts, new_rows) = old, new
    # NaN where a sentence has no stored vector: no cosine, the words alone decide.
    if old_rows.shape[1] == new_rows.shape[1]:
        cosines = new_rows @ old_rows.T
    else:  # one of the two memories has no vectors at all
        cosines = np.full((len(new_rows), len(old_rows)), np.nan, dtype=np.float32)
    found = []
    for j, later in enumerate(new_facts.sentences):
        new_vector = None if np.isnan(new_rows[j, 0]) else new_rows[j]
        for i, earlier in enumerate(old_facts.sentences):
            if earlier.text == later.text:
                continue  # a sentence said again (a meeting series' boilerplate) changes nothing
            cosine = None if math.isnan(cosines[j, i]) else float(cosines[j, i])
            if (
                earlier.keys & later.keys
                or earlier.frame & later.frame
                or (cosine is not None and cosine >= CANDIDATE_COSINE)
            ):
                found.append(SentencePair(old_facts, new_facts, earlier, later, cosine, new_vector))
    return found


class SentencePairs:
    """`sentence_pairs` of the last `size` pairs of memories of one store version, by memory
    index (a new store version gets a new one). Safe across threads."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._found: OrderedDict[tuple[int, int], list[SentencePair]] = OrderedDict()
        self._lock = threading.Lock()

    def between(self, older: SlotMemory, newer: SlotMemory, facts: FactsOf) -> list[SentencePair]:
        key = (older.chunk, newer.chunk)
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                self._found.move_to_end(key)
                return found
        found = sentence_pairs(facts(older), facts(newer))
        with self._lock:
            self._found[key] = found
            if len(self._found) > self._size:
                self._found.popitem(last=False)
        return found


def fact_vectors(memory: SlotMemory, facts: TextFacts) -> np.ndarray:
    """One row per sentence of `facts`: its stored vector, or NaN where there is none."""
    stored = stored_vectors(memory)
    dimension = memory.vectors.shape[1] if memory.vectors.ndim == 2 else 1
    rows = np.full((len(facts.sentences), dimension), np.nan, dtype=np.float32)
    for number, sentence in enumerate(facts.sentences):
        vector = stored.get(sentence.text.strip())
        if vector is not None:
            rows[number] = vector
    return rows


def stored_vectors(memory: SlotMemory) -> dict[str, np.ndarray]:
    """Each stored sentence of the memory (stripped) to its vector."""
    if len(memory.vectors) != len(memory.sentences):
        return {}
    return {
        text.strip(): np.asarray(vector, dtype=np.float32)
        for text, vector in zip(memory.sentences, memory.vectors, strict=True)
    }
