"""The offline contradiction rules (memory_bank/graph/contradictions.py): one subject and
attribute with two values is a contradiction; two subjects, two times, lists and aliases are not."""

from __future__ import annotations

import pytest

from memory_bank.graph.contradictions import find_contradictions
from memory_bank.graph.subjects import text_facts
from memory_bank.graph.values import extract_values


def contradictions(old: str, new: str, old_title: str | None = None, new_title: str | None = None):
    return find_contradictions(text_facts(old, old_title), text_facts(new, new_title))


@pytest.mark.parametrize(
    ("old", "new", "values"),
    [
        ("The CEO of Acme is Alice.", "The CEO of Acme is Bob.", ("Alice", "Bob")),
        ("Alice is the CEO of Acme.", "Bob is the CEO of Acme.", ("Alice", "Bob")),
        (
            "The mother tongue of Danielle Darrieux is French.",
            "Danielle Darrieux's mother tongue is English.",
            ("French", "English"),
        ),
        (
            "The population of Tralee is 23,000.",
            "The population of Tralee is now 26,000 people.",
            ("23,000", "26,000"),
        ),
        (
            "Joseph Stella (born June 13, 1877 – November 5, 1946) was an American painter.",
            "Joseph Stella was born on June 13, 1879.",
            ("June 13, 1877", "June 13, 1879"),
        ),
        (
            "Two Dollar Radio is a publishing house based in Columbus, Ohio.",
            "Two Dollar Radio is now based in Cleveland, Ohio.",
            ("Columbus, Ohio", "Cleveland, Ohio"),
        ),
        (
            "Acme makes anvils. The CEO of Acme is Alice Moreno.",
            "Acme Corporation announced that Bob Tanaka is now the CEO of Acme, replacing Alice Moreno.",
            ("Alice Moreno", "Bob Tanaka"),
        ),
        # "The <attribute> of <name>" opens a sentence about <name>
        (
            "The headquarters of Nokia are in Espoo, Finland.",
            "Nokia has moved its headquarters to Berlin.",
            ("Espoo, Finland", "Berlin"),
        ),
        # a sentence with no content word of its own: its preposition is its attribute
        ("The Eiffel Tower is in Paris.", "The Eiffel Tower is in Rome.", ("Paris", "Rome")),
        # a copula between two names is the attribute ("was the Earl of ...")
        (
            "Tostig Godwinson was the Earl of Northumbria.",
            "Tostig Godwinson was the Earl of Mercia.",
            ("Earl of Northumbria", "Earl of Mercia"),
        ),
        # a name opening a sentence before an adverb is still a name
        ("Friends originally aired on NBC.", "Friends originally aired on CBS.", ("NBC", "CBS")),
        # several values on both sides: the announced change pairs those after one predicate
        (
            "The Philadelphia Eagles are a professional American football franchise based in "
            "Philadelphia, Pennsylvania.",
            "The Philadelphia Eagles are now based in Camden, New Jersey, after the franchise "
            "moved its headquarters across the Delaware River.",
            ("Philadelphia, Pennsylvania", "Camden, New Jersey"),
        ),
        # "A and B, C": after an "and", the comma joins a place to its region, not a list
        (
            "The Clinton Foundation is a charity. Its offices are located in New York City and "
            "Little Rock, Arkansas.",
            "The Clinton Foundation's offices are now located in Washington, D.C. and Little "
            "Rock, Arkansas.",
            ("New York City", "Washington, D.C"),
        ),
    ],
)
def test_one_subject_and_attribute_with_two_values_contradict(old, new, values):
    found = contradictions(old, new)

    assert found, f"no contradiction between {old!r} and {new!r}"
    assert (found[0].old_value, found[0].new_value) == values


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # two subjects with one property
        ("Alice was born in Paris.", "Bob was born in Paris."),
        # a date in the value's clause makes each a fact of its time
        (
            "In 2019 the population of Tralee was 23,000.",
            "In 2021 the population of Tralee was 26,000.",
        ),
        # different subjects whose sentences refer back ("It ...") to their own texts
        (
            "The Simpsons episode aired widely. It originally aired on Fox on February 9, 1997.",
            "Another episode, When Flanders Failed, was popular. It originally aired on Fox on October 3, 1991.",
        ),
        # a list of values assigns none of them
        (
            "Starring Rajendra Prasad, Sumalatha and Chandra Mohan in the lead roles.",
            "Starring Rajendra Prasad, Gautami and Chandra Mohan in the lead roles.",
        ),
        # aliases
        (
            "Cotula australis is a plant also known as Bachelor's Buttons.",
            "Cotula australis is a plant also known as Southern Waterbuttons.",
        ),
        # the same date told more or less precisely
        ("Boomiverse was released in June 2017.", "Boomiverse was released on June 16, 2017."),
        # several values on both sides and no announced change: which pair differs is unknown
        # ("American" qualifies "football", no value of its own: the league is the second one)
        (
            "The Philadelphia Eagles are a professional American football franchise of the NFL "
            "based in Philadelphia, Pennsylvania.",
            "The Philadelphia Eagles are based in Camden, New Jersey, across the Delaware River.",
        ),
    ],
)
def test_different_subjects_times_lists_and_aliases_do_not_contradict(old, new):
    assert contradictions(old, new) == []


def test_values_are_dates_numbers_and_names_with_their_units():
    values = {
        v.text: v.kind
        for v in extract_values("Nine Inch Nails sold 2.5 million records in Boston on 5 May 1990.")
    }

    assert values["Nine Inch Nails"] == "name"  # a number word opening a name is the name
    assert values["2.5 million"] == "number:record"
    assert values["5 May 1990"] == "date"
    assert values["Boston"] == "name"


def test_a_heading_states_nothing():
    old = "# United States presidential election, 1964\n\nIt was held on November 3, 1964."
    new = "# United States presidential election, 1996\n\nIt was held on November 5, 1996."

    assert contradictions(old, new) == []


def test_a_raw_texts_first_sentence_given_as_its_title_names_no_subject():
    # `add(text=...)` titles a text by its first line: that line is a statement, not a name
    # for what the text is about (its values would join the subject and never differ).
    old = "Pellam Rovers play their home games at Ashby Park."
    new = "Pellam Rovers now play home matches at Kingsmead Stadium."

    [found] = contradictions(old, new, old_title=old, new_title=new)

    assert (found.old_value, found.new_value) == ("Ashby Park", "Kingsmead Stadium")


def test_a_middle_initial_stays_inside_its_name():
    texts = [v.text for v in extract_values("President George W. Bush appointed Ann B. Davis.")]
    assert texts == ["President George W. Bush", "Ann B. Davis"]
    # an initial that ends a clause does not swallow the next sentence's pronoun
    assert [v.text for v in extract_values("He served in World War I. He then moved.")] == [
        "World War I"
    ]


def test_of_the_claims_a_later_sentence_would_replace_the_one_said_with_its_words_is_kept():
    from memory_bank.graph.contradictions import find_contradictions
    from memory_bank.graph.subjects import text_facts

    old = text_facts(
        "# Dunkin' Brands\n\nDunkin' Brands Group, Inc. is an American restaurant holding company "
        "which runs two chains of fast-food restaurants: Dunkin' Donuts and Baskin-Robbins. It is "
        "headquartered in Canton, Massachusetts."
    )
    new = text_facts(
        "Dunkin' Brands is now headquartered in Atlanta, Georgia, after its acquisition."
    )

    found = find_contradictions(old, new, cosine=lambda a, b: 0.9)

    assert [(c.old_value, c.new_value) for c in found] == [
        ("Canton, Massachusetts", "Atlanta, Georgia")
    ]
