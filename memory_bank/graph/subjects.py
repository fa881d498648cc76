"""What a text and its sentences are about: a text's principal subject (its title, its first
sentence's subject, or the names that sentence introduces), what each sentence refers back to
(a pronoun, a definite description of a thing named before it, a clause after a name), and
when two subjects are one."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

from memory_bank.graph.sentence_facts import (
    SentenceFacts,
    in_subject,
    sentence_facts,
    subject_start,
)
from memory_bank.graph.value_identity import compatible_names, dates_compatible, kind_key, same_name
from memory_bank.graph.values import extract_values
from memory_bank.text.lexicon import MARKDOWN_HEADER
from memory_bank.text.sentences import split_sentences

_PRONOUN_SUBJECT = re.compile(
    r"\b(?:it|he|she|they)\s+(?:is|was|are|were|has|had|became)\b", re.IGNORECASE
)


Subject = frozenset[str]  # the name and date keys that pick out what a sentence is about


@dataclass(frozen=True)
class TextFacts:
    """A text's sentences with values, and its principal subject: the names and dates of its
    title, or of its first sentence's subject phrase ("The 1964 United States presidential
    election"), else the names its first sentence introduces ("We stayed at the Grand Ossory");
    sentences that refer back ("It was held on ...") are about it. A sentence whose subject is
    a definite description ("The hotel has 96 rooms") refers back to the nearest name before
    it that is of that kind ("the Grand Ossory Hotel"), when there is one (`described`)."""

    principal: Subject
    sentences: tuple[SentenceFacts, ...]
    described: tuple[tuple[str, Subject], ...] = ()  # (sentence text, what it refers to)
    # (sentence text, a thing a clause of it describes: "Tessaly, a green arch whose ...")
    qualified: tuple[tuple[str, Subject], ...] = ()

    @cached_property
    def _referents(self) -> dict[str, Subject]:
        return dict(self.described)

    @cached_property
    def _qualifying(self) -> dict[str, list[Subject]]:
        found: dict[str, list[Subject]] = {}
        for text, subject in self.qualified:
            found.setdefault(text, []).append(subject)
        return found

    def referent(self, facts: SentenceFacts) -> Subject:
        """What a sentence of this text that refers back refers to."""
        return self._referents.get(facts.text, self.principal)

    def about(self, facts: SentenceFacts) -> list[Subject]:
        """What a sentence of this text is about (`subjects_about`); a definite description
        in a text with no subject to refer to ("The canal runs for 41 kilometres.") is about a
        thing of its kind named elsewhere (`kind_key`)."""
        referent = self.referent(facts)
        subjects = subjects_about(referent, facts)
        noun = description_noun(facts)
        if noun is not None and not referent:
            subjects.append(frozenset({kind_key(noun)}))
        subjects += self._qualifying.get(facts.text, [])
        return subjects

    @cached_property  # a text is compared with many others: read once for all of them
    def abouts(self) -> tuple[list[Subject], ...]:
        """What each of the text's sentences is about, in order."""
        return tuple(self.about(facts) for facts in self.sentences)


def subjects_about(principal: Subject, facts: SentenceFacts) -> list[Subject]:
    """What a sentence is about, in a text whose principal subject is `principal`: its own
    subject phrase's names and dates, the principal subject when it names it or refers back,
    the organization of a single role."""
    subjects: list[Subject] = [frozenset({key}) for key in facts.role_objects]
    names = [v.key for v in facts.values if v.kind == "name"]
    principal_names = [k for k in principal if k.startswith("e:")]
    own = _subject_of(facts) if not facts.refers_back else _of_subject(facts)
    pronoun = not own and _PRONOUN_SUBJECT.search(facts.text) is not None
    if principal and (
        facts.refers_back
        or pronoun
        or any(compatible_names(n, p) for n in names for p in principal_names)
    ):
        subjects.append(principal)
    if own:
        subjects.append(own)
    return subjects


def text_facts(
    text: str,
    title: str | None = None,
    all_sentences: bool = False,
    known: Mapping[str, SentenceFacts] | None = None,
) -> TextFacts:
    """The facts of every sentence of `text` that holds a value and a frame (`all_sentences`:
    of every sentence: a common noun phrase may be what a claim turns on). `known`: facts read
    before, by sentence (`stored_facts`), taken instead of reading those sentences again."""
    known = known or {}
    sentences = [
        known.get(sentence) or sentence_facts(sentence)
        for sentence in split_sentences(text)
        if not MARKDOWN_HEADER.match(sentence)  # a heading names a topic, it states nothing
    ]
    for line in text.splitlines()[:3]:
        heading = MARKDOWN_HEADER.match(line)
        if heading and not title:
            title = heading.group(2).strip()
    if title and _excerpt_title(title, text):
        title = None  # a raw text's first sentence, not a name for what the text is about
    principal: Subject = frozenset()
    if title:
        title_values = extract_values(f"About {title}")  # a title's first word is no grammar
        principal = frozenset(v.key for v in title_values if v.kind in ("name", "date"))
    if not principal and sentences:
        principal = _subject_of(sentences[0]) or _introduced(sentences[0])
    described = _described(sentences)
    qualified = _qualified(sentences)
    if not all_sentences:
        sentences = [fact for fact in sentences if fact.values and fact.frame]
    return TextFacts(principal, tuple(sentences), described, qualified)


# A subject phrase that is the writer or people ("We", "Last year I", "Our class"): its
# sentence introduces what the text is about as an object ("... stayed at the Grand Ossory").
_PEOPLE_SUBJECT = re.compile(r"\b(?:I|we|you|they|he|she|my|our|your|their|his|her)\b", re.I)


def _introduced(facts: SentenceFacts) -> Subject:
    """The names a sentence whose subject is its writer or people introduces ("We stayed at
    the Grand Ossory"): what its text goes on about."""
    if _PEOPLE_SUBJECT.search(facts.text[: facts.subject_end]) is None:
        return frozenset()
    return frozenset(v.key for v in facts.values if v.kind == "name")


# A subject phrase that is a definite description: "The hotel", "The old stone bridge", or
# one before an apposition ("The pavilion, by the architect Nora Vell, ...").
_DEFINITE_DESCRIPTION = re.compile(
    r"\W*(?i:the)\s+(?:[a-z][\w'’-]*\s+){0,2}([a-z][\w-]*)(?:\W*$|\s*,)"
)


def description_noun(facts: SentenceFacts) -> str | None:
    """The noun of a sentence's subject when it is a definite description ("The hotel has 96
    rooms" -> "hotel")."""
    opening = _DEFINITE_DESCRIPTION.match(facts.text[subject_start(facts.text) : facts.subject_end])
    return opening.group(1) if opening else None


def _described(sentences: list[SentenceFacts]) -> tuple[tuple[str, Subject], ...]:
    """The sentences whose subject is a definite description ("The hotel ..."), with the
    nearest name before them whose words hold its noun ("the Grand Ossory Hotel")."""
    described: dict[str, Subject] = {}
    for position, facts in enumerate(sentences):
        noun = description_noun(facts)
        if noun is None or not position:
            continue
        named = _nearest_of_kind(sentences[:position], noun)
        if named:
            described[facts.text] = named
    return tuple(described.items())


# A name or a definite description that the clause after it describes: "on Tessaly, a
# green-painted arch whose main span ...", "at the observatory, which sits at ...".
_QUALIFIED = re.compile(r"(?:\bthe\s+([a-z][\w-]*)|([\w'’)]))\s*,\s+(?:which|whose|who|an?)\s")


def _qualified(sentences: list[SentenceFacts]) -> tuple[tuple[str, Subject], ...]:
    """The things the clauses of each sentence describe (`TextFacts.qualified`): a name, or a
    definite description -- the nearest name before it of its kind, else a thing of its kind
    (`kind_key`). Such a clause is about what it follows, not about the sentence's subject."""
    found: list[tuple[str, Subject]] = []
    for position, facts in enumerate(sentences):
        for match in _QUALIFIED.finditer(facts.text):
            if match.group(1):
                noun = match.group(1)
                named = _nearest_of_kind(sentences[: position + 1], noun, match.start())
                found.append((facts.text, named or frozenset({kind_key(noun)})))
                continue
            end = match.end(2)
            name = next((v for v in facts.values if v.kind == "name" and v.end == end), None)
            if name is not None:
                found.append((facts.text, frozenset({name.key})))
    return tuple(found)


def _nearest_of_kind(
    sentences: list[SentenceFacts], noun: str, before: int | None = None
) -> Subject:
    """The nearest name of the kind `noun` in `sentences` (in the last of them, before
    `before` when given)."""
    for position in range(len(sentences) - 1, -1, -1):
        facts = sentences[position]
        last = position == len(sentences) - 1
        limit = before if last and before is not None else len(facts.text)
        for value in reversed(facts.values):
            if value.end <= limit and same_name(kind_key(noun), value.key):
                return frozenset({value.key})
    return frozenset()


def _excerpt_title(title: str, text: str) -> bool:
    """Whether `title` is the opening of a text that has no title of its own: a raw text's
    first line, a sentence (possibly cut short with "…"), given as its title by ingest."""
    first = text.lstrip().split("\n", 1)[0].strip()
    stem = title.strip().rstrip("…").rstrip()
    is_sentence = title.strip()[-1:] in ".!?…"
    return (
        bool(stem) and is_sentence and not MARKDOWN_HEADER.match(first) and first.startswith(stem)
    )


def _subject_of(facts: SentenceFacts) -> Subject:
    """The names (and the dates beside them) of a sentence's subject phrase; of a name and its
    apposition ("Briar Books, the sister imprint of the Aster Press, is ..."), the name; none
    in a definite description's apposition."""
    if description_noun(facts) is not None:
        return _of_subject(facts)
    opening = [v for v in facts.values if in_subject(facts, v)]
    if not any(v.kind == "name" for v in opening):
        return _of_subject(facts)
    head = opening[0]
    lead = facts.text[subject_start(facts.text) : head.start].strip().lower()
    if head.kind == "name" and lead in ("", "the") and _APPOSITION.match(facts.text, head.end):
        return frozenset({head.key})
    return frozenset(v.key for v in opening if v.kind in ("name", "date"))


_APPOSITION = re.compile(r"\s*,\s+(?:the|an?|its|his|her|their)\s")


# "The headquarters of Nokia are ...", "The mother tongue of Danielle Darrieux is ...": an
# opening attribute phrase names what the sentence is about after its "of".
_OF_OPENING = re.compile(r"\W*(?i:the|a|an)\s+(?:[a-z][\w'’-]*\s+){1,4}?of\s+(?:the\s+)?")


def _of_subject(facts: SentenceFacts) -> Subject:
    """The name right after an opening "The <attribute> of" (empty without one)."""
    opening = _OF_OPENING.match(facts.text, subject_start(facts.text))
    if opening is None:
        return frozenset()
    for value in facts.values:
        if value.kind == "name" and opening.end() <= value.start <= opening.end() + 1:
            return frozenset({value.key})
    return frozenset()


@lru_cache(maxsize=65536)  # asked for every pair of sentences compared: subjects recur
def same_subject(first: Subject, second: Subject, strict: bool = False) -> bool:
    """Whether two subjects pick out one thing: every name of the smaller has a compatible
    name in the other (`strict`: the same name, or a surname of it), and where both carry
    dates they share one."""
    names_a = [k for k in first if k.startswith(("e:", "k:"))]
    names_b = [k for k in second if k.startswith(("e:", "k:"))]
    if not names_a or not names_b:
        return False
    small, large = (names_a, names_b) if len(names_a) <= len(names_b) else (names_b, names_a)
    match = same_name if strict else compatible_names
    if not all(any(match(a, b) for b in large) for a in small):
        return False
    dates_a = {k for k in first if k.startswith("d:")}
    dates_b = {k for k in second if k.startswith("d:")}
    if dates_a and dates_b:
        return any(dates_compatible(a, b) for a in dates_a for b in dates_b)
    return True
