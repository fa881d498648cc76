"""Conflicts for the session's task goal: each context's answer to it, compared
(`query.goal_answers`). Neither source is known to replace the other, so two contexts whose
answers give different values are a conflict to cross-validate, whichever was intercepted
later."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from memory_bank.graph.analysis import NodeView, Relationship
from memory_bank.query.goal_answers import Goal
from memory_bank.query.goal_disagreement import disagreement

Encode = Callable[[list[str]], np.ndarray]


def goal_conflicts(
    goal: str, new: NodeView, candidates: Sequence[NodeView], encode: Encode
) -> list[Relationship]:
    """The candidates whose answer to `goal` gives another value than `new`'s."""
    question = Goal(goal)
    if not question.names:
        return []
    cache: dict[str, np.ndarray] = {}

    def vectors(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            for text, vector in zip(missing, encode(missing), strict=True):
                cache[text] = vector / (np.linalg.norm(vector) or 1.0)
        return np.stack([cache[t] for t in texts])

    new_answer = question.answer(new.claims, vectors)
    if new_answer is None:
        return []
    found = []
    for candidate in candidates:
        answer = question.answer(candidate.claims, vectors)
        if answer is None:
            continue
        earlier, later = (
            (answer, new_answer) if candidate.timestamp <= new.timestamp else (new_answer, answer)
        )
        contradiction = disagreement(question, earlier, later)
        if contradiction is not None:
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
