"""A later add restates a fact in other words, with no cue the ingest rules need: the question's
slot decides at query time which memory is current (`query.slots`), and `ask` states the new
value, keeps the old one as history and does not quote it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.graph.sentence_facts import sentence_facts
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.query.slot_rules import Asked, answer_change, answer_kinds
from memory_bank.query.slots import SlotMemory, slot_changes
from memory_bank.text.sentences import split_sentences
from tests.support import stated_as_current

CEO = "The chief executive of Norvale Foods is Alice Moreno. The company makes frozen soups."
CEO_UPDATE = "Bob Tran is the CEO of Norvale Foods."


def _memory(embedder, chunk: int, text: str, added_at: float) -> SlotMemory:
    sentences = split_sentences(text)
    vectors = np.asarray(embedder.encode(sentences), dtype=np.float32)
    return SlotMemory(chunk, f"n{chunk}", added_at, text, sentences, vectors)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("When was Sandra Oh born?", {"date"}),
        ("In what year was the club formed?", {"date"}),
        ("How many records has he sold?", {"number"}),
        ("What was the population of Young at the 2011 census?", {"number"}),
        ("Who runs Norvale Foods?", {"name"}),
        ("In which state are the Eagles based?", {"name"}),
    ],
)
def test_the_question_says_what_kind_of_value_it_asks_for(question, kinds):
    assert answer_kinds(question) == kinds


def test_a_later_restatement_in_other_words_replaces_the_earlier_value(embedder):
    older = _memory(embedder, 0, CEO, 100.0)
    newer = _memory(embedder, 1, CEO_UPDATE, 200.0)

    [change] = slot_changes("Who runs Norvale Foods?", [older, newer])

    assert (change.older.chunk, change.newer.chunk) == (0, 1)
    found = change.contradiction
    assert (found.old_value, found.new_value) == ("Alice Moreno", "Bob Tran")
    assert found.old_sentence == "The chief executive of Norvale Foods is Alice Moreno."
    assert change.new_vector is not None


def test_memories_of_one_commit_have_no_order(embedder):
    older = _memory(embedder, 0, CEO, 100.0)
    same_commit = _memory(embedder, 1, CEO_UPDATE, 100.000001)

    assert slot_changes("Who runs Norvale Foods?", [older, same_commit]) == []


def test_another_subject_or_another_kind_of_value_is_no_change(embedder):
    older = _memory(embedder, 0, CEO, 100.0)
    other_company = _memory(embedder, 1, "Bob Tran is the CEO of Globex Industries.", 200.0)
    founding = _memory(embedder, 2, "Norvale Foods was founded in 1961 by Bob Tran.", 300.0)

    assert slot_changes("Who runs Norvale Foods?", [older, other_company]) == []
    assert slot_changes("When was Norvale Foods founded?", [older, founding]) == []


def test_memories_that_hold_both_values_agree(embedder):
    older = _memory(
        embedder, 0, "Keldor Press is based in Leeds. It opened a shop in Bristol in 2001.", 100.0
    )
    newer = _memory(embedder, 1, "Keldor Press has relocated to Bristol.", 200.0)
    additive = _memory(embedder, 2, "Keldor Press is based in Leeds. It is also in York.", 100.0)
    later = _memory(embedder, 3, "Keldor Press is based in York, and still in Leeds.", 200.0)

    assert slot_changes("Where is Keldor Press based?", [older, newer]) == []
    assert slot_changes("Where is Keldor Press based?", [additive, later]) == []


def test_the_graph_verdict_on_a_pair_stands(embedder):
    older = _memory(embedder, 0, CEO, 100.0)
    newer = _memory(embedder, 1, CEO_UPDATE, 200.0)

    found = slot_changes("Who runs Norvale Foods?", [older, newer], decided=lambda a, b: True)

    assert found == []


def test_a_fact_updated_twice_holds_its_last_value(embedder):
    first = _memory(embedder, 0, CEO, 100.0)
    second = _memory(embedder, 1, CEO_UPDATE, 200.0)
    third = _memory(embedder, 2, "Carla Diaz is the CEO of Norvale Foods.", 300.0)

    changes = slot_changes("Who runs Norvale Foods?", [first, second, third])

    assert {(c.older.chunk, c.contradiction.new_value) for c in changes} == {
        (0, "Carla Diaz"),
        (1, "Carla Diaz"),
    }


def test_the_sentence_pairs_of_two_memories_are_found_once_per_store(embedder):
    from memory_bank.graph.subjects import text_facts
    from memory_bank.query.slot_pairs import SentencePairs, fact_vectors

    older = _memory(embedder, 0, CEO, 100.0)
    newer = _memory(embedder, 1, CEO_UPDATE, 200.0)
    other = _memory(embedder, 2, "Carla Diaz is the CEO of Norvale Foods.", 300.0)
    paired: list[int] = []

    def facts(memory: SlotMemory):
        paired.append(memory.chunk)
        found = text_facts(memory.text)
        return found, fact_vectors(memory, found)

    known = SentencePairs(size=1)
    first = known.between(older, newer, facts)
    assert known.between(older, newer, facts) is first  # kept: neither memory read again
    assert paired == [0, 1]
    known.between(newer, other, facts)  # the one place goes to the latest pair
    known.between(older, newer, facts)
    assert paired == [0, 1, 1, 2, 0, 1]


def test_a_later_question_over_the_same_memories_judges_no_pair_anew(embedder, monkeypatch):
    from memory_bank.query import slots
    from memory_bank.query.slot_pairs import SentencePairs

    older = _memory(embedder, 0, CEO, 100.0)
    newer = _memory(embedder, 1, CEO_UPDATE, 200.0)
    judged = []
    rules = slots.find_contradiction

    def record(*args, **kwargs):
        judged.append(args[0].text)
        return rules(*args, **kwargs)

    monkeypatch.setattr(slots, "find_contradiction", record)
    slots._question_free_changes.cache_clear()
    known = SentencePairs(size=8)
    answers = []
    for question in ("Who runs Norvale Foods?", "Who is the chief executive of Norvale Foods?"):
        [change] = slot_changes(question, [older, newer], known_pairs=known)
        answers.append((change.contradiction.old_value, change.contradiction.new_value))
        if question.startswith("Who runs"):
            first_question = len(judged)

    assert first_question > 0 and len(judged) == first_question  # the rules ran once
    assert answers == [("Alice Moreno", "Bob Tran")] * 2
    slots._question_free_changes.cache_clear()
    afresh = slot_changes("Who is the chief executive of Norvale Foods?", [older, newer])
    assert [c.contradiction for c in afresh] == [change.contradiction]


# --- ask, end to end ------------------------------------------------------------------------


def _bank(store: Path, embedder) -> MemoryBank:
    bank = MemoryBank(store, AppConfig(), executor=lambda config: LocalExecutor(config, embedder))
    bank._embedder = embedder
    return bank


@pytest.fixture(scope="module")
def restated(tmp_path_factory, embedder) -> MemoryBank:
    root = tmp_path_factory.mktemp("slots")
    bank = _bank(root / "store", embedder)
    bank.add(
        text="The mother tongue of Marta Ilves is Estonian. She translated forty novels into "
        "English and taught at the University of Tartu."
    )
    bank.add(text="Marta Ilves's native language is Finnish.")
    return bank


def test_ask_states_the_restated_value_with_the_old_one_as_history(restated):
    result = restated.request("What language did Marta Ilves grow up speaking?")

    assert "Finnish" in result.answer
    assert "Estonian" not in stated_as_current(result.answer)
    assert "(previously Estonian, until " in result.answer
    [note] = result.history
    assert (note.superseded_value, note.current_value) == ("Estonian", "Finnish")
    assert note.basis == "question" and note.conflict_id == ""
    assert note.recorded_at <= note.superseded_at


def test_a_question_about_another_attribute_keeps_its_answer(restated):
    result = restated.request("Where did Marta Ilves teach?")

    assert "Tartu" in result.answer and "Estonian" not in stated_as_current(result.answer)
    assert not restated.request("When did Marta Ilves start translating novels?").history


def test_without_the_update_the_first_value_stands(tmp_path, embedder):
    bank = _bank(tmp_path / "store", embedder)
    bank.add(text="The mother tongue of Marta Ilves is Estonian.")

    result = bank.request("What is the mother tongue of Marta Ilves?")

    assert "Estonian" in result.answer and result.history == []


def test_a_common_word_can_be_the_value_that_changed(embedder):
    older = _memory(embedder, 0, "Marta Ilves plays the violin. She lives in Tartu.", 100.0)
    newer = _memory(embedder, 1, "Marta Ilves now plays the cello.", 200.0)

    [change] = slot_changes("What instrument does Marta Ilves play?", [older, newer])

    found = change.contradiction
    assert (found.old_value, found.new_value, found.kind) == ("violin", "cello", "word")
    assert slot_changes("When did Marta Ilves start playing?", [older, newer]) == []


def _question(embedder, text: str) -> np.ndarray:
    return np.asarray(embedder.encode([text])[0], dtype=np.float32)


def test_names_do_not_make_two_attributes_one(embedder):
    # The raw sentences are close (the name dominates their embeddings); with their values
    # masked, "X studied in X" and "X is employed by X" are not the same statement.
    older = _memory(embedder, 0, "Satya Nadella studied in Manipal.", 100.0)
    newer = _memory(embedder, 1, "Satya Nadella is employed by Google.", 200.0)
    question = "Which company employs Satya Nadella?"

    found = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )

    assert found == []


def test_an_encyclopedic_sentence_is_compared_by_the_value_the_question_asks_for(embedder):
    older = _memory(
        embedder,
        0,
        "# Eddie Irvine\n\nEdmund Irvine Jr. (born 10 November 1965) is a retired British racing "
        "driver from Northern Ireland. He was a Formula One driver between 1993 and 2002.",
        100.0,
    )
    newer = _memory(embedder, 1, "Eddie Irvine was born on 10 November 1964.", 200.0)
    question = "When was the racing driver Eddie Irvine born?"

    [change] = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )

    found = change.contradiction
    assert (found.old_value, found.new_value) == ("10 November 1965", "10 November 1964")
    assert found.old_sentence.startswith("Edmund Irvine Jr.")


@pytest.mark.parametrize(
    ("question", "kinds"),
    [("What is the birth date of Eddie Irvine?", {"date"}), ("For how many years?", {"number"})],
)
def test_a_date_is_asked_for_by_its_name_too(question, kinds):
    assert answer_kinds(question) == kinds


def _changes(embedder, old: str, new: str, question: str) -> list[tuple[str, str]]:
    older = _memory(embedder, 0, old, 100.0)
    newer = _memory(embedder, 1, new, 200.0)
    found = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )
    return [(c.contradiction.old_value, c.contradiction.new_value) for c in found]


def test_two_people_of_one_family_are_two_values(embedder):
    # One surname, first names that do not begin alike: two people, not one told two ways.
    old = "# Bass Brewery\n\nThe Bass Brewery was founded in 1777 by William Bass in Burton."
    new = "The founder of the Bass Brewery was Michael Bass."

    assert _changes(embedder, old, new, "Who founded the Bass Brewery?") == [
        ("William Bass", "Michael Bass")
    ]


def test_a_possessor_is_not_the_value_it_qualifies(embedder):
    old = (
        "# Palash Sen\n\nPalash Sen is an Indian singer, songwriter, musician, composer and actor "
        "best known as the founder and frontman of India's pop band Euphoria."
    )
    new = "Palash Sen is the founder and frontman of the band Indian Ocean."

    assert _changes(embedder, old, new, "Which band did Palash Sen found?") == [
        ("Euphoria", "Indian Ocean")
    ]


def test_a_place_after_a_lifespan_is_where_the_person_died(embedder):
    old = (
        "# Elsie Driggs\n\nElsie Driggs (1898 – July 12, 1992 in New York City) was an American "
        "painter known for her contributions to Precisionism."
    )
    new = "Elsie Driggs died in Philadelphia."

    assert _changes(embedder, old, new, "Where did the painter Elsie Driggs die?") == [
        ("New York City", "Philadelphia")
    ]


def test_a_main_clause_after_a_fronted_phrase_is_about_the_texts_subject(embedder):
    old = (
        "# BroadwayHD\n\nBroadwayHD is a company founded in 2013 by Stewart F. Lane. Based out "
        "of New York City, the company records live theater performances."
    )
    new = "BroadwayHD is based in Chicago."

    assert ("New York City", "Chicago") in _changes(
        embedder, old, new, "Where is the company BroadwayHD based?"
    )


def test_a_founder_is_no_place(embedder):
    # "by" introduces who did it, "in" where: the founder is not the city the company left.
    old = "# BroadwayHD\n\nBroadwayHD is a company founded in 2013 by Stewart F. Lane."
    new = "BroadwayHD is based in Chicago."

    assert _changes(embedder, old, new, "Where is the company BroadwayHD based?") == []


def test_a_question_over_many_dated_memories_judges_a_bounded_number_of_pairs(
    embedder, monkeypatch
):
    from memory_bank.query import slots

    def routine(n: int) -> str:  # each meeting in words of its own: no two sentences alike
        return (
            f"The Norvale Foods team met on floor {n + 2}. Norvale Foods reviewed {n + 3} soup "
            f"recipes. The Norvale Foods kitchen was cleaned {n + 4} times. Norvale Foods staff "
            f"tasted {n + 5} new broths."
        )

    meetings = [_memory(embedder, n, routine(n), 10.0 + n) for n in range(12)]
    older = _memory(embedder, 12, CEO, 100.0)
    newer = _memory(embedder, 13, CEO_UPDATE, 200.0)
    built, judged = [], []
    closest, verdicts = slots._closest_to_the_question, slots._verdicts

    def record_built(candidates, answers):
        built.append(len(candidates))
        return closest(candidates, answers)

    def record_judged(candidates, asked, encode):
        judged.append(len(candidates))
        return verdicts(candidates, asked, encode)

    monkeypatch.setattr(slots, "_closest_to_the_question", record_built)
    monkeypatch.setattr(slots, "_verdicts", record_judged)
    question = "Who runs Norvale Foods?"
    query_vector = np.asarray(embedder.encode([question]), dtype=np.float32)[0]

    [change] = slot_changes(question, [*meetings, older, newer], query_vector=query_vector)

    assert built[0] > slots.MAX_JUDGED_PAIRS  # the meetings alone make more pairs than that
    assert judged == [slots.MAX_JUDGED_PAIRS]
    assert (change.contradiction.old_value, change.contradiction.new_value) == (
        "Alice Moreno",
        "Bob Tran",
    )


def test_a_sentence_said_again_is_no_pair_to_judge(embedder):
    from memory_bank.graph.subjects import text_facts
    from memory_bank.query.slot_pairs import fact_vectors, sentence_pairs

    minutes = "Attendees: Dana Ruiz and Omar Haddad. The budget review is due on 3 March."
    first = _memory(embedder, 1, minutes, 10.0)
    again = _memory(embedder, 2, minutes + " The budget review is now due on 5 March.", 20.0)

    old_facts, new_facts = text_facts(first.text), text_facts(again.text)
    pairs = sentence_pairs(
        (old_facts, fact_vectors(first, old_facts)), (new_facts, fact_vectors(again, new_facts))
    )

    assert pairs  # the new sentence is compared with the old ones ...
    assert all(pair.earlier.text != pair.later.text for pair in pairs)  # ... not with itself


def test_the_old_value_in_another_role_of_the_later_sentence_is_replaced():
    earlier = sentence_facts(
        "Love Forecast (; lit. Today's Love) is a 2015 South Korean romantic comedy film "
        "co-written and directed by Park Jin-pyo."
    )
    later = sentence_facts(
        "The 2015 film Love Forecast was directed by Kim Jee-woon; Park Jin-pyo co-wrote the "
        "script."
    )
    found = answer_change(
        earlier, later, Asked("Who directed the film Love Forecast?"), frozenset(), 0.5
    )
    assert found is not None
    assert (found.old_value, found.new_value) == ("Park Jin-pyo", "Kim Jee-woon")
    # Said again in the same role, the old value still holds beside the new one.
    both = sentence_facts("Love Forecast was directed by Kim Jee-woon and Park Jin-pyo.")
    assert (
        answer_change(
            earlier, both, Asked("Who directed the film Love Forecast?"), frozenset(), 0.5
        )
        is None
    )


def test_a_later_memory_answering_in_the_questions_words_replaces_the_earlier_answer(embedder):
    # Worded apart beyond one span, the pair passes the sentence rules; each memory's answer
    # to the question, in its own words ("founded"), gives another founder.
    older = _memory(
        embedder,
        0,
        "The Harwick Museum of Clocks, housed in a former bank on Mill Street, was founded by "
        "the clockmaker Edna Pryor and opened to visitors in 1921.",
        100.0,
    )
    newer = _memory(
        embedder,
        1,
        "Thomas Vane, a brewer from Dunmore, founded the Harwick Museum of Clocks with his "
        "savings.",
        200.0,
    )
    question = "Who founded the Harwick Museum of Clocks?"

    [change] = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )

    assert (change.contradiction.old_value, change.contradiction.new_value) == (
        "Edna Pryor",
        "Thomas Vane",
    )


def test_a_judged_change_takes_what_the_earlier_memory_says_for_the_question(embedder):
    # Judged without the question, the sentence pair matches the new owner with the village;
    # the earlier memory says who owns the brewery in the question's own words.
    older = _memory(
        embedder,
        0,
        "The Tarn Brewery is a brewery in the village of Tarnby. It was founded in 1880 and is "
        "owned by the Askew family.",
        100.0,
    )
    newer = _memory(
        embedder, 1, "Northfold Holdings has completed its purchase of the Tarn Brewery.", 200.0
    )
    question = "Who owns the Tarn Brewery?"

    [change] = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )

    found = change.contradiction
    assert (found.old_value, found.new_value) == ("Askew family", "Northfold Holdings")
    assert found.old_sentence == "It was founded in 1880 and is owned by the Askew family."


def test_a_judged_change_whose_old_sentence_speaks_of_the_question_stands(embedder):
    # The earlier memory's own answer in the question's words is the museum itself (its first
    # sentence holds every word of the question); the judge's old sentence says who founded it.
    older = _memory(
        embedder,
        0,
        "The Wrenby Museum is a museum in Calder devoted to clocks. It was founded in 1931 by "
        "the collector Amos Wrenby, whose clocks form its core.",
        100.0,
    )
    newer = _memory(
        embedder,
        1,
        "According to a new history, the Wrenby Museum's founder was Ruth Wrenby, the "
        "collector's sister.",
        200.0,
    )
    question = "Who founded the Calder museum devoted to clocks?"

    [change] = slot_changes(
        question, [older, newer], query_vector=_question(embedder, question), encode=embedder.encode
    )

    assert (change.contradiction.old_value, change.contradiction.new_value) == (
        "Amos Wrenby",
        "Ruth Wrenby",
    )
