"""Key terms and snake_case titles of a piece of text, without a model.

Text in spaced scripts (English, German, ...): 1-3 word n-grams that neither start nor end with
a function word of the text's language, scored by frequency, first position, capitalization
away from a sentence start and presence in a section header, then de-duplicated. Chinese and
Japanese text: its frequent nouns and noun compounds, found by the language's segmenter
(`text.languages`). Deterministic: ties are broken by position, then alphabetically.

Not YAKE: the `yake` package was measured in place of the English n-gram scoring (with the same
stopword, number and overlap filters) and blended with it by reciprocal rank. Alone it favours
verb phrases ("billing migration moved", "tank based") and lost recall on two of the three
development sets; the blend lost on the same two; and being pure Python, YAKE is several times
slower per chunk (docs/benchmarks.md, "Measurements behind the code").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from memory_bank.text.languages import (
    DEFAULT_LANGUAGE,
    FUNCTION_WORDS_BY_LANGUAGE,
    chinese_nouns,
    detect_language,
    is_japanese,
    japanese_nouns,
)
from memory_bank.text.lexicon import (
    KEY_TERM_STOPWORDS,
    LETTER_OR_DIGIT,
    MARKDOWN_HEADER,
    MAX_NAME_LENGTH,
    UNSPACED_SCRIPTS,
    header_of,
    normalize_text,
    plural_key,
)
from memory_bank.text.sentences import split_sentences

_CONJUNCTIONS = {"and", "or", "but", "nor"}  # "bop and modal" is a list, not a term
_WORD = re.compile(rf"{LETTER_OR_DIGIT}(?:{LETTER_OR_DIGIT}|[+#]|['’./-](?={LETTER_OR_DIGIT}))*")
_POSSESSIVE = re.compile(r"['’]s$")
# French and Italian elided articles and pronouns ("l'abbaye", "d'Europe", "dell'arte").
_ELISION = re.compile(r"^(?:[cdjlmnst]|qu|dell|nell|sull|all)['’](?=\w)")
_ELIDING_LANGUAGES = frozenset(["french", "italian"])
_UNSPACED_RUN = re.compile(f"[{UNSPACED_SCRIPTS}]+")
_UNSPACED_CHAR = re.compile(f"[{UNSPACED_SCRIPTS}]")
_TITLE_WORD = re.compile(r"[^\W_]+")
_TITLE_MAX_WORDS = 5
_REPLACE_SHARE = 0.6  # a longer phrase replaces a kept part of it when scoring this share of it


def is_stopword(word: str, stopwords: frozenset[str] = KEY_TERM_STOPWORDS) -> bool:
    """True for a lowercase function word or contraction ("i'll", "don't")."""
    return word in stopwords or "'" in word


def extract_keywords(text: str, section: str | None, max_keywords: int) -> list[str]:
    """Up to `max_keywords` lowercase key terms, best first; never empty when `text` has a word
    character. `section` (the header above the text) counts as a strong signal."""
    headers = [header[1] for line in text.splitlines() if (header := header_of(line))]
    if section and section.strip() not in headers:
        headers.append(section.strip())
    text = normalize_text(text)
    headers = [normalize_text(header) for header in headers]
    language = detect_language(word.lower() for word in _WORD.findall(text))
    latin = _latin_keywords(text, headers, max_keywords, language)
    cjk = _cjk_keywords(text, headers, max_keywords)
    cjk_chars = sum(len(run) for run in _UNSPACED_RUN.findall(text))
    latin_chars = sum(char.isalpha() for char in text) - cjk_chars
    keywords = (cjk + latin if cjk_chars > latin_chars else latin + cjk)[:max_keywords]
    if not keywords:  # e.g. only numbers: the most frequent tokens are still better than nothing
        counts = Counter(token.lower() for token in re.findall(r"\w+", text))
        keywords = [token for token, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return keywords[:max_keywords]


def make_title(keywords: list[str], text: str, index: int) -> str:
    """A snake_case title of 3-5 words from the top key terms, in reading order (two will do
    when one is a Chinese or Japanese word).

    Lowercase words of any script, starts with a letter, at most 60 characters. Text without
    enough key terms (only numbers, say) is padded with "chunk_<index>".
    """
    words: list[str] = []
    for phrase in keywords:
        new = [
            word[:20]
            for word in _TITLE_WORD.findall(phrase.lower())
            if not word.isdigit() and not is_stopword(word) and word[:20] not in words
        ]
        if new and len(words) + len(new) <= _TITLE_MAX_WORDS:
            words.extend(new)
        if len(words) >= _TITLE_MAX_WORDS - 1:
            break
    lowered = normalize_text(text).lower()

    def first_position(word: str) -> int:
        if _UNSPACED_CHAR.search(word):  # no word boundaries inside Chinese or Japanese
            return lowered.find(word)
        match = re.search(rf"\b{re.escape(word)}", lowered)
        return match.start() if match else -1  # words only in the section header lead

    words.sort(key=first_position)
    unspaced = any(_UNSPACED_CHAR.search(word) for word in words)
    if len(words) < (2 if unspaced else 3):
        words += ["chunk", str(index)]
    if not words[0][0].isalpha():
        words.insert(0, "chunk")
    while len("_".join(words)) > MAX_NAME_LENGTH:
        words.pop()
    return "_".join(words)


@dataclass
class _Candidate:
    first_unit: int
    count: int = 0
    capitalized: int = 0  # occurrences written with capitals away from a sentence start
    surfaces: Counter[str] = field(default_factory=Counter)


def _latin_keywords(text: str, headers: list[str], limit: int, language: str) -> list[str]:
    stopwords = KEY_TERM_STOPWORDS
    if language != DEFAULT_LANGUAGE:
        stopwords = stopwords | FUNCTION_WORDS_BY_LANGUAGE[language]
    elides = language in _ELIDING_LANGUAGES
    header_words = {
        _normal_word(word, elides) for header in headers for word in _WORD.findall(header)
    }
    body_lines = [
        line
        for sentence in split_sentences(text)
        for line in sentence.splitlines()
        if line.strip() and not MARKDOWN_HEADER.match(line)
    ]
    candidates: dict[tuple[str, ...], _Candidate] = {}
    for unit_index, line in enumerate(headers + body_lines):
        runs = _adjacent_word_runs(line)
        # Capitals open every sentence and title-case headers: evidence of a name only elsewhere.
        first_word_start = runs[0][0].start() if unit_index >= len(headers) and runs else None
        for run in runs:
            _count_ngrams(run, unit_index, first_word_start, candidates, stopwords, elides)
    scored = []
    for key, entry in candidates.items():
        in_header = all(word in header_words or plural_key(word) in header_words for word in key)
        if len(key) > 1 and entry.count < 2 and not in_header and not entry.capitalized:
            continue  # a phrase seen once is usually an accident of wording, not a term
        score = (
            (1 + math.log(entry.count))
            * (1 + 0.5 * entry.capitalized / entry.count)
            * (2.0 if in_header else 1.0)
            * (1 + 0.5 / (1 + entry.first_unit))
            * (1 + 0.3 * (len(key) - 1))
        )
        surface = min(entry.surfaces.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        scored.append((-score, entry.first_unit, surface, key))
    return _dedupe_phrases(sorted(scored), limit)


def _count_ngrams(
    run: list[re.Match[str]],
    unit_index: int,
    first_word_start: int | None,
    candidates: dict[tuple[str, ...], _Candidate],
    stopwords: frozenset[str],
    elides: bool,
) -> None:
    words = [_normal_word(match.group(0), elides) for match in run]
    keys = [plural_key(word) for word in words]
    can_edge = [not is_stopword(word, stopwords) and _is_wordlike(word) for word in words]
    upper = [match.group(0)[0].isupper() for match in run]
    for size in (1, 2, 3):
        for first in range(len(run) - size + 1):
            last = first + size - 1
            if not (can_edge[first] and can_edge[last]) or len(words[first] * size) < 2:
                continue  # single letters are no terms
            if size == 3 and words[first + 1] in _CONJUNCTIONS:
                continue
            entry = candidates.setdefault(
                tuple(keys[first : last + 1]), _Candidate(first_unit=unit_index)
            )
            entry.count += 1
            entry.surfaces[" ".join(words[first : last + 1])] += 1
            away_from_start = first_word_start not in (None, run[first].start())
            if away_from_start and all(upper[first : last + 1]):
                entry.capitalized += 1


def _adjacent_word_runs(sentence: str) -> list[list[re.Match[str]]]:
    """Words separated only by spaces; punctuation ends a run, so n-grams never span it."""
    runs: list[list[re.Match[str]]] = []
    previous_end = None
    for match in _WORD.finditer(sentence):
        if previous_end is not None and sentence[previous_end : match.start()].strip() == "":
            runs[-1].append(match)
        else:
            runs.append([match])
        previous_end = match.end()
    return runs


def _normal_word(word: str, elides: bool = False) -> str:
    lowered = word.lower()
    if elides:
        lowered = _ELISION.sub("", lowered)
    return _POSSESSIVE.sub("", lowered).replace("’", "'")


def _is_wordlike(word: str) -> bool:
    """Letters at least as many as digits: "3rd", "b2b" and "covid-19" are words, while
    "1887" and a timestamp like "2026-03-14t10" are not."""
    letters = sum(char.isalpha() for char in word)
    return letters > 0 and letters >= sum(char.isdigit() for char in word)


def _dedupe_phrases(scored: list[tuple[float, int, str, tuple[str, ...]]], limit: int) -> list[str]:
    """Best first without overlap. A phrase inside a kept one, or sharing two words with one at
    an edge (two windows over one long name), is dropped; a phrase holding kept ones replaces
    them when it scores nearly as well ("eiffel tower" over "tower")."""
    kept: list[tuple[tuple[str, ...], str, float]] = []  # (key, surface, score)
    for negative_score, _, surface, key in scored:
        score = -negative_score
        if any(_contains(other, key) or _edges_overlap(key, other) for other, _, _ in kept):
            continue
        inside = [i for i, (other, _, _) in enumerate(kept) if _contains(key, other)]
        if inside and score < _REPLACE_SHARE * max(kept[i][2] for i in inside):
            continue
        if inside:
            kept[inside[0]] = (key, surface, score)
            kept = [entry for i, entry in enumerate(kept) if i not in inside[1:]]
        elif len(kept) < limit:
            kept.append((key, surface, score))
        else:
            break
    return [surface for _, surface, _ in kept]


def _contains(phrase: tuple[str, ...], part: tuple[str, ...]) -> bool:
    return any(phrase[i : i + len(part)] == part for i in range(len(phrase) - len(part) + 1))


def _edges_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """True when the last two or more words of one phrase are the first words of the other."""
    for first, second in ((a, b), (b, a)):
        for size in range(2, min(len(first), len(second))):
            if first[-size:] == second[:size]:
                return True
    return False


def _cjk_keywords(text: str, headers: list[str], limit: int) -> list[str]:
    """The most frequent nouns of the Chinese or Japanese runs of `text`, longer ones first
    among equals, each at most once (a noun inside a kept one is dropped)."""
    if not _UNSPACED_CHAR.search(text):
        return []
    nouns = japanese_nouns(text) if is_japanese(text) else chinese_nouns(text)
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for noun, position in nouns:
        if len(noun) < 2 or not _UNSPACED_CHAR.search(noun):
            continue  # Latin words are the other extractor's; one character names nothing
        counts[noun] += 1
        first_seen.setdefault(noun, position)
    header_text = " ".join(headers)

    def rank(noun: str) -> tuple[float, int, str]:
        in_header = 2.0 if noun in header_text else 1.0
        return (-counts[noun] * (1 + 0.2 * len(noun)) * in_header, first_seen[noun], noun)

    keywords: list[str] = []
    for noun in sorted(counts, key=rank):
        if not any(noun in kept or kept in noun for kept in keywords):
            keywords.append(noun)
        if len(keywords) == limit:
            break
    return keywords
