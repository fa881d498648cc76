"""A session's task goal names the attribute two sources may disagree on, however each words it
(memory_bank/session/goal_conflicts.py); what is no disagreement on its face is set aside.
Offline agents, the real embedding model, a store per test; sentences written for these tests."""

from __future__ import annotations

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.session.goal_conflicts import goal_conflicts


def _second_intercept(tmp_path, embedder, goal: str, first: str, second: str):
    bank = MemoryBank(tmp_path / "store", AppConfig(), embedder=embedder)
    session = bank.session(goal)
    session.intercept(first, metadata={"source": "https://a.example.org/page"})
    result = session.intercept(second, metadata={"source": "https://b.example.net/page"})
    session.close()
    return result


def test_two_sources_that_word_the_attribute_differently_conflict_for_the_goal(tmp_path, embedder):
    result = _second_intercept(
        tmp_path,
        embedder,
        "When was the Merrow Belle launched?",
        "The paddle steamer Merrow Belle was launched in May 1899 at Carrick.",
        "Old photographs show the Merrow Belle going down the slipway at Carrick in June 1901.",
    )
    assert [(c.old_value, c.new_value) for c in result.conflicts] == [("May 1899", "June 1901")]
    assert result.insight_doc.pending_tasks[0].startswith("Cross-validate")


def test_values_of_their_own_times_or_of_other_dimensions_do_not_conflict(tmp_path, embedder):
    times = _second_intercept(
        tmp_path / "times",
        embedder,
        "How many members does Ferris Chess Club have?",
        "In 1990 the Ferris Chess Club had 40 members.",
        "By 2020 Ferris Chess Club had 95 members, many of them juniors.",
    )
    assert times.conflicts == []
    dimensions = _second_intercept(
        tmp_path / "dimensions",
        embedder,
        "How high is the Tolver dam?",
        "The Tolver dam is 28 metres high and was finished in 1931.",
        "The dam at Tolver is 300 metres long, so the walk across is short.",
    )
    assert dimensions.conflicts == []


def test_a_goal_that_names_nothing_names_no_attribute(embedder):
    assert goal_conflicts("What do we know?", None, [None], embedder.encode) == []  # type: ignore[arg-type]
