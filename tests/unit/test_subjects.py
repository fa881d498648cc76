"""What a sentence is about, however its subject is named: a name with or without the noun that
says what kind of thing it is, a definite description ("The hotel") for a name told before it,
a text that opens by introducing its subject rather than naming it first (graph/sentence_facts,
graph/value_identity). Sentences written for these tests, not taken from a suite."""

from __future__ import annotations

import pytest

from memory_bank.graph.contradictions import find_contradictions
from memory_bank.graph.sentence_facts import subject_start
from memory_bank.graph.span_difference import differs_in_several_spans
from memory_bank.graph.subjects import text_facts
from memory_bank.graph.value_identity import same_name, without_head
from memory_bank.graph.values import extract_values
from memory_bank.session.topics import _paragraphs


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ("e:grand ossory", "e:grand ossory hotel", True),
        ("e:morrow", "e:morrow canal", True),
        ("e:orrin", "e:mount orrin", True),
        ("e:quell rowing", "e:quell rowing club", True),
        ("e:ossory", "e:grand ossory hotel", True),  # a last word, then the kind left out
        ("e:carrow bridge", "e:carrow river", False),  # two kinds: two things
        ("e:kells", "e:kells arms hotel", False),
        ("e:grand ossory", "e:grand ossory estates", False),  # "estates" says no kind
    ],
)
def test_a_name_with_or_without_its_kind_is_one_name(first, second, same):
    assert same_name(first, second) is same
    assert same_name(second, first) is same


def test_a_name_that_is_only_a_kind_keeps_it():
    assert without_head("e:hotel") == "e:hotel"
    assert without_head("e:hotel carlton") == "e:carlton"


def test_the_pronoun_i_is_no_name_but_numbers_one():
    assert [v.key for v in extract_values("Last year I toured the Brisk Observatory.")] == [
        "e:brisk observatory"
    ]
    assert [v.key for v in extract_values("Henry I was crowned in 1100.")][0] == "e:henry i"


def test_a_word_opening_a_sentence_before_a_plural_verb_names_many_not_one():
    assert [v.text for v in extract_values("Roofers have covered the Tarn Hall in zinc.")] == [
        "Tarn Hall"
    ]
    assert [v.text for v in extract_values("Visitors are welcome at Kelby Hall.")] == ["Kelby Hall"]
    assert [v.text for v in extract_values("Alfred has left Acme.")] == ["Alfred", "Acme"]


def test_a_word_labelling_the_figure_or_names_after_it_is_no_name():
    assert [v.text for v in extract_values("Founder: Hester Vaile.")] == ["Hester Vaile"]
    assert [v.text for v in extract_values("Est. 1874, the Garth Mill spins cotton.")] == [
        "1874",
        "Garth Mill",
    ]
    assert [v.text for v in extract_values("Capacity: 4,200 seats.")] == ["4,200"]
    # the number of a listed item is no value either
    assert [v.text for v in extract_values("Stop 4: Harwick Town Hall.")] == ["Harwick Town Hall"]
    # "I've" is the speaker and "Saturday's" a day: neither is a name
    assert [v.text for v in extract_values("For Saturday's walk I've booked Harwick Mill.")] == [
        "Harwick Mill"
    ]
    # a speaker's line says more than names: the speaker is named
    assert [v.text for v in extract_values("Alice: Bob said we move in May.")][:2] == [
        "Alice",
        "Bob",
    ]


def test_a_definite_description_refers_to_the_name_of_its_kind_told_before():
    facts = text_facts(
        "We drove from Ardee to the Lantern Hotel on the coast road. The hotel has 40 rooms."
    )
    rooms = next(f for f in facts.sentences if "40" in f.text)
    assert frozenset({"e:lantern hotel"}) in facts.about(rooms)
    assert frozenset({"e:ardee"}) not in facts.about(rooms)


def test_a_text_that_introduces_its_subject_is_about_it():
    facts = text_facts("Every summer we rent a cottage near Lough Tessan. It is 9 kilometres long.")
    assert facts.principal == frozenset({"e:lough tessan"})


def test_a_text_that_opens_with_a_description_names_no_subject_of_its_own():
    facts = text_facts("The pavilion, by the architect Nora Vell, opened in 2011.")
    assert facts.principal == frozenset()


def test_a_description_and_the_full_name_contradict_across_texts():
    old = text_facts(
        "Every summer we rent a cottage near the Tessan Reservoir. The reservoir is 9 kilometres long."
    )
    new = text_facts("The Tessan Reservoir, built in 1958, is 12 kilometres long.")
    found = find_contradictions(old, new)
    assert [(c.old_value, c.new_value) for c in found] == [("9", "12")]


def test_subject_phrases_that_name_one_subject_are_not_a_second_difference():
    old, new = "The hotel has 40 rooms.", "The Lantern Hotel in Ardee has 52 rooms."
    assert differs_in_several_spans(old, new, "40")
    assert not differs_in_several_spans(old, new, "40", one_subject=True)
    # a second difference outside the subjects is still two facts
    assert differs_in_several_spans(
        "The hotel has 40 rooms in winter.",
        "The Lantern Hotel has 52 rooms in summer.",
        "40",
        one_subject=True,
    )


def test_a_heading_goes_with_the_paragraph_under_it():
    text = "# Ardee harbour\n\nThe pavilion opened in 2011.\n\nThe quay was rebuilt in 1990."
    assert _paragraphs(text) == [
        "# Ardee harbour\n\nThe pavilion opened in 2011.",
        "The quay was rebuilt in 1990.",
    ]
    assert _paragraphs("Intro.\n\n## Notes") == ["Intro.", "## Notes"]


def test_a_description_that_names_nothing_of_its_text_is_a_thing_of_its_kind():
    old = text_facts("The Tessan Reservoir supplies Ardee. It is 9 kilometres long.")
    new = text_facts("The reservoir is 12 kilometres long, with a path along its north shore.")
    assert [(c.old_value, c.new_value) for c in find_contradictions(old, new)] == [("9", "12")]
    other = text_facts("The lake is 12 kilometres long, with a path along its north shore.")
    assert find_contradictions(old, other) == []
    # a description in a text that has a subject refers to it, not to things named elsewhere
    hotel = text_facts("We stayed at the Lantern in May. The hotel has 40 rooms.")
    named = text_facts("The Seaview Hotel has 52 rooms.")
    assert find_contradictions(hotel, named) == []
    assert same_name("k:reservoir", "e:tessan reservoir")
    assert not same_name("k:lake", "e:tessan reservoir")


def test_a_kind_left_out_shortens_a_name_but_never_lengthens_one():
    assert not same_name("e:antony chandris", "e:chandris line")
    assert same_name("e:cph", "e:concordia publishing house")  # initials


def test_an_opening_participle_is_no_name_and_the_subject_follows_its_phrase():
    facts = text_facts(
        "# Fennick (inn)\n\nRebuilt after a fire in 1902 and extended in the 1970s, "
        "the inn has 30 rooms."
    )
    rooms = facts.sentences[-1]
    assert "e:rebuilt" not in {v.key for v in rooms.values}
    assert rooms.text[subject_start(rooms.text) : rooms.subject_end] == "the inn "
    assert frozenset({"e:fennick"}) in facts.about(rooms)


def test_counts_of_one_thing_are_one_attribute_and_units_of_measure_are_not():
    old = text_facts("Along the quay, the Fennick Inn offers 30 rooms.")
    new = text_facts("The Fennick Inn has 34 rooms over three floors.")
    assert [(c.old_value, c.new_value) for c in find_contradictions(old, new)] == [("30", "34")]
    floors = text_facts("Near the station, the Arle Tower rises over 31 floors.")
    more = text_facts("The Arle Tower has 34 floors and a public gallery at the top.")
    assert [(c.old_value, c.new_value) for c in find_contradictions(floors, more)] == [("31", "34")]
    long = text_facts("The Arle Viaduct is 520 metres long and carries a branch line.")
    high = text_facts("At its highest point the Arle Viaduct stands 44 metres above the river.")
    assert find_contradictions(long, high) == []


def test_a_name_and_its_apposition_are_about_the_name():
    old = text_facts("The Wren Press is based in Dulford and prints art books.")
    new = text_facts("Hollin Books, the sister imprint of the Wren Press, is based in Sedge.")
    assert find_contradictions(old, new) == []


def test_a_clause_after_a_name_or_description_is_about_it():
    old = text_facts("The Varrow Bridge crosses the Tam. Its main span is 140 metres long.")
    new = text_facts(
        "After lunch the path crosses the Tam on Varrow, a stone arch whose main span is "
        "152 metres long."
    )
    span = next(f for f in new.sentences if "152" in f.text)
    assert frozenset({"e:varrow"}) in new.about(span)
    assert [(c.old_value, c.new_value) for c in find_contradictions(old, new)] == [("140", "152")]
