"""The one lexicon: how text is cut into words, which words carry no topic, what a Markdown
header or list item looks like, which scripts are written without spaces, and how long a name
may be. Every module that looks at words takes them from here.

Two tokenizers, for two jobs:
- `search_tokens`: what BM25, term coverage (both as stems) and title links compare. Lowercased
  words without function words; Han, Hiragana and Katakana runs become their words
  (`text.languages`: SudachiPy for Japanese, jieba for Chinese).
- `name_words`: what directory names and descriptions are built from. Words of any script
  (accents kept; Chinese and Japanese segmented into words), letter-led, 3-30 characters (2 in
  Chinese and Japanese), without function, generic or filler words ("various", "today", "yeah"),
  nor the function words of the text's own language ("der", "est").

Word forms: `plural_key` folds plurals ("networks" -> "network"), the key of a key term or a
directory-name term (only display forms are ever shown). `stem_words` gives Snowball stems
("studies", "studied" -> "studi"), never shown: BM25 indexes and queries
`stemmed_search_tokens` (stemmed in the text's language), and question term coverage compares
stems.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import threading
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from memory_bank.text.languages import (
    DEFAULT_LANGUAGE,
    FUNCTION_WORDS_BY_LANGUAGE,
    detect_language,
    is_japanese,
    segment_words,
)

# --- scripts --------------------------------------------------------------------------------

HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
HIRAGANA = "\u3040-\u309f"
KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
HANGUL = "\uac00-\ud7af"
# Written without spaces between words: searched as character bigrams.
UNSPACED_SCRIPTS = HIRAGANA + KATAKANA + HAN
# Runs of these carry the content of CJK text (Hiragana mostly marks grammar): key-term candidates.
CJK_CONTENT_RUN = re.compile(f"[{HAN}{KATAKANA}{HANGUL}]{{2,}}")

# --- words that carry no topic --------------------------------------------------------------


def _scikit_learn_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (the Glasgow IR group's), read from its module
    without importing the package: scikit-learn's `__init__` imports scipy.stats and pandas,
    more than a second of every process that only needs this list (a CLI command, a Ray
    worker)."""
    found = importlib.util.find_spec("sklearn")
    assert found is not None and found.submodule_search_locations is not None
    module_file = Path(found.submodule_search_locations[0], "feature_extraction", "_stop_words.py")
    spec = importlib.util.spec_from_file_location("_scikit_learn_stop_words", module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return frozenset(module.ENGLISH_STOP_WORDS)


# Function words for search: bm25s's English list (with contractions, "s", "t", ...).
SEARCH_STOPWORDS = frozenset(STOPWORDS_EN_PLUS)
# scikit-learn's English list holds a few words that are topics in their own right ("file
# system", "interest rates"); without them it is the function-word list of key terms and names.
TOPIC_WORDS = frozenset({"bill", "computer", "detail", "fire", "interest", "system"})
FUNCTION_WORDS = _scikit_learn_stop_words() - TOPIC_WORDS
# Fillers of prose and conversation ("yeah", "let's say"): never a key term.
FILLER_WORDS = frozenset(
    [
        "use",
        "used",
        "uses",
        "using",
        "like",
        "just",
        "new",
        "make",
        "makes",
        "way",
        "ways",
        "lot",
        "thing",
        "things",
        "let",
        "lets",
        "does",
        "did",
        "doing",
        "say",
        "says",
        "said",
        "want",
        "need",
        "needs",
        "got",
        "yes",
        "ok",
        "okay",
        "oh",
        "yeah",
        "really",
        "good",
        "great",
        "know",
        "think",
        "going",
        "able",
        "example",
        "examples",
        "important",
        "mean",
        "means",
        "e.g",
        "i.e",
        "bc",
        "ad",
        "bce",
        "ce",
    ]
)
# The calendar's names, months in their order (lowercase).
MONTHS = (
    *("january", "february", "march", "april", "may", "june"),
    *("july", "august", "september", "october", "november", "december"),
)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Words that name no topic: fillers of technical prose, vague size and quality words, and time
# words (dates say when, not what about). Never part of a directory name.
GENERIC_WORDS = frozenset(
    [
        "allow",
        "allows",
        "based",
        "called",
        "different",
        "example",
        "examples",
        "include",
        "included",
        "includes",
        "including",
        "just",
        "like",
        "made",
        "make",
        "makes",
        "provide",
        "provided",
        "provides",
        "use",
        "used",
        "uses",
        "using",
        "various",
        "way",
        "ways",
        "big",
        "bigger",
        "biggest",
        "small",
        "smaller",
        "smallest",
        "large",
        "larger",
        "largest",
        "high",
        "higher",
        "low",
        "lower",
        "long",
        "longer",
        "short",
        "shorter",
        "new",
        "newer",
        "old",
        "older",
        "good",
        "better",
        "best",
        "great",
        "main",
        "major",
        "common",
        "general",
        "important",
        "simple",
        "number",
        "numbers",
        "lot",
        "lots",
        "thing",
        "things",
        "kind",
        "kinds",
        "time",
        "times",
        "year",
        "years",
        "month",
        "months",
        "week",
        "weeks",
        "day",
        "days",
        "hour",
        "hours",
        "minute",
        "minutes",
        "today",
        "tomorrow",
        "yesterday",
        "date",
        "dates",
        "ago",
        "later",
        "early",
        "late",
        "recent",
        "recently",
        "annual",
        "daily",
        "weekly",
        *WEEKDAYS,
        *MONTHS,
    ]
)
# Sounds of hesitation and assent a transcript writes down ("uh", "um", "mm-hmm"): they say
# nothing in any sentence, so never a key term, and a sentence made of them is a vague one.
# Of them, the sounds that are only hesitation: a clean transcript leaves them out
# (`text.spoken.clean_verbatim`), where "yeah", "okay" or "oh" may still answer something.
HESITATIONS = frozenset(["uh", "um", "umm", "uhm", "er", "erm", "hmm", "mm", "mmm", "mhm"])
DISFLUENCIES = HESITATIONS | frozenset(["ah", "oh", "huh", "yeah", "okay", "uh-huh", "mm-hmm"])
KEY_TERM_STOPWORDS = FUNCTION_WORDS | FILLER_WORDS | DISFLUENCIES
# Said in every meeting, so in no name ("right", "gonna"), nor a conversation's key terms (prose
# key terms may hold them: "right" in "civil rights").
SPOKEN_FILLER_WORDS = frozenset(
    ["right", "gonna", "wanna", "sure", "actually", "maybe", "guess", "stuff", "alright"]
    + ["basically", "probably", "anyway", "kinda", "sorta"]
    # what is left of a spoken contraction ("don't" -> "don"): the negation of any verb
    + ["don", "didn", "doesn", "isn", "wasn", "aren", "weren", "haven", "hasn", "couldn"]
    + ["wouldn", "shouldn", "yep", "nope"]
)
# Verbs every narrative and biography uses: what happened, never what it is about ("came").
COMMON_VERBS = frozenset(
    ["came", "went", "took", "saw", "told", "asked", "began", "gave", "found", "thought"]
    + ["looked", "heard", "knew", "left", "felt", "turned", "seemed", "tried", "brought", "kept"]
    + ["ran", "stood", "sat", "fell", "became", "become", "born", "died", "released", "worked"]
    + ["known", "named", "held", "led", "won", "lost", "started", "returned", "wanted", "sort"]
    # the same verbs said in the present, as in meetings ("let's try", "look at")
    + ["come", "go", "get", "take", "see", "tell", "ask", "give", "find", "keep", "feel", "try"]
    + ["look", "seem", "bring", "put", "start", "talk", "tries", "trying", "looking", "gets"]
    # what a narrator says of speech and growth ("she cried", "he grew"), and old tales' thou
    + ["cried", "replied", "answered", "grew", "shall", "thou", "thee", "thy", "hath"]
)
# A directory name says what is inside: no function, generic or filler word ("yeah_right").
NAME_STOPWORDS = KEY_TERM_STOPWORDS | GENERIC_WORDS | SPOKEN_FILLER_WORDS | COMMON_VERBS
# A question holding one of these asks for an overview ("Summarize the meeting"), which the
# README of what it is about gives (collapsed-tree search); no topic word need be in it.
SUMMARY_REQUEST_WORDS = frozenset(["summarize", "summarise", "summary", "overview", "recap"])
# Words that shape a question but say nothing about its topic.
QUESTION_WORDS = frozenset(
    [
        "explain",
        "describe",
        "compare",
        "comparison",
        "difference",
        "differences",
        "tell",
        "give",
        "show",
        "work",
        "works",
        "mean",
        "means",
        "meaning",
        "use",
        "used",
        "happen",
        "happens",
        "example",
        "examples",
        "versus",
        "vs",
        "list",
        "summarize",
        "summary",
        "overview",
        "please",
        "know",
    ]
)

# --- Markdown -------------------------------------------------------------------------------

# An ATX header line: level marks, a title, optional closing marks (CommonMark). MULTILINE, so
# `.match` reads the first line of a longer text and `.search` finds a header anywhere.
MARKDOWN_HEADER = re.compile(r"^ {0,3}(#{1,6})[ \t]+(\S.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
# A list item's marker: "-", "*", "+", "•" or "1." / "1)", then a space.
LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])[ \t]+")
# Markup in transcripts: "{vocalsound}", "{disfmarker}", "[laughter]", "<noise>". Memorize strips
# it from conversations only: in other text the same shapes are Markdown links and HTML tags.
TRANSCRIPT_ANNOTATION = re.compile(r"[{\[<]\s*([A-Za-z][A-Za-z_ -]{0,40}?)\s*[}\]>]")
# Phrases a speaker fills a sentence with: their words are topics elsewhere ("golf course", "a
# 64-bit build"), never inside these ("of course", "a little bit", "kind of").
DISCOURSE_MARKERS = re.compile(
    r"\b(?:of course|a (?:little )?bit|kind of|sort of|you know|i mean)\b", re.IGNORECASE
)


def without_annotations(text: str) -> str:
    """A transcript's `text` without its markup, spaces collapsed where it stood."""
    return re.sub(r"[ \t]{2,}", " ", TRANSCRIPT_ANNOTATION.sub(" ", text))


def header_of(line: str) -> tuple[int, str] | None:
    """(level, title) when `line` (or a text's first line) is a Markdown header."""
    match = MARKDOWN_HEADER.match(line)
    return (len(match.group(1)), match.group(2).strip()) if match else None


def markdown_title(text: str) -> str | None:
    """The title of the first level-1 header of `text`, if any."""
    for match in MARKDOWN_HEADER.finditer(text):
        if len(match.group(1)) == 1:
            return match.group(2).strip()
    return None


# --- tokenizers -----------------------------------------------------------------------------

_SEARCH_TOKEN = re.compile(rf"(?P<unspaced>[{UNSPACED_SCRIPTS}]+)|[^\W_{UNSPACED_SCRIPTS}]+")
# Segmented Han words longer than this also give their character bigrams, so a word the
# segmenter keeps whole in one text (総長度) still meets its parts in another (長度).
_WHOLE_WORD_MAX = 2
_HAN_CHAR = re.compile(f"[{HAN}]")


def search_tokens(text: str) -> list[str]:
    """Lowercased word tokens without function words (English ones always, and those of the
    text's own language, `languages.detect_language`); Chinese and Japanese runs become their
    segmented content words, plus the character bigrams of Han words longer than two
    characters.
    Single Latin letters are dropped (possessive "s", initials); single digits kept."""
    return _search_tokens(text)[0]


@functools.cache
def _search_stopwords(language: str) -> frozenset[str]:
    """The words `search_tokens` drops from a text in `language` (one set per language, not
    one per text)."""
    return SEARCH_STOPWORDS | FUNCTION_WORDS_BY_LANGUAGE[language]


def _search_tokens(text: str) -> tuple[list[str], str]:
    """`search_tokens` and the language detected for stemming them."""
    lowered = text.lower()
    runs = list(_SEARCH_TOKEN.finditer(lowered))
    words = [match.group(0) for match in runs if not match.group("unspaced")]
    language = detect_language(words) if words else DEFAULT_LANGUAGE
    function_words = _search_stopwords(language)
    japanese: bool | None = None
    tokens: list[str] = []
    for match in runs:
        run = match.group(0)
        if match.group("unspaced"):
            if japanese is None:
                japanese = is_japanese(lowered)
            for word in segment_words(run, japanese):
                tokens.append(word)
                if len(word) > _WHOLE_WORD_MAX and _HAN_CHAR.search(word):
                    tokens.extend(word[i : i + 2] for i in range(len(word) - 1))
        elif (len(run) > 1 or run.isdigit()) and run not in function_words:
            tokens.append(run)
    return tokens, language


MIN_NAME_WORD = 3
MIN_UNSPACED_NAME_WORD = 2  # a Chinese or Japanese word of two characters names a topic (長城)
# Longer "words" are hashes, URLs or base64, never a good directory name.
MAX_NAME_WORD = 30
# A letter or digit of a spaced script (Latin, Greek, Cyrillic, ...); unspaced scripts are
# segmented into words instead.
LETTER_OR_DIGIT = rf"[^\W_{UNSPACED_SCRIPTS}]"
LETTER = rf"[^\W\d_{UNSPACED_SCRIPTS}]"
# Letter-led words ("B-tree", "k-means" and "t-SNE" stay one word), runs of Chinese or Japanese
# (segmented into words), and runs of anything between words except whitespace and hyphens:
# two words are adjacent (may form a phrase) only with nothing but " " or "-" between them.
_NAME_TOKEN = re.compile(
    rf"(?P<unspaced>[{UNSPACED_SCRIPTS}]+)"
    rf"|{LETTER}(?:-{LETTER}{LETTER_OR_DIGIT}*|{LETTER_OR_DIGIT}*)"
    rf"|(?:[^\w\s-]|[\d_])+"
)
_UNSPACED_CHAR = re.compile(f"[{UNSPACED_SCRIPTS}]")


def normalize_text(text: str) -> str:
    """Compatibility forms folded (full-width Latin, half-width Katakana) and accents composed,
    so "café" is one spelling whichever way it was typed; letters are kept, never stripped."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def name_tokens(text: str) -> list[str]:
    """`text` as words and separators (see `_NAME_TOKEN`), Chinese and Japanese runs as their
    segmented content words, each its own token."""
    text = normalize_text(text)
    tokens: list[str] = []
    japanese: bool | None = None
    for match in _NAME_TOKEN.finditer(text):
        if match.group("unspaced"):
            if japanese is None:
                japanese = is_japanese(text)
            tokens.extend(segment_words(match.group(0), japanese))
        else:
            tokens.append(match.group(0))
    return tokens


def function_words_of(words: Iterable[str]) -> frozenset[str]:
    """The function words of the language these lowercase words are in (English always)."""
    language = detect_language(words)
    extra = FUNCTION_WORDS_BY_LANGUAGE[language] if language != DEFAULT_LANGUAGE else frozenset()
    return NAME_STOPWORDS | extra


def is_name_word(word: str, stopwords: frozenset[str] | None = None) -> bool:
    """A word fit for a directory name: 3-30 characters (2 in Chinese or Japanese), a letter
    first, not a function or generic word (`stopwords`: `NAME_STOPWORDS` by default)."""
    lowered = word.lower()
    shortest = MIN_UNSPACED_NAME_WORD if _UNSPACED_CHAR.match(word) else MIN_NAME_WORD
    return (
        shortest <= len(word) <= MAX_NAME_WORD
        and word[0].isalpha()
        and lowered not in (NAME_STOPWORDS if stopwords is None else stopwords)
    )


def name_words(text: str) -> list[str]:
    """Lowercase words of `text` fit for directory names (see `is_name_word`), in any script;
    the function words of the text's language are left out."""
    words = [token.lower() for token in name_tokens(text) if token[0].isalpha()]
    stopwords = function_words_of(words)
    return [word for word in words if is_name_word(word, stopwords)]


# --- word forms -----------------------------------------------------------------------------


def plural_key(word: str) -> str:
    """Lowercase `word` without a plural ending: "Networks" -> "network", "queries" -> "query",
    "boxes" -> "box". A light rule, not a stemmer ("analysis" keeps its "s")."""
    key = word.lower()
    if len(key) < 4 or not key.endswith("s") or key.endswith(("ss", "us", "is")):
        return key
    if key.endswith("ies") and len(key) > 4:
        return key[:-3] + "y"
    if key.endswith(("sses", "xes", "shes", "zzes")):
        return key[:-2]
    return key[:-1]


# A PyStemmer object caches stems and is not thread-safe: one per thread.
_STEMMERS = threading.local()


# Snowball strips a plural "s" only after a vowel, so the plural of an acronym keeps it.
_ACRONYM_PLURAL = re.compile(r"[b-df-hj-np-tv-xz]{3,}s")


def stem_words(words: Iterable[str], language: str = DEFAULT_LANGUAGE) -> list[str]:
    """The Snowball stem of each lowercase word in `language` ("running" -> "run", "studies"
    -> "studi"); in English, vowelless plurals lose their "s" too ("cnns" -> "cnn"). Words
    without the language's suffixes (numbers, CJK words) come back unchanged."""
    stemmers = getattr(_STEMMERS, "by_language", None)
    if stemmers is None:
        stemmers = _STEMMERS.by_language = {}
    stemmer = stemmers.get(language)
    if stemmer is None:
        stemmer = stemmers[language] = Stemmer.Stemmer(language)
    stems = stemmer.stemWords(list(words))
    if language != DEFAULT_LANGUAGE:
        return stems
    return [stem[:-1] if _ACRONYM_PLURAL.fullmatch(stem) else stem for stem in stems]


# What `stemmed_search_tokens` makes of a text, as a number stored beside stems kept on disk
# (the Query Graph's nodes): stems stored under another number are worked out again from the
# text. Bump it whenever a change to the tokens, function words or stemming gives other stems.
STEMS_VERSION = 1


def stemmed_search_tokens(text: str) -> list[str]:
    """`search_tokens` reduced to Snowball stems in the text's language: what BM25 indexes."""
    return stems_and_language(text)[0]


def stems_and_language(text: str) -> tuple[list[str], str]:
    """`stemmed_search_tokens` and the language they were stemmed in."""
    tokens, language = _search_tokens(text)
    return stem_words(tokens, language), language


def query_stems(query: str, languages: Iterable[str] = (DEFAULT_LANGUAGE,)) -> list[str]:
    """The stems of a query in its own language and, once each, in the other `languages` (those
    of the documents searched): a question too short to show its language ("Wann wurde der Dom
    vollendet?") still meets a German document's stems. With one language, the plain stems."""
    tokens, language = _search_tokens(query)
    stems = stem_words(tokens, language)
    seen = set(stems)
    for other in sorted(set(languages) - {language}):
        for stem in stem_words(tokens, other):
            if stem not in seen:
                seen.add(stem)
                stems.append(stem)
    return stems


# The answer, the slot rules and the research loop read the same stored sentences question
# after question; tokenizing and stemming them again was a fifth of an answer's CPU.
TEXT_STEMS_CACHED = 16_384


@functools.lru_cache(maxsize=TEXT_STEMS_CACHED)
def text_stems(text: str) -> frozenset[str]:
    """The distinct stems of `text`'s search tokens, worked out once per text (least recently
    used out)."""
    return frozenset(stemmed_search_tokens(text))


# --- names ----------------------------------------------------------------------------------

# Directory names and memory titles: lowercase letters, digits and "_" of any script (NFC), a
# leading letter, at most 60 characters.
MAX_NAME_LENGTH = 60


def is_valid_name(name: str) -> bool:
    if not name or len(name) > MAX_NAME_LENGTH or not name[0].isalpha():
        return False
    if name != name.lower() or not unicodedata.is_normalized("NFC", name):
        return False
    return all(
        char == "_" or char.isalnum() or unicodedata.category(char).startswith("M") for char in name
    )


def sanitize_name(text: str, fallback: str = "memory") -> str:
    """Turn any text into a valid name (see `is_valid_name`); `fallback` fills in for nothing."""
    lowered = unicodedata.normalize("NFKC", text).lower()
    # Letters, digits and combining marks of any script are kept; anything else parts words.
    kept = "".join(
        char if char.isalnum() or unicodedata.category(char).startswith("M") else " "
        for char in lowered
    )
    name = unicodedata.normalize("NFC", "_".join(kept.split()))
    if not name:
        name = fallback
    elif not name[0].isalpha():
        name = f"{fallback}_{name}"
    return name[:MAX_NAME_LENGTH].rstrip("_")
