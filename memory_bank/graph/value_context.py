"""The words around a value in its sentence: the predicate it fills ("formed in", "born
on"), its local frame, the words before it; and whether the sentence assigns it at all (not an
alias, not one item of an enumeration, not qualified by a date of its clause)."""

from __future__ import annotations

import re
from functools import lru_cache

from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.values import Value
from memory_bank.text.lexicon import FUNCTION_WORDS, search_tokens, stem_words

# A sentence's facts are made once per text (`sentence_facts`) and compared with many others:
# what is read around one of its values is kept rather than read again for every pair.
_AROUND_VALUES = 65536

_ALIAS = re.compile(
    r"\b(?:known|called|nicknamed|referred to|dubbed|titled)\s+(?:as|by)?\b", re.IGNORECASE
)
# Between an alias cue and the alias: an article, a name's kind, within a quote ("known by
# his stage name ASAP Rocky", "best known as "Eddie the Eagle"").
_DIRECTLY = re.compile(
    r"\s*(?:(?:as|by|under|the|an?|his|her|its|their|(?:[a-z]+\s+)?name)\s+)*"
    r"(?:[\"“'‘][^\"”’]*)?"
)
# Enumerations: values of one kind, this many, joined by commas and "and": a list, not a value.
MAX_VALUES_OF_A_KIND = 3
_LIST_GAP = re.compile(r"\s*(?:,|;|/)?\s*(?:(?:and|or|&)\s+)?")


# "an American football coach", "a 2015 South Korean romantic comedy film", "the Fox Theatre
# building": after an article (and up to two words), a name that a common noun follows
# qualifies that noun -- a nationality, a make, a place -- and is not what the sentence says.
_ARTICLE_BEFORE = re.compile(r"\b(?:an?|the)\s+((?:[\w-]+\s+){0,2})$", re.IGNORECASE)
_NOUN_AFTER = re.compile(r" ([a-z][a-z-]*)\b")
# A lowercase word after a name that reads as its verb ("the Beatles recorded", "Acme makes").
_VERB_LIKE = re.compile(r"(?:[a-z]+ed|[a-z]*[^s]s|[a-z]{3,}ly)")


@lru_cache(maxsize=_AROUND_VALUES)
def modifies_noun(facts: SentenceFacts, value: Value) -> bool:
    """Whether a name stands as a modifier before a common noun ("an American actress") or as
    a possessor ("NBA TV's NBA Inside Stuff"): no value of its own."""
    if value.kind != "name":
        return False
    if facts.text[value.end : value.end + 2] in ("'s", "’s"):
        return True  # "NBA TV's NBA Inside Stuff": the possessor qualifies what it owns
    noun = _NOUN_AFTER.match(facts.text, value.end)
    article = _ARTICLE_BEFORE.search(facts.text[max(0, value.start - 40) : value.start])
    if noun is None or article is None:
        return False
    if any(word.lower() in FUNCTION_WORDS for word in article.group(1).split()):
        return False  # "a city in Zhejiang province": the object of a preposition
    word = noun.group(1)
    return word not in FUNCTION_WORDS and _VERB_LIKE.fullmatch(word) is None


def named_as_alias(facts: SentenceFacts, value: Value) -> bool:
    """ "also known as X": the words right before the value introduce an alias, directly ("best
    known as Marcia Brady, was born on August 5, 1957": the date is no alias; "known for
    playing the part of Alice Nelson": no alias)."""
    before = facts.text[max(0, value.start - 40) : value.start]
    cues = list(_ALIAS.finditer(before + "\x00"))
    return bool(cues) and _DIRECTLY.fullmatch(before[cues[-1].end() :]) is not None


def clause_date(facts: SentenceFacts, value: Value, differing: list[Value]) -> bool:
    """Whether another differing value in the value's own clause is a date (its qualifier)."""
    start, end = clause_bounds(facts.text, value)
    return any(
        v.kind == "date" and v.key != value.key and start <= v.start and v.end <= end
        for v in differing
    )


# What parts a date from the claim it would date: a bracket, a semicolon, a clause word; not a
# comma alone, which closes a fronted phrase ("In 1990, the club had 40 members").
_CLAIM_BREAK = re.compile(r"[;()\[\]]|\b(?:and|but|or|who|whom|whose|which|where|while)\b")


def dates_claim(text: str, date: Value, answer: Value) -> bool:
    """Whether a date dates the answer's claim: it stands in the answer's clause, a fronted
    phrase included ("In 1990, the club had 40 members"), or in brackets right after the
    answer ("5,870 (2011 census)"); not in brackets elsewhere ("Stellham Library (1909)") nor
    in a clause of its own ("..., whose plans won a competition in 1906")."""
    opening = text.rfind("(", 0, date.start)
    if opening > text.rfind(")", 0, date.start):
        return opening >= answer.end and not text[answer.end : opening].strip()
    low, high = sorted((date, answer), key=lambda v: v.start)
    return _CLAIM_BREAK.search(text, low.end, high.start) is None


def clause_bounds(text: str, value: Value) -> tuple[int, int]:
    left = max((text.rfind(mark, 0, value.start) for mark in ",;:()–—"), default=-1)
    rights = [text.find(mark, value.end) for mark in ",;:()–—"]
    right = min((r for r in rights if r >= 0), default=len(text))
    return left + 1, right


def clause_words(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The content words of the value's own clause (between commas, semicolons, brackets and
    dashes), other values left out: what the sentence says of it there."""
    start, end = clause_bounds(facts.text, value)
    words = [w for w in search_tokens(outside_values(facts, start, end)) if len(w) > 2]
    return frozenset(stem_words(words))  # not "co" of "co-wrote" and "co-written"


@lru_cache(maxsize=_AROUND_VALUES)
def local_frame(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The content words next to a value (five before, two after, other values skipped): the
    attribute it fills. A lifespan "(1 July 1903 – 5 January 1941)" says born and died."""
    before = outside_values(facts, 0, value.start)
    after = outside_values(facts, value.end, len(facts.text))
    words = set(stem_words(search_tokens(before)[-5:] + search_tokens(after)[:2]))
    if value.kind == "date" and _LIFESPAN.search(facts.text):
        words |= {"born", "die"}
    return frozenset(words)


def outside_values(facts: SentenceFacts, start: int, end: int) -> str:
    """The sentence's text from `start` to `end`, its values blanked out."""
    text = list(facts.text[start:end])
    for other in facts.values:
        if other.end > start and other.start < end:
            for i in range(max(other.start, start), min(other.end, end)):
                text[i - start] = " "
    return "".join(text)


# "(1 July 1903 – 5 January 1941)", "(1898 – July 12, 1992 in New York City)"
_LIFESPAN = re.compile(r"\([^()]*\d{3,4}\s*[–—-]\s*[^()]*\d{3,4}(?:\s+(?:in|at)\s[^()\d]*)?\s*\)")


def value_context(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The words a value is said with: its predicate and the content words before it."""
    return predicate_of(facts, value) | left_context(facts, value)


def assigns(facts: SentenceFacts, value: Value) -> bool:
    """Whether the sentence gives `value` as a value: not an alias ("also known as") and not
    one of an enumeration ("starring A, B and C")."""
    aliased = value.kind == "name" and named_as_alias(facts, value)  # a date has no alias
    return not (aliased or in_list(facts, value))


@lru_cache(maxsize=_AROUND_VALUES)
def predicate_of(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The two content words nearest before a value (its predicate: "formed in", "born on");
    the dates of a lifespan "(1 July 1903 - 5 January 1941)" are born and died, and so are
    the places after them."""
    lifespan = _LIFESPAN.search(facts.text)
    if lifespan and lifespan.start() <= value.start < lifespan.end():
        dates = [
            v
            for v in facts.values
            if v.kind == "date" and lifespan.start() <= v.start < lifespan.end()
        ]
        if value.kind == "date":
            return frozenset({"born"} if dates and dates[0] is value else {"die"})
        # "(1898 – July 12, 1992 in New York City)": a place after the second date is where
        # the person died, after the first where they were born.
        before = [d for d in dates if d.end <= value.start]
        if before:
            return frozenset({"born"} if len(before) == 1 else {"die"})
    before = search_tokens(outside_values(facts, 0, value.start))[-2:]
    return frozenset(stem_words(before))


@lru_cache(maxsize=_AROUND_VALUES)
def left_context(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The three content words before a value, back to the previous value of its kind."""
    start = max(
        (v.end for v in facts.values if v.kind == value.kind and v.end <= value.start), default=0
    )
    before = search_tokens(outside_values(facts, start, value.start))[-3:]
    return frozenset(stem_words(before))


def in_list(facts: SentenceFacts, value: Value) -> bool:
    """Whether `value` stands in a list of at least MAX_VALUES_OF_A_KIND values of its kind,
    one after the other, joined by commas and "and" ("A, B and C")."""
    same = [v for v in facts.values if v.kind == value.kind]
    if value not in same:
        return False
    position = same.index(value)
    first = last = position
    while first > 0 and _LIST_GAP.fullmatch(facts.text[same[first - 1].end : same[first].start]):
        first -= 1
    while last < len(same) - 1 and _LIST_GAP.fullmatch(
        facts.text[same[last].end : same[last + 1].start]
    ):
        last += 1
    return last - first + 1 >= MAX_VALUES_OF_A_KIND
