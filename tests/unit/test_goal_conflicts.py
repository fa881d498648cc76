"""A session's task goal names the attribute two sources may disagree on, however each words it
(memory_bank/session/goal_conflicts.py); what is no disagreement on its face is set aside.
Offline agents, the real embedding model, a store per test; sentences written for these tests."""

from __future__ import annotations

import numpy as np

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.graph.subjects import text_facts
from memory_bank.llm.seam import prompt
from memory_bank.query.goal_answers import Goal
from memory_bank.query.goal_disagreement import disagreement
from memory_bank.session.agent_roles import _payload
from memory_bank.session.goal_conflicts import goal_conflicts
from memory_bank.session.roles import AnalyzeRequest, NodeInfo


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


def _found(embedder, goal: str, first: str, second: str):
    """The disagreement of two texts' answers to `goal`, or None (no answer counts as none)."""
    question = Goal(goal)

    def vectors(texts: list[str]) -> np.ndarray:
        found = np.asarray(embedder.encode(texts), dtype=np.float32)
        return found / np.linalg.norm(found, axis=1, keepdims=True)

    answers = [
        question.answer(text_facts(text, all_sentences=True), vectors) for text in (first, second)
    ]
    return None if None in answers else disagreement(question, *answers)


def test_the_goals_words_on_both_sides_with_two_values_conflict(embedder):
    found = _found(
        embedder,
        "How many seats does the Orwell Hall have?",
        "Orwell Hall has 450 seats and a sprung dance floor.",
        "With 520 seats, the Orwell Hall in Denby is the town's largest venue.",
    )
    assert found is not None and (found.old_value, found.new_value) == ("450", "520")


def test_a_goal_that_asks_two_things_is_answered_one_thing_a_source(embedder):
    assert (
        _found(
            embedder,
            "Who designed Pell House, and who owns it?",
            "Pell House was designed by the architect Anna Rook in 1840.",
            "Pell House is owned by the Marsh Trust, which opens it on Sundays.",
        )
        is None
    )


def test_two_things_the_goals_name_covers_or_another_of_its_kind_do_not_conflict(embedder):
    ferries = _found(
        embedder,
        "Where were the Varrow ferries built?",
        "MV Varrow Star was built at Kelby for the island crossing.",
        "MV Varrow Moon was built at Denholm and serves the north isles.",
    )
    towers = _found(
        embedder,
        "How tall is the Oldgate Tower in Brill?",
        "The Oldgate Tower in Brill is 30 metres tall.",
        "The Newgate Tower in Brill is 22 metres tall.",
    )
    assert ferries is None and towers is None


def test_a_value_told_less_precisely_is_the_same_value(embedder):
    date = _found(
        embedder,
        "When did the Tam Bridge open?",
        "The Tam Bridge opened on 4 June 1902.",
        "The bridge at Tam opened in June 1902 with a parade of farm carts.",
    )
    place = _found(
        embedder,
        "Where is the Tarrow Rowing Club based?",
        "The Tarrow Rowing Club is based in Elmsford, Westshire.",
        "The Tarrow Rowing Club is based in Westshire and races on the river every Sunday.",
    )
    assert date is None and place is None


def test_a_length_answers_how_long_unless_it_says_another_dimension(embedder):
    span = _found(
        embedder,
        "How long is the Oswin Footbridge?",
        "The Oswin Footbridge is 88 metres long and was opened in 1911.",
        "We sat in the tea room on the far bank and watched the walkers cross the Oswin Footbridge, all 96 metres of it, with their dogs.",
    )
    height = _found(
        embedder,
        "How long is the Oswin Footbridge?",
        "The Oswin Footbridge is 88 metres long and was opened in 1911.",
        "The Oswin Footbridge stands 12 metres above the water at high tide.",
    )
    assert span is not None and (span.old_value, span.new_value) == ("88", "96")
    assert height is None


def test_a_goal_asking_of_several_things_of_a_kind_expects_several_values(embedder):
    assert (
        _found(
            embedder,
            "When were the bridges at Carnock built?",
            "The Carnock road bridge was built in 1871.",
            "Carnock's rail bridge was built in 1893 for the coal trains.",
        )
        is None
    )


def test_who_asks_for_no_place_and_where_for_no_agent(embedder):
    def values(goal: str, text: str) -> list[str]:
        answer = Goal(goal).answer(text_facts(text, all_sentences=True), None)
        return [] if answer is None else [v.text for v in answer.values]

    text = "The Harwick Clock Museum was founded in Kelby by Thomas Vane, a brewer from Dunmore."
    assert values("Who founded the Harwick Clock Museum?", text) == ["Thomas Vane"]
    assert values("Where was the Harwick Clock Museum founded?", text) == ["Kelby", "Dunmore"]


def test_the_model_backend_is_sent_the_task_goal_with_the_nodes_but_not_the_offline_fields():
    request = AnalyzeRequest(
        new_node=NodeInfo(summary="It stands 44 metres tall.", context="viaduct"),
        candidates=[NodeInfo(id="n1", summary="It is 38 metres high.", context="viaduct")],
        judge=["conflict", "merge"],
        views=[object()],
        task_goal="How tall is the Quillmere Viaduct?",
        encoder=object(),
    )
    payload = _payload(request)
    assert payload["task_goal"] == "How tall is the Quillmere Viaduct?"
    assert "views" not in payload and "encoder" not in payload
    assert "task_goal" in prompt("memory_bank.session", "analyze")
