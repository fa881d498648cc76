"""One sentence read for what a contradiction turns on: its values, its frame (the stems of
its other content words), its cues (a replacement named, a change announced, a single role),
where its subject phrase ends; and a text's principal subject, which sentences referring back
("It was ...") are about."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

from memory_bank.graph.value_identity import (
    compatible_names,
    dates_compatible,
    kind_key,
    names_nested,
    same_name,
    value_key_of,
)
from memory_bank.graph.values import PARTICIPLE, PARTICIPLE_OBJECTS, Value, extract_values
from memory_bank.text.lexicon import MARKDOWN_HEADER, search_tokens, stem_words
from memory_bank.text.sentences import split_sentences

# A later sentence that names the value it replaces.
REPLACEMENT_CUES = re.compile(
    r"\b(?:replac(?:ed|es|ing)|succeed(?:ed|s)?|successor|took over|takes over|no longer|"
    r"formerly|previously|former|instead of|rather than|changed? from|switched from|"
    r"moved from|renamed|not\b[^.;]*\bbut\b|used to|earlier (?:reports?|records?)|"
    r"(?:,|;|\(|—|–)\s*not\b|\bnot\s+(?:as|like)\b)",
    re.IGNORECASE,
)
# A later sentence that announces a change without naming what it replaces.
_UPDATE_CUES = re.compile(
    r"\b(?:now|new|newly|current(?:ly)?|latest|updated?|as of|has become|became|becomes|"
    r"appointed|elected|named|moved|relocated|changed|switched|corrected|correction|revised|"
    r"actually|in fact|took office|stepped down|resigned|retired|since)\b",
    re.IGNORECASE,
)
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
    r"\W*(?:it|its|he|his|she|her|they|their|this|these|(?:the|a|an)\s+[a-z])",
    re.IGNORECASE,
)
_PRONOUN_SUBJECT = re.compile(
    r"\b(?:it|he|she|they)\s+(?:is|was|are|were|has|had|became)\b", re.IGNORECASE
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
        announces=_UPDATE_CUES.search(words) is not None,
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
        subjects += [subject for text, subject in self.qualified if text == facts.text]
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
    if all_sentences:
        return TextFacts(principal, tuple(sentences), described, qualified)
    kept = tuple(fact for fact in sentences if fact.values and fact.frame)
    return TextFacts(principal, kept, described, qualified)


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


def _words(key: str) -> list[str]:
    return key[2:].replace("|", " ").split()


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
            if value.end <= limit and value.key.startswith("e:") and noun in _words(value.key):
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
