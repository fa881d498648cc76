"""Key terms and titles (no model needed)."""

from __future__ import annotations

import re

from memory_bank.memorize.keyterms import extract_keywords, make_title

TITLE = re.compile(r"^[a-z][a-z0-9_]{0,59}$")

EIFFEL = (
    "## Construction\n\n"
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "It is named after the engineer Gustave Eiffel, whose company built the tower. "
    "Construction began in January 1887 and the tower opened in March 1889.\n\n"
    "The tower is 330 metres tall. The Eiffel Tower was the tallest structure in the world "
    "until 1930, and the tower is repainted every seven years."
)


def test_keywords_are_ranked_lowercase_terms_without_overlap() -> None:
    keywords = extract_keywords(EIFFEL, "History of the Eiffel Tower", max_keywords=6)
    assert keywords[0] == "eiffel tower"  # the phrase wins over its part "tower"
    assert "construction" in keywords  # a header word
    assert len(keywords) == len(set(keywords)) <= 6
    for keyword in keywords:
        assert keyword == keyword.lower()
        assert keyword.split()[0] not in {"the", "of", "in", "and"}
        others = [other for other in keywords if other != keyword]
        assert not any(f" {keyword} " in f" {other} " for other in others)  # no sub-phrases


def test_keywords_skip_numbers_timestamps_and_lists() -> None:
    text = (
        "[2026-03-14T10:02:00Z] The billing migration moved 1,214 accounts. "
        "The billing migration and rollback plan were approved. Cool, hard bop and modal jazz."
    )
    keywords = extract_keywords(text, None, max_keywords=8)
    assert keywords[0] == "billing migration"
    assert not any(any(char.isdigit() for char in keyword) for keyword in keywords)
    assert "bop and modal" not in keywords


def test_keywords_fall_back_for_cjk_and_number_only_text() -> None:
    japanese = "東京タワーは1958年に完成した。東京タワーの展望台から富士山が見える。"
    keywords = extract_keywords(japanese, None, max_keywords=4)
    assert keywords[0] == "東京タワー"
    assert 1 <= len(keywords) <= 4
    assert extract_keywords("1887 1889 1887", None, 3) == ["1887", "1889"]


def test_keywords_are_deterministic() -> None:
    assert extract_keywords(EIFFEL, None, 8) == extract_keywords(EIFFEL, None, 8)


def test_title_is_snake_case_in_reading_order() -> None:
    text = "Python's GIL prevents true multi-threading. The GIL lets one thread run at a time."
    title = make_title(["gil", "python", "multi-threading", "thread"], text, index=3)
    assert title == "python_gil_multi_threading"
    assert TITLE.match(title)


def test_titles_of_other_languages_keep_their_words() -> None:
    text = "東京タワーの展望台から富士山が見える。"
    assert make_title(["東京タワー", "展望台"], text, index=12) == "東京タワー_展望台"
    assert make_title(["tokyo", "東京タワー"], "Tokyo 東京タワー", index=4) == "tokyo_東京タワー"
    assert make_title(["東京タワー"], "東京タワー", index=4) == "東京タワー_chunk_4"
    german = "Der Kölner Dom ist eine Kirche in Köln. Der Kölner Dom hat zwei Türme."
    keywords = extract_keywords(german, None, max_keywords=4)
    assert keywords[0] == "kölner dom" and not {"der", "ist", "eine"} & set(keywords)
    assert {"kölner", "dom"} <= set(make_title(keywords, german, index=1).split("_"))


def test_chinese_keywords_are_words() -> None:
    chinese = "长城是中国古代的军事防御工程。今天的长城大多是明朝修建的，长城全长两万千米。"
    keywords = extract_keywords(chinese, None, max_keywords=4)
    assert keywords[0] == "长城"
    assert "军事" in keywords and "的" not in "".join(keywords)


def test_title_fallbacks_stay_valid() -> None:
    assert make_title(["1887"], "1887", index=12) == "chunk_12"
    long_words = ["a" * 30 + "b", "c" * 25, "d" * 25, "e" * 25]
    title = make_title(long_words, " ".join(long_words), index=0)
    assert TITLE.match(title) and len(title) <= 60
    assert TITLE.match(make_title(["3d printing", "resin"], "3d printing with resin", index=1))
