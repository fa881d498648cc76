"""Which language a text is in, and its words where the script has no spaces between them.

Latin, Cyrillic and Greek text: the Snowball language (the ones bm25s has function-word lists
for) whose function words the text uses most; English unless another language's function words
clearly outnumber English ones, so English text is read exactly as before and a short question
without function words stays English.

Chinese and Japanese text: segmented into words by a dictionary segmenter that ships its
dictionary in its package (nothing is downloaded): SudachiPy with the core dictionary for
Japanese (any Hiragana or Katakana in the text makes it Japanese), jieba for Chinese. Only
content words are kept: particles, auxiliaries and punctuation (Japanese, by part of speech) and
bm25s's Chinese function words are dropped.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Iterable

from bm25s import stopwords as bm25s_stopwords

from memory_bank.errors import ModelLoadError

# Snowball stemmer name -> function words (lowercase).
FUNCTION_WORDS_BY_LANGUAGE: dict[str, frozenset[str]] = {
    "english": frozenset(bm25s_stopwords.STOPWORDS_EN_PLUS),
    "german": frozenset(bm25s_stopwords.STOPWORDS_GERMAN),
    "french": frozenset(bm25s_stopwords.STOPWORDS_FRENCH),
    "spanish": frozenset(bm25s_stopwords.STOPWORDS_SPANISH),
    "italian": frozenset(bm25s_stopwords.STOPWORDS_ITALIAN),
    "portuguese": frozenset(bm25s_stopwords.STOPWORDS_PORTUGUESE),
    "dutch": frozenset(bm25s_stopwords.STOPWORDS_DUTCH),
    "swedish": frozenset(bm25s_stopwords.STOPWORDS_SWEDISH),
    "norwegian": frozenset(bm25s_stopwords.STOPWORDS_NORWEGIAN),
    "danish": frozenset(bm25s_stopwords.STOPWORDS_DANISH),
    "russian": frozenset(bm25s_stopwords.STOPWORDS_RUSSIAN),
    "turkish": frozenset(bm25s_stopwords.STOPWORDS_TURKISH),
}
DEFAULT_LANGUAGE = "english"
# Another language is chosen only with at least this many of its function words, and more
# than English's: "die" or "de" in an English sentence (a name) never switches it.
_MIN_EVIDENCE = 2
CHINESE_FUNCTION_WORDS = frozenset(bm25s_stopwords.STOPWORDS_CHINESE)

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
KANA = "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_KANA = re.compile(f"[{KANA}]")
# Sudachi parts of speech that carry no content: particles, auxiliary verbs, symbols, blanks.
_JAPANESE_GRAMMAR = frozenset(["助詞", "助動詞", "補助記号", "空白", "記号"])
# ... nor these nouns: pronouns, numerals' counters alone, and dependent nouns (こと, もの).
_JAPANESE_EMPTY_NOUNS = frozenset(["代名詞"])
_WORD_CHARS = re.compile(r"\w")


def detect_language(words: Iterable[str]) -> str:
    """The Snowball language of lowercase `words` (function words included), English by
    default."""
    counts = dict.fromkeys(FUNCTION_WORDS_BY_LANGUAGE, 0)
    languages_of = _languages_by_function_word()
    for word in words:
        for language in languages_of.get(word, ()):
            counts[language] += 1
    english = counts.pop(DEFAULT_LANGUAGE)
    best = max(counts, key=lambda language: counts[language])  # first listed wins ties
    if counts[best] >= _MIN_EVIDENCE and counts[best] > english:
        return best
    return DEFAULT_LANGUAGE


@functools.cache
def _languages_by_function_word() -> dict[str, tuple[str, ...]]:
    """Function word -> the languages it is one of: one lookup per word of a text."""
    languages: dict[str, list[str]] = {}
    for language, function_words in FUNCTION_WORDS_BY_LANGUAGE.items():
        for word in function_words:
            languages.setdefault(word, []).append(language)
    return {word: tuple(found) for word, found in languages.items()}


def is_japanese(text: str) -> bool:
    """Han text with any Hiragana or Katakana is Japanese; Han alone is read as Chinese."""
    return _KANA.search(text) is not None


def segment_words(text: str, japanese: bool | None = None) -> list[str]:
    """The content words of a run of Chinese or Japanese text, in order (surface forms)."""
    if japanese is None:
        japanese = is_japanese(text)
    return _japanese_words(text) if japanese else _chinese_words(text)


def _japanese_words(text: str) -> list[str]:
    words = []
    for morpheme in _morphemes(text):
        part_of_speech = morpheme.part_of_speech()
        if part_of_speech[0] in _JAPANESE_GRAMMAR or part_of_speech[1] in _JAPANESE_EMPTY_NOUNS:
            continue
        surface = morpheme.surface()
        if _WORD_CHARS.search(surface):
            words.append(surface)
    return words


def japanese_nouns(text: str) -> list[tuple[str, int]]:
    """Noun phrases of Japanese `text` with their character offsets: runs of adjacent nouns
    (and noun prefixes and suffixes) joined, as 東海道 + 新幹線; pronouns and numbers alone
    are no phrase."""
    phrases: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    has_noun = False

    def close() -> None:
        if current and has_noun:
            phrases.append(("".join(current), start))

    for morpheme in _morphemes(text):
        part_of_speech = morpheme.part_of_speech()
        is_noun = part_of_speech[0] == "名詞" and part_of_speech[1] not in ("代名詞", "数詞")
        joins = is_noun or part_of_speech[0] in ("接頭辞", "接尾辞")
        if not joins:
            close()
            current, has_noun = [], False
            continue
        if not current:
            start = morpheme.offset
        current.append(morpheme.surface())
        has_noun = has_noun or is_noun
    close()
    return phrases


def chinese_nouns(text: str) -> list[tuple[str, int]]:
    """Nouns and names of Chinese `text` (jieba's noun tags) with their character offsets."""
    import jieba.posseg

    _jieba()
    found = []
    position = 0
    for pair in jieba.posseg.lcut(text):
        word, flag = pair.word, pair.flag
        is_noun = flag.startswith("n") or flag in ("vn", "eng")
        if is_noun and len(word) > 1 and word not in CHINESE_FUNCTION_WORDS:
            found.append((word, position))
        position += len(word)
    return found


def _chinese_words(text: str) -> list[str]:
    return [
        word
        for word in _jieba().lcut(text)
        if _WORD_CHARS.search(word) and word not in CHINESE_FUNCTION_WORDS
    ]


_LOCAL = threading.local()
# SudachiPy refuses input past about 49 kB: longer text is read in pieces cut at line breaks.
_SUDACHI_PIECE_CHARS = 8_000


class _Morpheme:
    """A SudachiPy morpheme with its offset in the whole text (pieces are read one by one)."""

    __slots__ = ("morpheme", "offset")

    def __init__(self, morpheme, offset: int) -> None:
        self.morpheme = morpheme
        self.offset = offset

    def part_of_speech(self):
        return self.morpheme.part_of_speech()

    def surface(self) -> str:
        return self.morpheme.surface()


def _morphemes(text: str) -> Iterable[_Morpheme]:
    tokenizer = _sudachi_tokenizer()
    base = 0
    while base < len(text):
        end = min(len(text), base + _SUDACHI_PIECE_CHARS)
        if end < len(text):
            cut = text.rfind("\n", base, end)
            end = cut + 1 if cut > base else end
        for morpheme in tokenizer.tokenize(text[base:end]):
            yield _Morpheme(morpheme, base + morpheme.begin())
        base = end


def _sudachi_tokenizer():
    """One SudachiPy tokenizer per thread (they keep per-call state), split mode B: words of
    everyday size (東京駅, 鉄道網), neither morphemes nor long compounds."""
    tokenizer = getattr(_LOCAL, "sudachi", None)
    if tokenizer is None:
        from sudachipy import SplitMode

        tokenizer = _LOCAL.sudachi = _sudachi_dictionary().tokenizer(mode=SplitMode.B)
    return tokenizer


@functools.cache
def _sudachi_dictionary():
    """The core dictionary (shipped in sudachidict-core), loaded once per process."""
    try:
        from sudachipy import Dictionary
    except ImportError as exc:
        raise ModelLoadError(
            "Japanese text needs the segmenter: pip install sudachipy sudachidict-core"
        ) from exc
    try:
        return Dictionary(dict="core")
    except Exception as exc:  # sudachipy raises its own error for a missing dictionary
        raise ModelLoadError(f"cannot load the Japanese dictionary: {exc}") from exc


@functools.cache
def _jieba():
    """jieba's default tokenizer, its dictionary loaded once (quietly: it logs the load)."""
    try:
        import jieba
    except ImportError as exc:
        raise ModelLoadError("Chinese text needs the segmenter: pip install jieba") from exc
    jieba.setLogLevel(logging.WARNING)
    _load_cached_dictionary(jieba)
    jieba.initialize()  # builds and caches the dictionary when no cache could be read
    return jieba


def _load_cached_dictionary(jieba) -> None:
    """Read jieba's cache of its default dictionary (a `marshal` file it writes to the temp
    directory on its first run) as jieba 0.42 does, but in one piece: jieba's `marshal.load`
    of the open file reads its half a million entries bit by bit, several times slower. Any
    doubt (another dictionary, no cache, an unreadable one) leaves the load to jieba."""
    import marshal
    import os
    import tempfile

    tokenizer = jieba.dt
    if tokenizer.initialized or tokenizer.cache_file or tokenizer.dictionary != jieba.DEFAULT_DICT:
        return
    cache = os.path.join(tokenizer.tmp_dir or tempfile.gettempdir(), "jieba.cache")
    try:
        with open(cache, "rb") as handle:
            frequencies, total = marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        return
    if isinstance(frequencies, dict) and frequencies and isinstance(total, int):
        with tokenizer.lock:
            tokenizer.FREQ, tokenizer.total = frequencies, total
            tokenizer.initialized = True
