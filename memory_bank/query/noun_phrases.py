"""The common noun phrase a sentence gives as its answer to a "what" or "which" question.

"What is the roof made of?" is answered by a common noun phrase, not by a name, number or date,
so the typed values of a sentence (`graph.values`) miss it. The phrase is read off the grammar
around the question's attribute word in the sentence: the words after it and the grammar that
links them ("roofed in clay tiles", "its mascot is a badger", "the roof of the Haddow Exchange
in copper"), else the words right before it ("a slate roof"); at the question's type word ("what
kind of buses") the words right before it first ("diesel buses"). A phrase holds no word of the
question, no generic word ("old", "new"), no participle opening another predicate ("painted
green", "repaired by ..."), no possessor ("the club's mascot"), and no value. A phrase after the
word answers unless a value of the asked kind is nearer the word; one before it only where the
sentence holds no such value ("at Pike Lane, a muddy ground"): a name, number or date, where the
sentence has one, is the likelier answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.span_difference import (
    MAX_PHRASE_WORDS,
    PREDICATE_PARTICIPLE,
    Unit,
    sentence_units,
)
from memory_bank.graph.values import Value
from memory_bank.text.lexicon import NAME_STOPWORDS, text_stems

# The word a question asks with ("what", "who", ...), and what stands before it is a request.
WH_WORD = re.compile(r"\b(what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)
# What asks for a type of thing rather than naming one ("what kind of buses").
_TYPE_WORDS = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
# The grammar between an attribute's word and the phrase that says it ("roofed in clay tiles").
_LINKS = frozenset({"with", "in"})
_LINK_SPAN = 5


class NounPhrases:
    """The noun phrase answers to one question (module docstring)."""

    def __init__(
        self, question: str, names_one_of: Callable[[Sequence[str]], bool], kind_stems: frozenset
    ) -> None:
        wh = WH_WORD.search(question)
        self.asks = wh is not None and wh.group(1).lower() in {"what", "which"}
        self._names_one_of = names_one_of
        self._own_stems = text_stems(question) | text_stems(" ".join(_TYPE_WORDS))
        after = [w.strip("?.,").lower() for w in question[wh.end() :].split()] if wh else []
        while after and after[0] in _TYPE_WORDS | {"of"}:
            after.pop(0)
        self._type_stems = text_stems(after[0]) - kind_stems if after else frozenset()

    def answer(
        self, sentence: SentenceFacts, said: frozenset[str], values: tuple[Value, ...]
    ) -> Value | None:
        """The phrase `sentence` says the attribute is, at the stems `said` that state the
        question's attribute, unless `values` (of the asked kind) hold the likelier answer."""
        if not self.asks:
            return None
        units = sentence_units(sentence.text)
        anchors = [i for i, u in enumerate(units) if u.kind == "word" and u.key in said]
        readings = [
            (i, False, self._before(sentence.text, units, i))
            for i in anchors
            if units[i].key in self._type_stems
        ]
        for i in anchors:
            readings += [
                (i, True, self._after(sentence.text, units, i)),
                (i, False, self._before(sentence.text, units, i)),
            ]
        found = next((reading for reading in readings if reading[2]), None)
        if found is None:
            return None
        at, after, phrase = found
        words = units[phrase[0] : phrase[-1] + 1]
        start, end = words[0].start, words[-1].end

        def gap(begin: int, finish: int) -> int:  # characters between a span and the word
            return max(begin - units[at].end, units[at].start - finish, 0)

        # a name inside the phrase modifies its noun ("Welsh slate"): no rival to it
        values = tuple(v for v in values if not (start <= v.start and v.end <= end))
        if values and not (after and all(gap(v.start, v.end) > gap(start, end) for v in values)):
            return None
        stems = {u.key if u.kind == "word" else u.key.split(":", 1)[-1] for u in words}
        key = "p:" + " ".join(sorted(stems))  # a phrase, its stems
        return Value(sentence.text[start:end], key, "word", start, end)

    def _after(self, text: str, units: tuple[Unit, ...], at: int) -> list[int]:
        """The phrase past the attribute's word and the grammar, the question's words and the
        subject's name that link them; a word right after it, with no grammar between, goes on
        naming it ("home games")."""
        i = at + 1
        while i < min(len(units), at + 1 + _LINK_SPAN) and (
            (units[i].kind == "word" and (not units[i].content or units[i].key in self._own_stems))
            or (units[i].kind == "mark" and units[i].key in _LINKS)
            or _describes(text, units, i)
            or (units[i].value is not None and self._names_one_of([units[i].key]))
        ):
            i += 1
        if i == at + 1 and i < len(units) and not text[units[at].end : units[i].start].split():
            return []
        return self._phrase(text, units, range(i, len(units)))

    def _before(self, text: str, units: tuple[Unit, ...], at: int) -> list[int]:
        return self._phrase(text, units, range(at - 1, -1, -1))[::-1]

    def _phrase(self, text: str, units: tuple[Unit, ...], order: range) -> list[int]:
        phrase: list[int] = []
        for i in order:
            unit = units[i]
            word = text[unit.start : unit.end].lower()
            if self._modifier(text, units, i, order.step, phrase):
                phrase.append(i)
                continue
            if (
                unit.kind != "word"
                or not unit.content
                or unit.key in self._own_stems
                or word in NAME_STOPWORDS
                or PREDICATE_PARTICIPLE.fullmatch(word)
                or word.endswith(("'s", "’s"))
                or len(phrase) == MAX_PHRASE_WORDS
            ):
                break
            phrase.append(i)
        return phrase

    def _modifier(
        self, text: str, units: tuple[Unit, ...], at: int, step: int, phrase: list[int]
    ) -> bool:
        """Whether the name at `at` modifies the noun right after it ("Welsh slate", "Portland
        stone"): part of a common noun phrase, not a value of its own."""
        unit = units[at]
        if unit.kind != "name" or " " in text[unit.start : unit.end].strip():
            return False
        if self._names_one_of([unit.key]):
            return False
        noun = at + 1
        if step < 0:  # read right to left: the noun is already in the phrase
            return bool(phrase) and phrase[-1] == noun
        return (
            noun < len(units)
            and units[noun].kind == "word"
            and units[noun].content
            and units[noun].key not in self._own_stems
            and text[unit.end : units[noun].start] == " "
            and text[units[noun].start : units[noun].end].islower()
        )


def _describes(text: str, units: tuple[Unit, ...], at: int) -> bool:
    """Whether the unit is a comma and a participle after it, describing the word before it
    ("the roof, re-laid in slate"): grammar between an attribute's word and its phrase."""
    comma = at if units[at].kind == "mark" else at - 1
    participle = comma + 1
    return (
        units[comma].kind == "mark"
        and text[units[comma].start : units[comma].end] == ","
        and participle < len(units)
        and units[participle].kind == "word"
        and PREDICATE_PARTICIPLE.fullmatch(  # "re-laid": "laid"
            text[units[participle].start : units[participle].end].lower().rsplit("-", 1)[-1]
        )
        is not None
    )
