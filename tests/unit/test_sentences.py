from memory_bank.text.sentences import split_sentence_spans, split_sentences


def test_splits_on_terminal_punctuation_and_keeps_abbreviations_together():
    text = "Dr. Smith arrived at 5 p.m. on Monday. Was it e.g. fine? Yes!"
    assert split_sentences(text) == [
        "Dr. Smith arrived at 5 p.m. on Monday.",
        "Was it e.g. fine?",
        "Yes!",
    ]


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert split_sentences('He said "hi." Then he left.') == ['He said "hi."', "Then he left."]
    assert split_sentences("「東京は首都です。」人口は多い！") == [
        "「東京は首都です。」",
        "人口は多い！",
    ]


def test_blank_lines_and_list_items_are_boundaries():
    assert split_sentences("intro line\n\n- first item\n- second item") == [
        "intro line",
        "- first item",
        "- second item",
    ]


def test_a_field_line_is_a_sentence_and_a_wrapped_line_is_not():
    assert split_sentences("Wyre Sailing Club\nCommodore: Ruth Amble\nFounded: 1902") == [
        "Wyre Sailing Club",
        "Commodore: Ruth Amble",
        "Founded: 1902",
    ]
    assert split_sentences("Harl Ropes Ltd. Employees: 64. Owner: Ida Penn.") == [
        "Harl Ropes Ltd.",
        "Employees: 64.",
        "Owner: Ida Penn.",
    ]
    assert split_sentences("The ropewalk was run by\nIda Penn and Co. of Harl until 1950.") == [
        "The ropewalk was run by\nIda Penn and Co. of Harl until 1950."
    ]


def test_spans_point_into_the_original_text():
    text = "  One sentence here.   Another one!  \n\n Third. "
    spans = split_sentence_spans(text)
    assert [text[s.start : s.end] for s in spans] == [
        "One sentence here.",
        "Another one!",
        "Third.",
    ]


def test_blank_text_has_no_sentences():
    assert split_sentence_spans("   \n\n  ") == []


def test_numbered_list_items_keep_their_numbers():
    assert split_sentences("1. Database storage is cheap.\n2. Compute is not.") == [
        "1. Database storage is cheap.",
        "2. Compute is not.",
    ]
    assert split_sentences("He was 5. Then he grew.") == ["He was 5.", "Then he grew."]


def test_a_period_before_a_lowercase_word_ends_no_sentence():
    text = "The offices are in Washington, D.C. and Little Rock, Arkansas. They moved in 2024."

    assert split_sentences(text) == [
        "The offices are in Washington, D.C. and Little Rock, Arkansas.",
        "They moved in 2024.",
    ]


def test_an_initialism_with_its_dots_ends_no_sentence():
    text = "He plays as a central defender for F.C. Famalicão. He was born in Lisbon."
    assert split_sentences(text) == [
        "He plays as a central defender for F.C. Famalicão.",
        "He was born in Lisbon.",
    ]
    # a plain word before a full stop still ends its sentence
    assert split_sentences("He joined the club. It won.") == ["He joined the club.", "It won."]


def test_a_blank_line_ends_a_heading_that_ends_in_an_abbreviation():
    text = "# Airspeed Ltd.\n\nAirspeed Limited was established in York."
    assert split_sentences(text) == ["# Airspeed Ltd.", "Airspeed Limited was established in York."]


def test_a_title_ending_in_a_question_mark_does_not_end_the_sentence():
    text = "Arthur? is a 1969 British comedy film. Did it sell? Yes."
    assert split_sentences(text) == [
        "Arthur? is a 1969 British comedy film.",
        "Did it sell?",
        "Yes.",
    ]


def test_lit_is_an_abbreviation():
    text = "Love Forecast (; lit. Today's Love) is a 2015 film. It was a hit."
    assert len(split_sentences(text)) == 2
