"""Two claims worded the same but for one span disagree on it (memory_bank/graph/span_difference.py),
whatever kind of span it is; claims that agree, speak of other subjects or attributes, add a
detail, hold at other times or say the same in other words do not."""

from __future__ import annotations

import pytest

from memory_bank.graph.span_difference import (
    differ_on_one_span,
    differs_in_several_spans,
    span_difference,
)
from memory_bank.graph.subjects import text_facts


def differences(old_text: str, new_text: str) -> list[tuple[str, str, str]]:
    """Every (old value, new value, kind) between a sentence of each text."""
    old, new = text_facts(old_text, all_sentences=True), text_facts(new_text, all_sentences=True)
    found = []
    for later in new.sentences:
        for earlier in old.sentences:
            difference = differ_on_one_span(earlier, later, old.about(earlier), new.about(later))
            if difference is not None:
                found.append((difference.old_value, difference.new_value, difference.kind))
    return found


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # numbers
        (
            "The Corran Viaduct has 21 arches.",
            "The Corran Viaduct has 23 arches and a footpath beside the track.",
            ("21", "23", "number:arch"),
        ),
        (
            "A ticket to the Pell Observatory costs £8 for adults.",
            "A ticket to the Pell Observatory costs £12 for adults, and children go free.",
            ("£8", "£12", "number:money"),
        ),
        # dates
        (
            "The Tarn Bridge crosses the Eden near Appleby. It was completed in 1823.",
            "The Tarn Bridge, a sandstone arch, was completed in 1829.",
            ("1823", "1829", "date"),
        ),
        (
            "The first Lindel Gazette was printed on 3 March 1856.",
            "The first Lindel Gazette was printed on 3 May 1856 by the Hollis brothers.",
            ("3 March 1856", "3 May 1856", "date"),
        ),
        # names: people and places
        (
            "The head teacher of Ferris Academy is Joan Mabry.",
            "The head teacher of Ferris Academy is Colin Reyes, who joined from Leeds.",
            ("Joan Mabry", "Colin Reyes", "name"),
        ),
        (
            "The Quenby Trophy is kept in Leeds between races.",
            "The Quenby Trophy is kept in York.",
            ("Leeds", "York", "name"),
        ),
        (
            "The Pell Observatory has three domes.",
            "The Pell Observatory has four domes.",
            ("three", "four", "number:dome"),
        ),
        (
            "Dana Hart, the mayor of Kelby, was born in 1961.",
            "Dana Hart was born in 1964.",
            ("1961", "1964", "date"),
        ),
        (
            "Brackley Lighthouse stands on the cape. It is 34 metres tall.",
            "Brackley Lighthouse is 41 metres tall.",
            ("34", "41", "number:metr"),
        ),
        (
            "Ruth Okoye lives in Leeds.",
            "Ruth Okoye lives in York.",
            ("Leeds", "York", "name"),
        ),
        # common noun phrases
        (
            "The Lark Bridge is made of iron.",
            "The Lark Bridge is made of oak.",
            ("iron", "oak", "phrase"),
        ),
        (
            "Hale Tower is a tower house of 1540. It is built of pink sandstone.",
            "Hale Tower stands above the river. It is built of dark basalt.",
            ("pink sandstone", "dark basalt", "phrase"),
        ),
        (
            "The Marlow Inn was built as a coaching inn.",
            "The Marlow Inn was built as a farmhouse in the reign of Anne.",
            ("coaching inn", "farmhouse", "phrase"),
        ),
        (
            "The dome of the Arlen Chapel is covered with copper sheets.",
            "The dome of the Arlen Chapel is covered with lead sheets.",
            ("copper", "lead", "phrase"),
        ),
    ],
)
def test_one_differing_span_of_any_kind_is_a_disagreement(old, new, expected):
    assert differences(old, new) == [expected]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # they agree, in other words or with a detail more
        ("The Corran Viaduct has 21 arches.", "With its 21 arches, the Corran Viaduct is long."),
        ("The Tarn Bridge was completed in 1823.", "Completed in 1823, the Tarn Bridge is old."),
        ("The Tarn Bridge was completed in 1823.", "The Tarn Bridge was completed in May 1823."),
        (
            "The Pell Observatory has a telescope.",
            "The Pell Observatory has a telescope with a mirror of 60 centimetres.",
        ),
        (
            "The curator of the Tolley Museum is Hale.",
            "The curator of the Tolley Museum is Martin Hale.",
        ),
        ("Ashby Mill closed in 1968.", "In 1968 Ashby Mill shut its doors for good."),
        (
            "The Marlow Inn was built as a coaching inn.",
            "The Marlow Inn began life as an inn for stagecoaches.",
        ),
        # other subjects
        ("The Brennet Bridge is 240 metres long.", "The Carrow Bridge is 310 metres long."),
        (
            "The Harwell Stadium was designed by Peter Lund.",
            "The Moreton Library was designed by Oskar Veldt.",
        ),
        (
            "The mascot of the Kelby Rovers is a red fox.",
            "The mascot of the Dunmore Wanderers is a grey wolf.",
        ),
        ("Alice Brandt was born in Paris.", "Oskar Veldt was born in Paris."),
        (
            "Hale Tower stands on a hill. It is built of pink sandstone.",
            "Moss Tower stands by a lake. It is built of dark basalt.",
        ),
        # other attributes of one subject
        ("The Orla Library holds 12,000 books.", "The Orla Library has 40 public computers."),
        ("Hale Tower is built of pink sandstone.", "Hale Tower is owned by a charitable trust."),
        (
            "The head teacher of Ferris Academy is Joan Mabry.",
            "The deputy head of Ferris Academy is Colin Reyes.",
        ),
        (
            "The Wendle Folk Festival starts on 12 July.",
            "The Wendle Folk Festival ends on 19 July.",
        ),
        ("The Pell Observatory has a telescope.", "The Pell Observatory has a planetarium."),
        ("The Lark Bridge is made of iron.", "The Lark Bridge is made of cast iron."),
        ("The Lark Bridge is 40 metres long.", "The Lark Bridge is forty metres long."),
        (
            "The summit of Ben Crail is 1,032 metres above sea level.",
            "The summit of Ben Crail is 1,032 metres high and often in cloud.",
        ),
        ("The Wendle Festival starts on 12 July.", "The Wendle Festival starts on July 12."),
        ("Anna Berg was born in 1950.", "Anna Berg was born in Oslo."),
        ("The ferry carries 200 passengers.", "The ferry carries 40 cars."),
        ("The Tolley Museum opened in 1920.", "The Tolley Museum reopened in 2001."),
        ("Ruth Okoye has two sons.", "Ruth Okoye has a daughter."),
        (
            "The Kelby Rovers play their home games at Mill Lane.",
            "The Kelby Rovers play their away games at Station Park.",
        ),
        # two differences: facts of other times or occasions
        (
            "The Kelby choir sings in Latin on Sundays.",
            "The Kelby choir rehearses in Welsh on Mondays.",
        ),
        (
            "The first bridge at Kelby was built in 1720.",
            "The second bridge at Kelby was built in 1851.",
        ),
        ("In 2010 Kelby had 4,000 residents.", "In 2020 Kelby had 4,600 residents."),
        (
            "The Pell Observatory opens at 9 am on weekdays.",
            "The Pell Observatory opens at 11 am on Sundays.",
        ),
    ],
)
def test_claims_that_do_not_disagree(old, new):
    assert differences(old, new) == []


def test_the_span_is_read_without_articles_and_cut_at_a_clause():
    found = span_difference(
        "The mascot of the Kelby Rovers is a red fox.",
        "The mascot of the Kelby Rovers is a grey wolf, seen at every home game.",
    )
    assert found is not None
    assert (found.old_value, found.new_value, found.kind) == ("red fox", "grey wolf", "phrase")
    assert found.anchors == ("Kelby Rovers",)
    assert "mascot" in found.attribute


@pytest.mark.parametrize(
    ("old", "new", "old_value", "several"),
    [
        (
            "The Pell Observatory opens at 9 am on weekdays.",
            "It opens at 11 am on Sundays.",
            "9",
            True,
        ),
        (
            "The head teacher of Ferris Academy is Joan Mabry.",
            "The deputy head of Ferris Academy is Colin Reyes.",
            "Joan Mabry",
            True,
        ),
        (
            "The pier is 370 metres long and has a tea room at its end.",
            "The pier is 410 metres long, one of the longest on the coast.",
            "370",
            False,
        ),
    ],
)
def test_clauses_worded_alike_that_differ_in_two_spans_say_two_facts(old, new, old_value, several):
    assert differs_in_several_spans(old, new, old_value) is several


def test_words_in_another_order_are_no_difference():
    assert (
        span_difference(
            "The bell of Orwick church rings every Sunday.",
            "Orwick's church bell, cast in 1740, rings every Sunday at nine.",
        )
        is None
    )
