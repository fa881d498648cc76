"""Retrieval metrics: pure functions over ranked sources, returned texts and latencies.

Conventions follow the literature the numbers are compared with: passage recall@k counts the
share of gold passages among the top k *distinct* sources (HippoRAG), and answers are compared
after SQuAD-style normalization (lowercase, no punctuation, no articles, single spaces).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NamedTuple

import numpy as np

from memory_bank.text import tokens
from memory_bank.text.lexicon import FUNCTION_WORDS

TokenCounter = Callable[[str], int]

_PUNCTUATION = re.compile(r"[^\w\s]")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_WORD = re.compile(r"\S+")


class Passage(NamedTuple):
    """One piece of returned context, in rank order.

    `source` is the corpus file it came from, or None for text that belongs to no source (a
    README's heading); such text uses up budget but covers no evidence. `quoted` marks text a
    README summary quotes from a memory of its source: it covers evidence within a budget like
    any text of that source, but it is no ranked passage, so recall@k and hit@k skip it.
    """

    source: str | None
    text: str
    quoted: bool = False


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, drop punctuation and the articles a/an/the, collapse spaces.

    Punctuation is every non-word, non-space character (Unicode-aware), so curly quotes and
    dashes in the stories are treated like their ASCII forms.
    """
    text = _PUNCTUATION.sub("", text.lower())
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def contains_phrase(normalized_text: str, normalized_phrase: str) -> bool:
    """Whether a normalized phrase occurs in a normalized text on word boundaries.

    Word boundaries keep "giant" from matching inside "giants".
    """
    if not normalized_phrase:
        return False
    return f" {normalized_phrase} " in f" {normalized_text} "


def answer_in_text(answers: Iterable[str], text: str) -> bool:
    """Whether any gold answer, normalized, occurs in the normalized text."""
    normalized_text = normalize_answer(text)
    return any(contains_phrase(normalized_text, normalize_answer(answer)) for answer in answers)


def answer_words(text: str) -> set[str]:
    """The content words of a normalized text: what an answer says (function words left out)."""
    return {word for word in normalize_answer(text).split() if word not in FUNCTION_WORDS}


def answer_word_scores(answer: str, golds: Iterable[str]) -> tuple[float, float] | None:
    """(precision, recall) of an answer's content words against the best-matching gold answer:
    precision = share of the answer's content words that are gold-answer words, recall = share
    of the gold answer's content words the answer holds. None when neither has content words."""
    said = answer_words(answer)
    best: tuple[float, float] | None = None
    for gold in golds:
        wanted = answer_words(gold)
        if not wanted:
            continue
        shared = len(said & wanted)
        scores = (shared / len(said) if said else 0.0, shared / len(wanted))
        if best is None or scores[1] > best[1] or (scores[1] == best[1] and scores[0] > best[0]):
            best = scores
    return best


def answer_token_recall(answer: str, text: str) -> float:
    """ROUGE-1 recall of an abstractive answer against the text (clipped token counts).

    A rough proxy for whether the text supports the answer when exact matching cannot apply.
    """
    answer_tokens = Counter(normalize_answer(answer).split())
    total = sum(answer_tokens.values())
    if total == 0:
        raise ValueError("the answer has no tokens after normalization")
    text_tokens = Counter(normalize_answer(text).split())
    overlap = sum(min(count, text_tokens[token]) for token, count in answer_tokens.items())
    return overlap / total


def distinct_sources(ranked_sources: Iterable[str | None]) -> list[str]:
    """Sources in first-seen order, without repeats and without None (non-source text)."""
    return list(dict.fromkeys(source for source in ranked_sources if source is not None))


def recall_at_k(
    ranked_sources: Sequence[str | None], gold_sources: Collection[str], k: int
) -> float:
    """Share of the gold sources found among the top k distinct retrieved sources."""
    gold = set(gold_sources)
    if not gold:
        raise ValueError("recall is undefined without gold sources")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    top = set(distinct_sources(ranked_sources)[:k])
    return len(gold & top) / len(gold)


def all_evidence_at_k(
    ranked_sources: Sequence[str | None], gold_sources: Collection[str], k: int
) -> bool:
    """Whether every gold source is among the top k distinct retrieved sources."""
    return recall_at_k(ranked_sources, gold_sources, k) == 1.0


def unit_recall(covered_units: Collection[str], gold_units: Collection[str]) -> float:
    """Share of the gold evidence units that the context covers."""
    gold = set(gold_units)
    if not gold:
        raise ValueError("evidence recall is undefined without gold units")
    return len(gold & set(covered_units)) / len(gold)


def whitespace_token_count(text: str) -> int:
    """Token count as whitespace-separated words: a tokenizer-free counter for tests and checks."""
    return len(text.split())


def default_token_counter() -> tuple[str, TokenCounter]:
    """The project's tiktoken counter and its encoding name (recorded in the run manifest)."""
    return tokens.DEFAULT_ENCODING, tokens.count_tokens


def truncate_to_tokens(text: str, max_tokens: int, count_tokens: TokenCounter) -> str | None:
    """The longest whole-word prefix of `text` within `max_tokens`; None when not one word fits.

    Cuts at word ends (binary search over the number of words) so it works with any counter.
    """
    word_ends = [match.end() for match in _WORD.finditer(text)]
    low, high = 0, len(word_ends)  # invariant: a prefix of `low` words fits
    while low < high:
        middle = (low + high + 1) // 2
        if count_tokens(text[: word_ends[middle - 1]]) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return None
    return text[: word_ends[low - 1]]


def cut_to_budget(
    passages: Iterable[Passage], budget: int, count_tokens: TokenCounter
) -> list[Passage]:
    """Keep passages in rank order until `budget` tokens are used; the last one is truncated."""
    if budget < 1:
        raise ValueError(f"the token budget must be at least 1, got {budget}")
    kept: list[Passage] = []
    remaining = budget
    for passage in passages:
        tokens = count_tokens(passage.text)
        if tokens <= remaining:
            kept.append(passage)
            remaining -= tokens
            if remaining == 0:
                break
            continue
        truncated = truncate_to_tokens(passage.text, remaining, count_tokens)
        if truncated is not None:
            kept.append(Passage(passage.source, truncated, passage.quoted))
        break
    return kept


def latency_percentiles(
    seconds: Sequence[float], percentiles: Sequence[float] = (50, 95)
) -> dict[str, float]:
    """Latency percentiles keyed "p50", "p95", ... (linear interpolation, as numpy does)."""
    if len(seconds) == 0:
        raise ValueError("latency percentiles need at least one measurement")
    values = np.percentile(np.asarray(seconds, dtype=float), list(percentiles))
    return {
        f"p{percentile:g}": float(value)
        for percentile, value in zip(percentiles, values, strict=True)
    }
