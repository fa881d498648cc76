"""The recursive summary of evicted turns (seed 004 §4.1, without a language model).

At each eviction the summary is made anew from the previous summary's lines and extracts of
the evicted turns, within a fixed token budget, so the summary of summaries never grows. Each
line stands for a number of evicted turns (its weight); the new summary keeps the lines that
best cover that weighted mass (maximal marginal relevance to the weighted centroid, so neither
one topic's repetitions nor the newest turns alone fill it), and each line left out hands its
weight to the kept line closest to it. Lines stay in the order they were said.

A line is the speaker and the opening sentences of a turn, at most UNIT_TOKENS tokens; turns
with fewer than MIN_CONTENT_WORDS content words ("Yeah.", "Okay, sure") are never lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memory_bank.conversation.records import SummaryUnit, TurnRecord
from memory_bank.text.lexicon import search_tokens
from memory_bank.text.sentences import split_sentences

UNIT_TOKENS = 48
MIN_CONTENT_WORDS = 4
MMR_LAMBDA = 0.7  # relevance to the whole against redundancy with lines already kept

TokenCounter = Callable[[str], int]


def unit_of(record: TurnRecord, count_tokens: TokenCounter) -> SummaryUnit | None:
    """The summary line a turn would give, or None for a turn with too little content."""
    if len(search_tokens(record.text)) < MIN_CONTENT_WORDS:
        return None
    rendered = record.rendered()
    head_length = rendered.index(": ") + 2  # "[timestamp] speaker: "
    head, body = rendered[:head_length], rendered[head_length:]
    sentences = split_sentences(body) or [body]
    text = head + sentences[0]
    for sentence in sentences[1:]:
        if count_tokens(f"{text} {sentence}") > UNIT_TOKENS:
            break
        text = f"{text} {sentence}"
    if count_tokens(text) > UNIT_TOKENS:  # one long sentence: cut at a word
        words = text.split()
        while len(words) > 1 and count_tokens(" ".join(words) + " ...") > UNIT_TOKENS:
            words = words[: max(1, len(words) * 3 // 4)]
        text = " ".join(words) + " ..."
    return SummaryUnit(turn_id=record.turn_id, text=text, tokens=count_tokens(text))


def update_summary(
    previous: Sequence[SummaryUnit],
    evicted: Sequence[TurnRecord],
    vector_of: Callable[[int], np.ndarray],
    budget_tokens: int,
    count_tokens: TokenCounter,
) -> list[SummaryUnit]:
    """The new summary from the previous one and the evicted turns (module docstring).
    `vector_of(turn_id)` is a turn's embedding."""
    fresh = [unit for unit in (unit_of(record, count_tokens) for record in evicted) if unit]
    candidates = [*previous, *fresh]
    if not candidates:
        return []
    vectors = np.stack([vector_of(unit.turn_id) for unit in candidates])
    weights = np.array([unit.weight for unit in candidates], dtype=np.float32)
    centroid = (weights[:, None] * vectors).sum(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-9)
    relevance = vectors @ centroid
    similarity = vectors @ vectors.T

    chosen: list[int] = []
    used = 0
    remaining = set(range(len(candidates)))
    while remaining:
        if chosen:
            redundancy = similarity[:, chosen].max(axis=1)
        else:
            redundancy = np.zeros(len(candidates), dtype=np.float32)
        scores = MMR_LAMBDA * relevance - (1.0 - MMR_LAMBDA) * redundancy
        best = max(remaining, key=lambda j: (float(scores[j]), -j))
        remaining.discard(best)
        if used + candidates[best].tokens > budget_tokens:
            continue  # too long for what is left of the budget; a shorter one may still fit
        chosen.append(best)
        used += candidates[best].tokens

    if not chosen:
        return []
    # Every line left out hands its weight to the kept line closest to it.
    merged = {j: float(weights[j]) for j in chosen}
    for j in range(len(candidates)):
        if j not in merged:
            closest = max(chosen, key=lambda k: float(similarity[j, k]))
            merged[closest] += float(weights[j])
    kept = [candidates[j].model_copy(update={"weight": merged[j]}) for j in chosen]
    return sorted(kept, key=lambda unit: unit.turn_id)


def summary_text(units: Sequence[SummaryUnit]) -> str:
    return "\n".join(unit.text for unit in units)
