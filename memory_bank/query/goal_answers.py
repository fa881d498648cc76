"""Each text's answer to a question.

Two sources rarely word one attribute alike ("rises 38 metres above the river" / "stands 44
metres tall"), so the graph's rules, which must decide without a question, let most such pairs
pass. A question names the subject, the attribute and the kind of value asked for, which is
what the rules lack. So a text is read as a researcher reads a source for the question: its
answer is the sentence about the question's subject, holding a value of the asked kind the
question does not itself name, that states the question's attribute -- in the question's own
words, else worded so that its embedding is as close to the question's as a paraphrase
(`PARAPHRASE_COSINE`), and a length answers "how long" unless it says another dimension. The
session's task goal (`session.goal_conflicts`) and a question asked of memories added at
different times (`query.slots`) are read alike.

Whether two answers disagree is `query.goal_disagreement`'s.
A "what" or "which" question may ask for a common noun phrase ("What is the roof made of?"):
where no name, number or date is nearer the attribute's word, the answer is the phrase the
sentence says it is (`query.noun_phrases`).
A question that names nothing ("What do we know?") asks nothing of any one thing, and one that
asks of several things of a kind ("when the bridges in Pennick were built") expects several
values: no answers for either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from memory_bank.graph.contradictions import LENGTH_UNITS, PARAPHRASE_COSINE
from memory_bank.graph.sentence_facts import SentenceFacts, sentence_facts
from memory_bank.graph.subjects import TextFacts, same_subject
from memory_bank.graph.value_identity import NAME_HEADS, compatible_names, without_head
from memory_bank.graph.values import Value, name_key
from memory_bank.query.noun_phrases import WH_WORD, NounPhrases
from memory_bank.query.slot_rules import Asked, possessor, value_role
from memory_bank.text.cues import REPLACEMENT_CUES
from memory_bank.text.lexicon import FUNCTION_WORDS, text_stems

# A kind word names what the subject is ("the Skelder dam"), never what is asked of it.
_KIND_STEMS = text_stems(" ".join(sorted(NAME_HEADS)))
_WORDS = re.compile(r"\w+")
_DEFINITE = frozenset({"the", "its", "their", "these", "those"})
_AND = re.compile(r"\band\b|&", re.IGNORECASE)
# The words of one dimension ("tall" and "high" measure one thing, "long" another).
_DIMENSIONS = (
    frozenset({"long", "length", "lengths"}),
    frozenset({"high", "tall", "height", "rises", "stands", "above"}),
    frozenset({"wide", "width", "broad", "across"}),
    frozenset({"deep", "depth"}),
)


@dataclass(frozen=True)
class GoalAnswer:
    """A text's answer to the question: the sentence, its values of the asked kind (the one
    nearest the attribute's word first), and the question's attribute words it states (none
    where it paraphrases them)."""

    sentence: SentenceFacts
    values: tuple[Value, ...]
    stated: frozenset[str]


class Goal:
    """A question (a session's task goal, or one asked of the store): its subject's names, its
    attribute words and the kinds of value it asks for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.asked = Asked(text)
        self.names = frozenset(v.key for v in self.asked.values if v.kind == "name")
        # Words that describe the subject ("the racing driver Eddie Irvine") ask nothing of it.
        self.attribute = sentence_facts(text).frame - _KIND_STEMS - _descriptions(text, self.asked)
        # "Find out who designed it": the words before the question's wh-word ask, not of it
        wh = WH_WORD.search(text)
        if wh is not None and wh.start() > 0:
            self.attribute -= text_stems(text[: wh.start()])
        # A verb and its agent noun say the same attribute ("edits" / "the editor", "owns" /
        # "its owner", "employs" / "its employees"): each word that states an attribute word,
        # to that word.
        self._stating = {
            f"{stem}{end}": stem for stem in self.attribute for end in ("er", "or", "e")
        }
        self._stating.update(
            {
                stem[:-2]: stem
                for stem in self.attribute
                if stem.endswith(("er", "or")) and len(stem) > 5
            }
        )
        self._stating.update({stem: stem for stem in self.attribute})
        rest = text
        for value in self.asked.values:
            rest = rest.replace(value.text, " ")
        self.several = bool(_AND.search(rest))
        # "who" asks for no place ("from Dunmore"), "where" for no agent ("by Edna Pryor"),
        # nor does "in which town"
        opening = text.split(maxsplit=1)[0].lower() if text.strip() else ""
        if wh is not None and wh.group(1).lower() in {"which", "what"}:
            asked_kind = text[wh.end() :].split(maxsplit=1)[:1]
            if asked_kind and asked_kind[0].lower() in _PLACE_KINDS:
                opening = "where"
        self._other_roles = {"who": {"place"}, "whom": {"place"}, "where": {"agent"}}.get(
            opening, set()
        )
        self._asks_place = opening == "where"
        # "the Harrowgate Footbridge at Kestlow": a name after "at", "in" or "on" locates the
        # subject the question names before it
        locators = {
            v.key
            for v in self.asked.values
            if v.kind == "name" and value_role(sentence_facts(text), v) == "place"
        }
        self._subject = self.names - locators or self.names
        self._locators = locators if self._subject != self.names else frozenset()
        words = [word.strip("?.,").lower() for word in rest.split()]
        self.plural = any(  # "the bridges in Pennick"; "how many seats" counts one thing's
            _plural_kind(word) and _DEFINITE & set(words[max(0, i - 3) : i])
            for i, word in enumerate(words)
        )
        words = {word.strip("?.,").lower() for word in text.split()}
        self.dimension = next(
            (n for n, dimension in enumerate(_DIMENSIONS) if words & dimension), None
        )
        self._dimension_stems = (
            text_stems(" ".join(_DIMENSIONS[self.dimension]))
            if self.dimension is not None
            else frozenset()
        )
        self._name_stems = frozenset().union(
            *(text_stems(without_head(key).split(":", 1)[1]) for key in self.names)
        )
        # "what" / "which" may ask for a common noun phrase
        self._phrases = NounPhrases(text, self.names_one_of, _KIND_STEMS)
        self._times = frozenset(v.key for v in self.asked.values if v.kind == "date")

    def states_attribute(self, sentence: str) -> bool:
        """Whether the sentence says a word of the question's attribute (or its agent noun)."""
        return any(word in self._stating for word in sentence_facts(sentence).frame)

    def names_one_of(self, keys: Sequence[str]) -> bool:
        return any(compatible_names(name, key) for name in self.names for key in keys)

    def answer(
        self, facts: TextFacts, vectors: Callable[[list[str]], np.ndarray] | None
    ) -> GoalAnswer | None:
        """`facts`' answer to the goal, or None (module docstring). `vectors` embeds
        texts, the goal's first; without it only the goal's own words count, and only a text
        with one sentence that states them answers."""
        if not self.names or self.plural or not self._speaks_of(facts):
            return None
        candidates = []
        for sentence, about in zip(facts.sentences, facts.abouts, strict=True):
            values = tuple(
                v
                for v in sentence.values
                if self.asked.takes(v)
                and value_role(sentence, v) not in self._other_roles
                and not (self.names_one_of([v.key]) and not self._named_place(sentence, v))
            )
            # "India's pop band Euphoria": a possessor qualifies the value after it; "a
            # 14-metre spire" measures the spire
            values = (
                tuple(
                    v
                    for v in values
                    if not possessor(sentence, v) and not self._of_another(sentence, v)
                )
                or values
            )
            # "Priya Nand has replaced Dan Mercer": the value a replacement cue governs is gone
            values = tuple(v for v in values if not _replaced(sentence, v)) or values
            values, titles = self._untitled(values)
            said = frozenset(word for word in sentence.frame if word in self._stating) | titles
            stated = frozenset(self._stating[word] for word in said)
            # "which year" asks for a date, not for the phrase a sentence gives
            asks_phrase = said and "name" in self.asked.kinds
            noun = self._phrases.answer(sentence, said, values) if asks_phrase else None
            if noun is not None:
                values = (noun,)
            if not stated and values and self._measures(sentence, values):
                said = stated = self.attribute & self._dimension_stems
            values = _nearest_first(sentence, values, said, self._times)
            if values and self._about_it(sentence, about, values[0]):
                candidates.append(GoalAnswer(sentence, values, stated))
        if not candidates:
            return None
        if vectors is None:  # the goal's own words only
            stated = [c for c in candidates if c.stated]
            return stated[0] if len(stated) == 1 else None
        embedded = vectors([self.text] + [c.sentence.text for c in candidates])
        cosines = embedded[1:] @ embedded[0]
        best = max(range(len(candidates)), key=lambda i: (bool(candidates[i].stated), cosines[i]))
        chosen = candidates[best]
        paraphrase = not self.several and cosines[best] >= PARAPHRASE_COSINE
        return chosen if chosen.stated or paraphrase else None

    def _untitled(self, values: tuple[Value, ...]) -> tuple[tuple[Value, ...], frozenset[str]]:
        """The values without a title that states the goal's attribute ("Editor Moritz Hallam
        said ..." for "Who edits ...?": Moritz Hallam, and the sentence says "editor"), and the
        stems of those titles."""
        kept, titles = [], set()
        for value in values:
            first, _, rest = value.text.partition(" ")
            stem = next(iter(text_stems(first)), "")
            if value.kind == "name" and rest[:1].isupper() and stem in self._stating:
                start = value.start + len(first) + 1
                value = Value(rest, "e:" + name_key(rest), "name", start, value.end)
                titles.add(stem)
            kept.append(value)
        return tuple(kept), frozenset(titles)

    def _of_another(self, sentence: SentenceFacts, value: Value) -> bool:
        """Whether a measure written before a noun ("a 14-metre spire") measures that noun and
        not the subject or what is asked of it ("the 148-metre tower" measures the Orrisdale
        Tower, "a 33-metre pool" the pool a question asks of)."""
        noun = _MEASURED_NOUN.match(sentence.text, value.end)
        if not value.kind.startswith("number") or noun is None:
            return False
        stems = text_stems(noun.group(0)[1:])
        kinds = {_kind_word(k) for k in self._subject} - {None}
        return not stems & (self._name_stems | self.attribute | text_stems(" ".join(kinds)))

    def _named_place(self, sentence: SentenceFacts, value: Value) -> bool:
        """Whether a value that shares the subject's name is the place asked for: a club is
        often named for its town ("The Chadstone Football Club is based in Chadstone")."""
        return (
            self._asks_place
            and value_role(sentence, value) == "place"
            and value.key not in self.names
        )

    def _measures(self, sentence: SentenceFacts, values: tuple[Value, ...]) -> bool:
        """Whether the sentence gives a length of the dimension the goal asks ("it spans 64
        metres" for "How long is ...?"): a length says no other dimension."""
        return self.dimension is not None and any(
            v.kind.removeprefix("number:") in LENGTH_UNITS
            and dimension_of(sentence.text, v) in (None, self.dimension)
            for v in values
        )

    def _about_it(self, sentence: SentenceFacts, about: list, answer: Value) -> bool:
        """Whether a sentence is about the goal's subject: what it is about is, or says
        nothing but its answer and names nothing else ("Gary Tennent has been manager for two
        seasons"), or it names the subject and is about no other thing of the subject's kind
        ("the Westgate Tower" where the goal asks of "the Eastgate Tower")."""
        kinds = {_kind_word(k) for k in self._subject} - {None}
        others = [k for k in sentence.name_keys if k != answer.key and not self.names_one_of([k])]
        # the answer may be what its sentence is about, unless it is another of the subject's
        # kind ("Wickenden Market Hall" where the goal asks of "the Fintry Market Hall")
        alone = not others and _kind_word(answer.key) not in kinds
        named = [
            s
            for s in about
            if any(k.startswith("e:") for k in s) and not (alone and set(s) == {answer.key})
        ]
        if self._located_elsewhere(sentence) or (
            not self.names_one_of(sentence.name_keys)
            and any(_kind_word(k) in kinds for k in sentence.name_keys)
        ):
            return False  # it names another thing of the subject's kind, and not the subject
        if not named or any(same_subject(self._subject, s) for s in named):
            return True
        return self.names_one_of(sentence.name_keys) and not any(
            _kind_word(k) in kinds for s in named for k in s
        )

    def _located_elsewhere(self, sentence: SentenceFacts) -> bool:
        """Whether the sentence places a thing of the subject's name somewhere the question
        does not ("the Sorrel Inn at Cresswold End" for "the Sorrel Inn at Mapplewick")."""
        if not self._locators:
            return False
        names = [v for v in sentence.values if v.kind == "name"]
        return any(
            self.names_one_of([named.key])
            and _LOCATING.fullmatch(sentence.text[named.end : place.start])
            and not self.names_one_of([place.key])
            for named, place in pairwise(names)
        )

    def _speaks_of(self, facts: TextFacts) -> bool:
        keys = [v.key for s in facts.sentences for v in s.values]
        keys += [k for about in facts.abouts for subject in about for k in subject]
        return self.names_one_of(keys) or bool(
            self._name_stems & text_stems(" ".join(s.text for s in facts.sentences))
        )


_DETERMINERS = frozenset({"the", "a", "an"})
# What a place is called by kind: "which town" asks where, as "where" does.
_PLACE_KINDS = frozenset(
    {"village", "town", "city", "county", "district", "province", "region", "country", "state"}
)
# A measure joined to its unit by a hyphen, then the noun it measures ("14-metre steel spire").
_MEASURED_NOUN = re.compile(r"-[a-z]+\s+[a-z]+(?:\s+[a-z]+)?")
_CUE_TO_VALUE = re.compile(r"\s*(?:the\s+|a\s+|an\s+)?")
_CLAUSE_BREAK = re.compile(r"[;,]")
_LOCATING = re.compile(r",?\s+(?:at|in|on|near)\s+(?:the\s+)?", re.IGNORECASE)


def _descriptions(text: str, asked: Asked) -> frozenset[str]:
    """The stems of the words between a determiner and a name right after them, which say
    what the named thing is ("the racing driver Eddie Irvine", "the painter Elsie Driggs")."""
    found: set[str] = set()
    for value in asked.values:
        if value.kind != "name":
            continue
        words = text[: value.start].split()
        run = []
        while words and words[-1].islower() and words[-1] not in FUNCTION_WORDS:
            run.append(words.pop())
        if run and words and words[-1] in _DETERMINERS:
            found |= text_stems(" ".join(run))
    return frozenset(found)


def _nearest_first(
    sentence: SentenceFacts, values: tuple[Value, ...], said: frozenset[str], times: frozenset[str]
) -> tuple[Value, ...]:
    """The values, those in a clause with the time the goal names first ("Who won the prize in
    2019?": "last year's prize went to Helen Marr; the 2019 prize to Maya Chen"), then the one
    nearest a word of the goal's attribute ("housed on Mill Street, was founded by Edna Pryor":
    Edna Pryor says who founded it)."""
    at = [m.start() for m in _WORDS.finditer(sentence.text) if text_stems(m.group(0)) & said]
    when = [v.start for v in sentence.values if v.key in times]
    if not at:
        return values

    def apart(value: Value, at: int) -> bool:  # a clause boundary between them
        return bool(_CLAUSE_BREAK.search(sentence.text[min(value.start, at) : max(value.end, at)]))

    def rank(value: Value) -> tuple[bool, int]:
        other_time = bool(when) and all(apart(value, w) for w in when)
        return other_time, min(abs(value.start - a) for a in at)

    return tuple(sorted(values, key=rank))


def _replaced(sentence: SentenceFacts, value: Value) -> bool:
    """Whether the value is the one a replacement cue right before it names ("replaced Dan
    Mercer", "formerly the Corn Hall", "instead of coal")."""
    return any(
        _CUE_TO_VALUE.fullmatch(sentence.text[cue.end() : value.start])
        for cue in REPLACEMENT_CUES.finditer(sentence.text)
        if cue.end() <= value.start
    )


def _plural_kind(word: str) -> bool:
    """Whether a word is the plural of a kind of thing ("bridges", "ferries", "towers")."""
    if word in NAME_HEADS or not word.endswith("s"):
        return False
    singulars = {word[:-1], word[:-2]} | ({word[:-3] + "y"} if word.endswith("ies") else set())
    return bool(singulars & NAME_HEADS)


def _kind_word(key: str) -> str | None:
    """The common noun a name ends with that says what kind of thing it names, if any."""
    words = key.split(":", 1)[-1].split()
    if key.startswith("e:") and len(words) > 1 and words[-1] in NAME_HEADS:
        return words[-1]
    return None


def dimension_of(sentence: str, value: Value, asked: int | None = None) -> int | None:
    """Which dimension the words right after a length name ("31 metres high"), else the one
    asked: an answer's measure is of what the goal asks unless it says otherwise (a count
    has none: "212 members across three squads")."""
    if value.kind.removeprefix("number:") not in LENGTH_UNITS:
        return asked
    after = sentence[value.end :].split()[:2]
    for number, words in enumerate(_DIMENSIONS):
        if any(word.strip(".,;").lower() in words for word in after):
            return number
    return asked
