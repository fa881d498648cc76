"""The reading rules behind contradictions and query-time currency: what is a value
of a sentence, when two names are one, where a sentence ends."""

from __future__ import annotations

from memory_bank.graph.contradictions import find_contradiction
from memory_bank.graph.sentence_facts import mentions_value, sentence_facts
from memory_bank.graph.subjects import text_facts
from memory_bank.graph.value_context import modifies_noun, named_as_alias
from memory_bank.graph.value_identity import dates_compatible, name_contains, value_key_of
from memory_bank.graph.values import extract_values


def _names(sentence: str) -> list[str]:
    return [v.text for v in extract_values(sentence) if v.kind == "name"]


def _value(sentence: str, text: str):
    return next(v for v in sentence_facts(sentence).values if v.text == text)


def test_an_alias_cue_introduces_only_the_value_right_after_it():
    facts = sentence_facts(
        "Maureen McCormick, best known as Marcia Brady, was born on August 5, 1957."
    )
    assert named_as_alias(facts, _value(facts.text, "Marcia Brady"))
    assert not named_as_alias(facts, _value(facts.text, "August 5, 1957"))
    played = sentence_facts("She was best known for playing the part of Alice Nelson.")
    assert not named_as_alias(played, _value(played.text, "Alice Nelson"))
    stage = sentence_facts("Rakim Mayers, better known by his stage name ASAP Rocky, raps.")
    assert named_as_alias(stage, _value(stage.text, "ASAP Rocky"))


def test_a_date_after_an_alias_clause_is_a_value_that_can_change():
    old = sentence_facts("Maureen McCormick (born August 5, 1956) is an American actress.")
    new = sentence_facts(
        "Maureen McCormick, best known as Marcia Brady, was born on August 5, 1957."
    )
    found = find_contradiction(old, new)
    assert found is not None
    assert (found.old_value, found.new_value) == ("August 5, 1956", "August 5, 1957")


def test_a_comma_closing_an_opening_phrase_joins_no_place_and_region():
    assert _names("On The Brady Bunch, Ann B. Davis played Carol Brady.") == [
        "The Brady Bunch",
        "Ann B. Davis",
        "Carol Brady",
    ]
    assert _names("In Columbus, Ohio, the publisher opened a shop.") == ["Columbus, Ohio"]


def test_commas_alone_join_a_place_its_region_and_country_but_an_and_makes_a_list():
    assert _names("The mill stands in Harwick, Dorset, England.") == ["Harwick, Dorset, England"]
    assert [v.key for v in extract_values("It moved to Harwick, Dorset, England.")] == [
        "e:harwick|dorset|england"
    ]
    assert _names("Trains run to Harwick, Tolpen and Ashby.") == ["Harwick", "Tolpen", "Ashby"]


def test_a_name_qualifying_a_noun_is_no_value():
    coach = sentence_facts("Bob Nielson (born September 28, 1959) is an American football coach.")
    assert modifies_noun(coach, _value(coach.text, "American"))
    assert not modifies_noun(coach, _value(coach.text, "Bob Nielson"))
    owned = sentence_facts("Grant Hill is a host on NBA TV's NBA Inside Stuff.")
    assert modifies_noun(owned, _value(owned.text, "NBA TV"))
    assert not modifies_noun(owned, _value(owned.text, "NBA Inside Stuff"))
    subject = sentence_facts("The Beatles recorded Abbey Road in London.")
    assert not any(modifies_noun(subject, v) for v in subject.values)


def test_a_nationality_does_not_contradict_a_birthplace():
    old = text_facts("Hannah Gross (born September 25, 1992) is a Canadian actress.")
    new = text_facts("Hannah Gross was born in Edmonton.")
    earlier, later = old.sentences[0], new.sentences[0]
    assert find_contradiction(earlier, later, None, old.about(earlier), new.about(later)) is None


def test_names_that_share_words_in_another_order_are_two_names():
    def name(text: str):
        return next(v for v in extract_values(f"About {text}") if v.kind == "name")

    assert not name_contains(name("Inside the NBA"), name("NBA Inside Stuff"))
    assert name_contains(name("Maureen McCormick"), name("Maureen Denise McCormick"))
    assert name_contains(name("Acme"), name("Acme Corporation"))


def test_the_joins_capitalized_words_into_one_name():
    assert _names("Grant Hill is a host on Inside the NBA.") == ["Grant Hill", "Inside the NBA"]
    assert _names("He sold it to Microsoft the next year.") == ["Microsoft"]


def test_an_organization_suffix_is_one_word_abbreviated_or_not():
    assert value_key_of("Airspeed Ltd.") == value_key_of("Airspeed Limited")
    assert value_key_of("Acme Inc.") != value_key_of("Acme Ltd.")


def test_a_value_given_alone_is_read_as_a_name_not_as_a_sentence_opening():
    assert value_key_of("Inside the NBA") == "e:inside nba"
    assert not mentions_value("He played in the league (NBA) for years.", "Inside the NBA")


def test_a_name_qualifying_a_noun_changes_only_against_another_such_name():
    german = sentence_facts("Alphaville is a German synthpop band.")
    austrian = sentence_facts("Alphaville is an Austrian synthpop band.")
    found = find_contradiction(german, austrian)
    assert found is not None
    assert (found.old_value, found.new_value) == ("German", "Austrian")
    nationality = sentence_facts("Bob Nielson of Wartburg is an American football coach.")
    employer = sentence_facts("Bob Nielson of Wartburg is the football coach of Montana State.")
    assert find_contradiction(nationality, employer) is None


def test_a_unit_is_one_unit_however_written_and_its_is_no_name():
    assert [v.kind for v in extract_values("At 41 m tall, the mast is a landmark.")] == [
        "number:metr"
    ]
    assert [v.kind for v in extract_values("The mast rises 38 metres.")] == ["number:metr"]
    assert [v.kind for v in extract_values("It cost £52m in 2010.")][0] == "number:money"
    assert _names("It's a short walk from Harwick.") == ["Harwick"]


def test_a_decade_is_a_date_that_holds_its_years():
    values = extract_values("Through the 1950s the ferry was run by Ida Venn.")
    decade = next(v for v in values if v.text == "1950s")
    assert decade.kind == "date"
    assert dates_compatible(decade.key, "d:1957")
    assert not dates_compatible(decade.key, "d:1962")


def test_a_place_named_for_its_owner_is_one_name():
    assert _names("Pritchard's Bakery, on Castle Street, opened in 1934.") == [
        "Pritchard's Bakery",
        "Castle Street",
    ]
    assert _names("NBA TV's NBA Inside Stuff aired weekly.") == ["NBA TV", "NBA Inside Stuff"]
    [bakery] = [v for v in extract_values("Pritchard's Bakery opened.") if v.kind == "name"]
    assert bakery.key == "e:pritchard bakery"


def test_a_season_and_its_year_is_one_date():
    [season] = [v for v in extract_values("The bridge should open in spring 2027.")]
    assert (season.text, season.kind) == ("spring 2027", "date")
    assert dates_compatible(season.key, "d:2027")
    later = next(v for v in extract_values("It will open in the autumn of 2027."))
    assert not dates_compatible(season.key, later.key)


def test_the_number_of_a_listed_item_is_no_value():
    assert [v.text for v in extract_values("Site 3: Kettle Moor weather station.")] == [
        "Kettle Moor"
    ]
    assert [v.text for v in extract_values("It has 3 doors: two at the front.")][0] == "3"
