"""One sentence read for what a contradiction turns on: its values, its frame (the stems of
its other content words), its cues (a replacement named, a change announced, a single role),
where its subject phrase starts and ends. What a text and its sentences are about is
`graph.subjects`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from memory_bank.graph.openings import PARTICIPLE, PARTICIPLE_OBJECTS
from memory_bank.graph.value_identity import names_nested, value_key_of
from memory_bank.graph.values import Value, extract_values
from memory_bank.text.cues import REPLACEMENT_CUES, UPDATE_CUES
from memory_bank.text.lexicon import search_tokens, stem_words

# "is the CEO of", "as the director of", "'s new president": a role only one holder fills.
_SINGLE_ROLE = re.compile(
    r"\b(?:is|was|became|becomes|remains|remained|as|named|appointed|elected)\s+"
    r"(?:now\s+|currently\s+|still\s+)?(?:the|its|their|his|her)\s+(?:new\s+|current\s+|sole\s+|only\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:of|for|at)\b|['’]s\s+(?:new\s+|current\s+)?(?:[\w-]+\s+){0,2}?(?:is|was)\b",
    re.IGNORECASE,
)
# Where a sentence's subject phrase ends: its first copula, auxiliary or past-tense verb.
_SUBJECT_END = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|will|would|can|could|may|might|shall|should|"
    r"must|became|becomes|remains|remained|[a-z]{3,}ed|(?!(?:its|this|was|has|his|hers|ours|"
    r"yours|theirs|always|perhaps|sometimes|besides|whereas|towards|afterwards|news|series|"
    r"species|class)\b)[a-z]{2,}[^s\W]s)\b"
)
# Sentences that open by referring back to what the text is about.
_REFERENCE_OPENING = re.compile(
    r"\W*(?:it|its|he|his|she|her|they|their|this|these|(?:the|a|an)\s+[a-z])", re.IGNORECASE
)


@dataclass(frozen=True)
class SentenceFacts:
    """One sentence read for values and frame (see the module docstring)."""

    text: str
    values: tuple[Value, ...]
    frame: frozenset[str]  # stems of the content words outside values
    replaces: bool  # a replacement cue: the sentence may name the value it replaces
    announces: bool  # an update cue
    single_role: bool  # "is the CEO of": only one holder
    subject_end: int  # where the subject phrase ends (its first copula or past-tense verb)
    # (it starts past a fronted clause: `subject_start`)
    refers_back: bool  # opens with a pronoun or a common noun: about what the text is about
    role_objects: frozenset[str]  # names a single role is of ("Acme" in "the CEO of Acme")

    def __hash__(self) -> int:
        # A key of the caches of what is read around its values, asked for every pair of
        # sentences compared: its text alone, not every field again (equal facts have equal
        # texts).
        return hash(self.text)

    @cached_property  # read for every pair of sentences compared; the values never change
    def keys(self) -> frozenset[str]:
        return frozenset(value.key for value in self.values)

    @cached_property
    def name_keys(self) -> tuple[str, ...]:
        return tuple(value.key for value in self.values if value.kind == "name")

    def holds(self, value: Value) -> bool:
        """Whether the sentence holds `value`, or the same name told longer or shorter ("Acme"
        and "Acme Corporation"); asked for every pair of sentences compared."""
        if value.key in self.keys:
            return True
        return value.kind == "name" and _holds_name(value.key, self.name_keys)


@lru_cache(maxsize=262144)
def _holds_name(key: str, names: tuple[str, ...]) -> bool:
    """Whether one of `names` is the name `key` told longer or shorter (`name_contains`)."""
    return any(names_nested(key, name) for name in names)


@lru_cache(maxsize=65536)
def sentence_facts(sentence: str) -> SentenceFacts:
    values = tuple(extract_values(sentence))
    outside = list(sentence)
    for value in values:
        outside[value.start : value.end] = " " * (value.end - value.start)
    words = "".join(outside)  # a cue is a word of the sentence, not of a name ("New Jersey")
    frame = frozenset(stem_words(search_tokens(words))) or _preposition_frame(sentence, values)
    role = _SINGLE_ROLE.search(sentence)
    return SentenceFacts(
        text=sentence,
        values=values,
        frame=frame,
        replaces=REPLACEMENT_CUES.search(words) is not None,
        announces=UPDATE_CUES.search(words) is not None,
        single_role=role is not None,
        subject_end=_subject_end(sentence),
        refers_back=_REFERENCE_OPENING.match(sentence, subject_start(sentence)) is not None,
        role_objects=_role_objects(sentence, values, role),
    )


# A phrase before the subject: "Built as a shipping office in 1911, the building ...",
# "Designed by Hanne Rolt, it opened ...", "In 1998, Tom Brady ...", or a clause
# ("When the mill closed, the village ...").
_FRONTED_PARTICIPLE = re.compile(
    rf"(?:{PARTICIPLE})\s+(?:{'|'.join(sorted(PARTICIPLE_OBJECTS))})\b"  # not "Alfred is"
)
_FRONTED_PHRASE = re.compile(
    r"(?:In|On|At|By|From|After|Before|During|Since|For|With|Under|Near|Like|Unlike|Despite)\s"
)
_FRONTED_CLAUSE = re.compile(r"(?:When|While|Whilst|Although|Though|Once|Until|If|Because|As)\s")
_COMMA = re.compile(r",\s+(?=\S)")


@lru_cache(maxsize=65536)
def subject_start(sentence: str) -> int:
    """Where a sentence's subject phrase starts: past a fronted phrase, if it opens with one --
    past the last comma before the first verb that follows a comma ("Headquartered in St
    Louis, Missouri at 3558 Jefferson Avenue, CPH publishes ..."). A prepositional phrase holds
    no verb of its own: "After the climb the route crosses the Orne on Tessaly, a green arch"
    opens with its subject's clause."""
    commas = [m.end() for m in _COMMA.finditer(sentence)]
    if not commas:
        return 0
    if _FRONTED_PARTICIPLE.match(sentence) is None and _FRONTED_CLAUSE.match(sentence) is None:
        if _FRONTED_PHRASE.match(sentence) is None:
            return 0
        if _SUBJECT_END.search(sentence, 0, commas[0]) is not None:
            return 0
    verb = _SUBJECT_END.search(sentence, commas[0])
    before = [end for end in commas if verb is None or end <= verb.start()]
    return before[-1] if before and before[-1] - commas[0] <= 120 else commas[0]


def _subject_end(sentence: str) -> int:
    """Where a sentence's subject phrase ends: its first verb past `subject_start`, or past an
    apposition between commas ("Lowick's parish church, dedicated to St Aubrin, was ...")."""
    start = subject_start(sentence)
    found = _SUBJECT_END.search(sentence, start)
    if found is None:
        return len(sentence)
    if sentence[start : found.start()].rstrip().endswith(","):
        closing = sentence.find(", ", found.start())
        after = _SUBJECT_END.search(sentence, closing) if closing > 0 else None
        if after is not None and after.start() == closing + 2:
            return after.start()
    return found.start()


def in_subject(facts: SentenceFacts, value: Value) -> bool:
    """Whether a value stands in the sentence's subject phrase."""
    return subject_start(facts.text) <= value.start < facts.subject_end


_COPULA = re.compile(r"\b(?:is|was|are|were)\s+(?:the|an?)\b", re.IGNORECASE)
_PREPOSITION_BEFORE = re.compile(r"\b(in|at|on|from|of|by|to|near|for)\s*$", re.IGNORECASE)


def _preposition_frame(sentence: str, values: tuple[Value, ...]) -> frozenset[str]:
    """The frame of a sentence with no content word of its own ("The Eiffel Tower is in
    Paris."): the prepositions that introduce its values ("@in")."""
    found = frozenset(
        f"@{match.group(1).lower()}"
        for value in values
        if (match := _PREPOSITION_BEFORE.search(sentence[max(0, value.start - 8) : value.start]))
    )
    # "Tostig Godwinson was the Earl of Mercia.": a copula between two names is the attribute
    return found or (frozenset({"@be"}) if _COPULA.search(sentence) else frozenset())


def _role_objects(
    sentence: str, values: tuple[Value, ...], role: re.Match[str] | None
) -> frozenset[str]:
    """The name a single role is of: "the CEO of Acme" -> Acme (right after the role)."""
    if role is None:
        return frozenset()
    for value in values:
        if value.kind == "name" and value.start >= role.end():
            between = search_tokens(sentence[role.end() : value.start])
            return frozenset({value.key}) if len(between) <= 1 else frozenset()
    return frozenset()


def same_frame(sentence: str, claim_sentence: str) -> bool:
    """Whether a sentence speaks of a claim's attribute: it shares a frame word with it."""
    a, b = sentence_facts(sentence.strip()), sentence_facts(claim_sentence.strip())
    return bool(a.frame & b.frame)


def mentions_value(sentence: str, value: str) -> bool:
    """Whether `sentence` states `value` (a value's surface text), as a value of its own."""
    key = value_key_of(value)
    if key is not None:
        return any(v.key == key for v in sentence_facts(sentence).values)
    # A common word ("cello"): as a word of its own, not inside another ("violoncello").
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", sentence.lower()) is not None
