"""Clean verbatim: hesitations, repeats and stutters out; every other word kept, in order."""

import pytest

from memory_bank.text.spoken import clean_verbatim


@pytest.mark.parametrize(
    ("said", "quoted"),
    [
        (
            "Uh we still have to make the the real basic design .",
            "we still have to make the real basic design.",
        ),
        (
            "It's it's alright for a table , but not for a remote .",
            "It's alright for a table, but not for a remote.",
        ),
        ("C c can you make you make a drawing ?", "can you make a drawing?"),
        ("So I I I think , uh , we should go .", "So I think we should go."),
        ("Um , the battery , um , lasts two years .", "the battery lasts two years."),
        ("wh where is the the LCD ?", "where is the LCD?"),
        (
            "But the whole point of the whole point of it is blending .",
            "But the whole point of it is blending.",
        ),
        (
            "OK , it 's like we 're saying they do n't know .",
            "OK, it's like we're saying they don't know.",
        ),
    ],
)
def test_a_spoken_sentence_loses_its_hesitations_repeats_and_stutters(said, quoted):
    assert clean_verbatim(said) == quoted


@pytest.mark.parametrize(
    "kept",
    [
        "The umbrella and the ermine are in the hmmm-shaped box.",  # words holding the sounds
        "I saw a owl; O Romeo; a apple.",  # one-letter words before a word of that letter
        "We met in inside rooms, on only one day.",  # two-letter words before a longer word
        "The boys ' toys and 'the quote' stay.",
        "Mm-hmm, okay, yeah, that works.",  # assent answers something
        "Line one\nLine two",
    ],
)
def test_words_that_only_look_like_hesitations_or_repeats_stay(kept):
    assert clean_verbatim(kept) == kept


def test_only_hesitation_leaves_nothing_and_is_idempotent():
    assert clean_verbatim("Uh , um , hmm .") == "."
    once = clean_verbatim("Uh it's it's , you know , the the plan .")
    assert clean_verbatim(once) == once
