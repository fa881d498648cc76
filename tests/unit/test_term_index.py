"""The Query Graph's incremental BM25 (`TermIndex`) against BM25 written out term by term."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from memory_bank.graph.term_index import BM25_B, BM25_K1, TermIndex

VOCABULARY = [f"w{i}" for i in range(40)]


def reference_bm25(documents: dict[str, list[str]], query: list[str]) -> dict[str, float]:
    """BM25 of each document sharing a query term, per node and term in plain floats."""
    count = len(documents)
    average = sum(len(words) for words in documents.values()) / count or 1.0
    counts = {node_id: Counter(words) for node_id, words in documents.items()}
    found: dict[str, float] = {}
    for term in set(query):
        held = sum(1 for c in counts.values() if term in c)
        if not held:
            continue
        idf = math.log(1.0 + (count - held + 0.5) / (held + 0.5))
        for node_id, c in counts.items():
            frequency = c.get(term, 0)
            if frequency:
                length = len(documents[node_id])
                norm = frequency + BM25_K1 * (1 - BM25_B + BM25_B * length / average)
                found[node_id] = found.get(node_id, 0.0) + idf * frequency * (BM25_K1 + 1) / norm
    return found


def random_words(rng: random.Random) -> list[str]:
    # Zipf-like: a few stems in most documents, most in few, as in text.
    return [VOCABULARY[min(int(rng.paretovariate(1.2)) - 1, 39)] for _ in range(rng.randint(1, 30))]


def test_scores_equal_the_definition_through_adds_removals_moves_and_compaction():
    rng = random.Random(7)
    index = TermIndex()
    documents: dict[str, list[str]] = {}
    order: list[str] = []  # row i of the caller = order[i], swapped with the last on removal
    serial = 0
    for step in range(600):
        if order and rng.random() < 0.4:
            node_id = rng.choice(order)
            row, last = order.index(node_id), len(order) - 1
            if row != last:
                order[row] = order[last]
                index.move(order[row], row)
            order.pop()
            index.remove(node_id)
            del documents[node_id]
        else:
            node_id = f"n{serial}"
            serial += 1
            documents[node_id] = random_words(rng)
            index.add(node_id, len(order), documents[node_id])
            order.append(node_id)
        if step % 7 == 0 and documents:
            query = random_words(rng) + ["absent"]
            scores = index.scores(query, len(order))
            expected = reference_bm25(documents, query)
            assert len(index) == len(documents)
            for row, node_id in enumerate(order):
                assert scores[row] == pytest.approx(expected.get(node_id, 0.0), rel=1e-12)
    assert serial > 300 and len(order) < serial / 2  # many removals: dead slots were compacted


def test_an_empty_index_and_a_query_of_unknown_stems_score_zero():
    index = TermIndex()
    assert index.scores(["a"], 3).tolist() == [0.0, 0.0, 0.0]
    index.add("x", 0, ["a", "b", "a"])
    assert index.terms("x") == Counter({"a": 2, "b": 1})
    assert index.scores(["zzz"], 1).tolist() == [0.0]
    index.remove("x")
    index.remove("x")  # twice: nothing to do
    assert len(index) == 0 and index.terms("x") is None
    assert np.array_equal(index.scores(["a"], 0), np.zeros(0))
