"""A "what" question may ask for a common noun phrase (memory_bank/query/goal_answers.py): where
no name, number or date is nearer the attribute's word, a text's answer is the phrase it says
the attribute is, and two such answers disagree unless one phrase holds the other. Words only
(no embeddings), as answers read them; sentences written for these tests."""

from __future__ import annotations

from memory_bank.graph.subjects import text_facts
from memory_bank.query.goal_answers import Goal
from memory_bank.query.goal_disagreement import disagreement


def _answer(goal: str, text: str) -> list[str] | None:
    found = Goal(goal).answer(text_facts(text, all_sentences=True), None)
    return None if found is None else [value.text for value in found.values]


def _values(goal: str, first: str, second: str) -> tuple[str, str] | None:
    question = Goal(goal)
    answers = [question.answer(text_facts(t, all_sentences=True), None) for t in (first, second)]
    if None in answers:
        return None
    found = disagreement(question, *answers)
    return None if found is None else (found.old_value, found.new_value)


ROOF = "What is the roof of Tarrant Mill made of?"


def test_the_phrase_after_the_attribute_or_right_before_it_answers():
    assert _answer(ROOF, "Tarrant Mill has a roof of stone slabs laid on oak rafters.") == [
        "stone slabs"
    ]
    assert _answer(ROOF, "Tarrant Mill has been roofed in copper sheet, the owners said.") == [
        "copper sheet"
    ]
    assert _answer(ROOF, "Tarrant Mill still keeps its slate roof.") == ["slate"]
    assert _answer("What is the mascot of Orwick Town?", "Orwick Town's mascot is a heron.") == [
        "heron"
    ]


def test_two_phrases_for_one_attribute_disagree_unless_one_holds_the_other():
    assert _values(
        ROOF,
        "Tarrant Mill is a water mill on the Esk. It has a roof of stone slabs.",
        "Tarrant Mill has been roofed in copper sheet, the owners said.",
    ) == ("stone slabs", "copper sheet")
    assert (
        _values(
            "What is the Corve Bridge made of?",
            "The Corve Bridge is made of oak.",
            "The Corve Bridge is made of oak timber from Wenlock.",
        )
        is None
    )


def test_the_type_a_question_asks_for_is_read_before_its_noun():
    assert _values(
        "What kind of trams run in Belgrove?",
        "The Belgrove tramway runs 30 horse trams on four routes.",
        "The Belgrove tramway runs a fleet of electric trams.",
    ) == ("horse", "electric")


def test_generic_words_participles_and_possessors_are_no_answer():
    # "old" says when, "replaced" and "painted" open another predicate, "club's" owns the noun
    assert _answer(ROOF, "The old roof of Tarrant Mill was replaced.") is None
    assert _answer(ROOF, "The roof of Tarrant Mill was repaired by local craftsmen.") is None
    assert _answer(
        "What is the mascot of Orwick Town?", "Orwick Town chose the club's mascot."
    ) is (None)
    assert _answer("What colour is the hull of the Esk Ferry?", "Its hull is painted blue.") is None


def test_a_name_nearer_the_attribute_is_the_answer_and_who_asks_for_no_phrase():
    assert _answer(
        "What is the home ground of Orwick Town?",
        "Orwick Town play their home games at Pike Lane, a muddy ground.",
    ) == ["Pike Lane"]
    assert _answer(
        "What is the home ground of Orwick Town?",
        "Orwick Town play at Pike Lane, a ground with a capacity of 3,000.",
    ) == ["Pike Lane"]
    assert _answer("Who designed Tarrant Mill?", "Tarrant Mill was designed by a local mason.") is (
        None
    )


def test_a_verbs_agent_noun_states_the_same_attribute():
    assert _values(
        "Who edits the Marne Quarterly?",
        "The Marne Quarterly is a literary magazine. The magazine is edited by Ruth Pell.",
        "Its editor, Sam Oduya, said the Marne Quarterly would print more poems.",
    ) == ("Ruth Pell", "Sam Oduya")
    # the agent noun of another verb is another attribute
    assert (
        _values(
            "Who edits the Marne Quarterly?",
            "The Marne Quarterly is a literary magazine. The magazine is edited by Ruth Pell.",
            "Its founder, Sam Oduya, said the Marne Quarterly would print more poems.",
        )
        is None
    )


def test_a_place_named_in_the_subjects_name_answers_where_it_is():
    # a club named for its town: the town is still where it is based
    assert _values(
        "Where is the Harwick Rowing Club based?",
        "The Harwick Rowing Club is a rowing club based in Harwick, Dorset, England.",
        "The Harwick Rowing Club is based in Tolpen, Dorset.",
    ) == ("Harwick, Dorset, England", "Tolpen, Dorset")
    assert (
        _values(
            "Where is the Harwick Rowing Club based?",
            "The Harwick Rowing Club is a rowing club based in Harwick, Dorset, England.",
            "The Harwick Rowing Club is based in Harwick, Dorset.",
        )
        is None
    )


def test_a_count_has_no_dimension_and_a_place_after_the_name_tells_two_things_apart():
    assert _values(
        "How many members does the Tolpen Rowing Club have?",
        "With 212 members across three squads, the Tolpen Rowing Club is the largest on the Esk.",
        "The Tolpen Rowing Club counts 340 members on its books.",
    ) == ("212", "340")
    question = "How many rooms does the Gull Hotel in Harwick have?"
    assert _values(
        question,
        "The Gull Hotel in Harwick has 48 rooms.",
        "The Gull Hotel in Harwick has 52 rooms.",
    ) == ("48", "52")
    assert (
        _values(
            question,
            "The Gull Hotel in Harwick has 48 rooms.",
            "The Gull Hotel in Tolpen has 31 rooms.",
        )
        is None
    )


def test_a_thing_located_on_another_is_read_in_sentences_about_either():
    assert _values(
        "What kind of engine is Kestrel on the Tolpen Railway?",
        "The Tolpen Railway is a narrow-gauge line. Its only locomotive, Kestrel, is a "
        "coal-fired tank engine.",
        "Kestrel, the Tolpen Railway's locomotive, is back in service as a diesel engine.",
    ) == ("coal-fired tank", "diesel")


def test_a_request_before_the_question_asks_nothing_of_the_subject():
    # "find" states no attribute: a sentence that only finds something answers nothing
    assert (
        _answer(
            "Find out who designed Tarrant Mill.",
            "Visitors find Tarrant Mill by following Ruth Pell's signs.",
        )
        is None
    )
    assert _answer(
        "Find out who designed Tarrant Mill.", "Tarrant Mill was designed by Ruth Pell."
    ) == ["Ruth Pell"]


def test_a_sentence_naming_only_another_thing_of_the_subjects_kind_answers_nothing():
    assert (
        _answer(
            "What is the roof of the Tolpen Market Hall made of?",
            "Roofers have covered Harwick Market Hall with a roof of zinc.",
        )
        is None
    )
    assert _answer(
        "What is the roof of the Tolpen Market Hall made of?",
        "Roofers have covered Tolpen Market Hall with a roof of zinc.",
    ) == ["zinc"]


def test_a_title_that_states_the_attribute_is_no_part_of_the_name():
    for question in ("Who edits the Marne Quarterly?", "Who is the editor of the Marne Quarterly?"):
        assert _values(
            question,
            "The Marne Quarterly is a literary magazine. The magazine is edited by Ruth Pell.",
            "Editor Sam Oduya said the Marne Quarterly would print more poems.",
        ) == ("Ruth Pell", "Sam Oduya")


def test_a_possessive_s_is_no_word_of_an_answer():
    assert _answer(
        "What covers the spire of St Aldric's in Wenmouth?",
        "Roofers working on the spire of St Aldric's in Wenmouth laid a covering of zinc sheet.",
    ) == ["zinc sheet"]
    assert (
        _answer(
            "What is the population of Pell's Green?",
            "A survey put the population of Pell's Green at 2,310 this spring.",
        )[0]
        == "2,310"
    )


def test_which_town_asks_where_so_no_agent_answers():
    text = "Corby Mills was set up in 1911 by Ada and Tom Lusk and has its offices in Harnby."
    assert _answer("In which town are the offices of Corby Mills?", text) == ["Harnby"]
    assert _answer("Which person set up Corby Mills?", text)[0] == "Ada and Tom Lusk"


def test_a_name_and_its_short_form_are_one_answer():
    assert (
        _values(
            "Who printed the Dunmere Almanac?",
            "The Dunmere Almanac was printed by the Askew Press Company Limited of Leeds.",
            "The Dunmere Almanac was printed by Askew Press for forty years.",
        )
        is None
    )


def test_a_field_of_a_record_states_its_label():
    record = "Harl Ropes Ltd.\nFounded: 1874\nEmployees: 64\nOwner: Ida Penn"
    assert _answer("When was Harl Ropes founded?", record) == ["1874"]
    assert _answer("How many people does Harl Ropes employ?", record) == ["64"]
    assert _answer("Who is the owner of Harl Ropes?", record) == ["Ida Penn"]


def test_a_measure_before_another_noun_measures_that_noun():
    text = "A 9-metre mast was fixed to Kerrow Lighthouse, taking it to a height of 41 metres."
    assert _answer("What is the height of Kerrow Lighthouse?", text) == ["41"]
    own = "Kerrow Lighthouse is a 38-metre lighthouse with a 6-metre lantern at its height."
    assert _answer("What is the height of Kerrow Lighthouse?", own) == ["38"]


def test_a_question_for_a_year_takes_no_phrase():
    text = "Tolby Rowing Club is an amateur rowing club. The club was established in 1871."
    assert _answer("In which year was Tolby Rowing Club established?", text) == ["1871"]


def test_a_family_is_named_with_its_word():
    assert _answer(
        "Who owns the Harl Arms?", "The Harl Arms is owned by the Penwith family, who bought it."
    ) == ["Penwith family"]


def test_answers_do_not_disagree_where_one_sentence_states_both():
    goal = "What is the gate of Fenby Lock made of?"
    assert (
        _values(
            goal,
            "The gate of Fenby Lock is made of elm.",
            "The medieval gate of Fenby Lock, all of elm, has lasted two hundred years.",
        )
        is None
    )
    assert _values(
        goal,
        "The gate of Fenby Lock is made of elm.",
        "The gate of Fenby Lock is made of steel, replacing elm.",
    ) == ("elm", "steel")


def test_the_value_a_replacement_cue_names_is_no_answer():
    assert _values(
        "Who leads the Ostry Players?",
        "The Ostry Players are an amateur theatre company. Their leader is Ada Venn.",
        "Tom Ruell has replaced Ada Venn as leader of the Ostry Players.",
    ) == ("Ada Venn", "Tom Ruell")


def test_two_counts_answer_one_how_many_question_whatever_noun_counts():
    goal = "How many steps lead up Orran Lighthouse?"
    assert _values(
        goal,
        "Visitors climb the 120 steps of Orran Lighthouse.",
        "Orran Lighthouse has 131 stone stairs that lead up to the lamp room.",
    ) == ("120", "131")
    assert (
        _values(
            "How long does the crossing to Orran Lighthouse take?",
            "The crossing to Orran Lighthouse takes 35 minutes.",
            "The crossing to Orran Lighthouse takes two trips a day.",
        )
        is None
    )


def test_a_name_that_modifies_a_noun_is_part_of_the_phrase():
    assert _answer(ROOF, "Tarrant Mill has a roof of Cornish slate.") == ["Cornish slate"]
    assert _answer(ROOF, "The roof of Tarrant Mill, re-laid in Cornish slate, is sound.") == [
        "Cornish slate"
    ]


def test_the_value_in_the_clause_of_the_asked_time_answers_first():
    found = _answer(
        "Who won the Orrin Medal for sculpture in 2021?",
        "Last year's Orrin Medal for sculpture went to Ada Pell for her bronze Tide; the 2021 "
        "medal went to Ivo Marsh.",
    )
    assert found[0] == "Ivo Marsh"
