"""Which language a text is in, and the words of Chinese and Japanese text."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from memory_bank.text.languages import (
    chinese_nouns,
    detect_language,
    is_japanese,
    japanese_nouns,
    segment_words,
)
from memory_bank.text.lexicon import STEMS_VERSION, stemmed_search_tokens


def words(text: str) -> list[str]:
    return text.lower().split()


def test_function_words_tell_the_language_and_english_is_the_default() -> None:
    assert detect_language(words("Die Türme des Doms sind höher als die der Kirche")) == "german"
    assert detect_language(words("La tour est située dans le parc du Champ-de-Mars")) == "french"
    assert detect_language(words("El castillo está en la ciudad y es muy antiguo")) == "spanish"
    assert detect_language(words("The die-hard fans of the band")) == "english"
    assert detect_language(words("Kölner Dom")) == "english"  # no evidence: English
    assert detect_language([]) == "english"


def test_each_text_is_stemmed_in_its_own_language() -> None:
    assert stemmed_search_tokens("Die Türme des Doms sind hoch") == ["turm", "dom", "hoch"]
    assert stemmed_search_tokens("The studies were studied") == ["studi", "studi"]


def test_kana_makes_japanese_and_han_alone_chinese() -> None:
    assert is_japanese("東京タワーは高い") and not is_japanese("长城很长")
    assert segment_words("東京タワーの展望台から") == ["東京", "タワー", "展望台"]
    assert segment_words("长城是中国的军事工程") == ["长城", "中国", "军事", "工程"]


def test_nouns_come_with_their_offsets_and_compounds_join() -> None:
    text = "東海道新幹線は1964年に開業した。"
    assert japanese_nouns(text)[0] == ("東海道新幹線", 0)
    assert chinese_nouns("东海道新干线于一九六四年开业了")[:2] == [("东海道", 0), ("新干线", 3)]
    long_text = "富士山が見える。\n" * 3000  # past SudachiPy's input limit, read in pieces
    nouns = japanese_nouns(long_text)
    assert len(nouns) == 3000 and nouns[-1] == ("富士山", len(long_text) - 9)


def test_stems_version_goes_with_what_the_lexicon_makes_of_a_text() -> None:
    """Stems kept on disk (the Query Graph's nodes) are trusted under `STEMS_VERSION` only.
    When other stems come out here, bump `STEMS_VERSION` and update both lines together."""
    probes = {
        "The studies studied how CNNs run on GPUs in 2024": [
            *("studi", "studi", "cnn", "run", "gpus", "2024"),
        ],
        "Der Dom wurde 1880 vollendet, und die Türme sind hoch": [
            *("dom", "wurd", "1880", "vollend", "turm", "hoch"),
        ],
        "北京大学图书馆藏书丰富": [
            *("北京大学图书馆", "北京", "京大", "大学", "学图", "图书", "书馆", "藏书"),
        ],
    }
    assert STEMS_VERSION == 1
    assert {text: stemmed_search_tokens(text) for text in probes} == probes


def test_jiebas_cached_dictionary_is_read_in_one_piece_and_segments_as_jieba_does(
    tmp_path,
) -> None:
    # Fresh processes: the dictionary loads once per process. Both share one temp directory,
    # so the second reads the cache the first (jieba itself) wrote.
    text = "中国科学技术协会是中国科学技术工作者的群众组织。长城很长。"
    jieba_itself = (
        "import jieba, json, sys; jieba.setLogLevel(60); jieba.initialize(); "
        "print(json.dumps(jieba.lcut(sys.argv[1])))"
    )
    ours = (
        "import jieba, json, sys; from memory_bank.text import languages; "
        "languages._load_cached_dictionary(jieba); loaded = jieba.dt.initialized; "
        "print(json.dumps([loaded, languages._jieba().lcut(sys.argv[1])]))"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def run(code: str):
        done = subprocess.run(
            [sys.executable, "-c", code, text], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    expected = run(jieba_itself)  # builds the dictionary and writes the cache
    assert (tmp_path / "jieba.cache").is_file()
    loaded, words = run(ours)
    assert loaded and words == expected and "长城" in words
