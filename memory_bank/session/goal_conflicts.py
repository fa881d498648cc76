"""Conflicts for the session's task goal: the goal is a question, and it names the attribute.

Two contexts from different sources rarely word one attribute alike ("rises 38 metres above
the river" / "stands 44 metres tall"), so the graph's rules, which must decide without a
question, let most such pairs pass. A session has a question: its task goal. Two of its nodes
conflict for the goal when the answer-time judge (`query.slots`) finds that, for what the goal
asks, one gives another value than the other -- the same judge `ask` uses to say which memory
is current, with the goal in place of the user's question. Neither source is known to replace
the other: the pair is a conflict to cross-validate, whichever was intercepted later.

What the judge finds is set aside when it is no disagreement on its face:
- a goal that names nothing ("What do we know?") names no attribute either;
- one value told two ways ("52 m", "52 metres");
- values of their own times ("in 1990 ... 42 members" / "by 2020 ... 118 members"): each
  sentence dates its claim, with another date;
- measures of two dimensions ("31 metres high" / "410 metres long").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memory_bank.graph.analysis import NodeView, Relationship
from memory_bank.graph.contradictions import Contradiction
from memory_bank.graph.sentence_facts import sentence_facts
from memory_bank.graph.value_identity import value_key_of
from memory_bank.graph.values import extract_values
from memory_bank.query.slot_pairs import SlotMemory
from memory_bank.query.slots import slot_changes

Encode = Callable[[list[str]], np.ndarray]
# Two session nodes stand as an earlier and a later memory this far apart (any gap above the
# slot judge's order gap reads as two sources).
_APART_SECONDS = 1.0


def goal_conflicts(
    goal: str, new: NodeView, candidates: Sequence[NodeView], encode: Encode
) -> list[Relationship]:
    """The candidates that give another value than `new` for what `goal` asks."""
    if not any(value.kind == "name" for value in extract_values(goal)):
        return []
    question_vector = encode([goal])[0]
    found = []
    for candidate in candidates:
        older, newer = (
            (candidate, new) if candidate.timestamp <= new.timestamp else (new, candidate)
        )
        memories = [_memory(0, older, 0.0), _memory(1, newer, _APART_SECONDS)]
        changes = slot_changes(goal, memories, query_vector=question_vector, encode=encode)
        disagreements = [c.contradiction for c in changes if _disagree(c.contradiction)]
        if not disagreements:
            continue
        contradiction = disagreements[0]
        found.append(
            Relationship(
                existing_node_id=candidate.id,
                relationship="conflict",
                confidence=0.7,
                reasoning=f"for the task goal: {contradiction.describe()}",
                contradictions=[contradiction],
            )
        )
    return found


# The words of one dimension ("tall" and "high" measure one thing, "long" another).
_DIMENSIONS = (
    frozenset({"long", "length", "lengths"}),
    frozenset({"high", "tall", "height", "rises", "stands"}),
    frozenset({"wide", "width", "broad", "across"}),
    frozenset({"deep", "depth"}),
)


def _disagree(contradiction: Contradiction) -> bool:
    """Whether the judge's finding is a disagreement on its face (module docstring)."""
    old_key = value_key_of(contradiction.old_value)
    if old_key is not None and old_key == value_key_of(contradiction.new_value):
        return False
    old = sentence_facts(contradiction.old_sentence)
    new = sentence_facts(contradiction.new_sentence)
    dates = [
        {v.key for v in facts.values if v.kind == "date" and v.text != value}
        for facts, value in (
            (old, contradiction.old_value),
            (new, contradiction.new_value),
        )
    ]
    if all(dates) and dates[0].isdisjoint(dates[1]):
        return False
    dimensions = (
        _dimension(old.text, contradiction.old_value),
        _dimension(new.text, contradiction.new_value),
    )
    return None in dimensions or dimensions[0] == dimensions[1]


def _dimension(sentence: str, value: str) -> int | None:
    """Which dimension the words right after a measure name ("31 metres high"), if any."""
    at = sentence.find(value)
    after = sentence[at + len(value) :].split()[:2] if at >= 0 else []
    for number, words in enumerate(_DIMENSIONS):
        if any(word.strip(".,;").lower() in words for word in after):
            return number
    return None


def _memory(chunk: int, view: NodeView, added_at: float) -> SlotMemory:
    sentences = list(view.sentence_vectors)
    vectors = (
        np.stack([view.sentence_vectors[s] for s in sentences])
        if sentences
        else np.zeros((0, 0), dtype=np.float32)
    )
    return SlotMemory(
        chunk=chunk,
        node_id=view.id,
        added_at=added_at,
        text=view.text,
        sentences=sentences,
        vectors=vectors,
    )
