"""Offline contradiction rules: when do two sentences give different values for the same thing?

A sentence's *values* are the spans a fact turns on: numbers (with their unit), dates and
years, and names (runs of capitalized words). Everything else that carries content is its
*frame*: the stems of its other words ("ceo", "mother tongue", "population", "born").

Two sentences, an earlier one and a later one, contradict each other when
- each holds exactly one value the other lacks, of the same kind (a name for a name, a year
  for a year, a number in the same unit class for a number) -- the old value and the new one;
  or the later one names the old value next to a replacement cue ("replaced", "no longer",
  "succeeded", "formerly", "instead of", "changed from", ...) and one new value of its kind;
- they share an anchor, the subject: another value both hold ("Acme"), or else the same frame
  word for word;
- their frames overlap: the attribute the values fill is the same (at least half of the
  smaller frame is shared; a third with an update cue such as "now" or "new");
- the value is not just who the sentence is about: when both differing values open their
  sentences ("Alice was born in Paris" / "Bob was born in Paris"), they are two subjects with
  one property, not one subject with two values -- unless the frame names a single role ("is
  the CEO of", "as the director of"), which only one holder fills.
A date that differs beside another differing value is a qualifier ("in 2019 ... 3.2 million",
"in 2021 ... 3.5 million"): two facts of their times, not a contradiction.

The rules read only the words; they hold on any English text and need no model.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from memory_bank.text.lexicon import FUNCTION_WORDS, MARKDOWN_HEADER, search_tokens, stem_words
from memory_bank.text.sentences import split_sentences

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_ABBREVIATIONS = {month[:3]: month for month in MONTHS} | {"sept": "september"}
_WEEKDAYS = frozenset(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
)
# Titles written in capitals that name a role, not someone: frame words, never values.
_ROLE_ACRONYMS = frozenset(
    ["ceo", "cfo", "cto", "coo", "cio", "cmo", "cso", "vp", "svp", "evp", "md", "mp", "mep", "gm"]
)
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
    if value >= 2  # "one" is a pronoun as often as a number
}
_SCALE = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "m": 1e6}
_MONTH_NAME = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_YEAR = r"(?:1[0-9]{3}|20[0-9]{2})"
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<m1>{_MONTH_NAME})(?:,?\s+(?P<y1>{_YEAR}))?"
    rf"|(?P<m2>{_MONTH_NAME})\s+(?:(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+)?(?P<y2>{_YEAR})"
    rf"|(?P<y3>{_YEAR})-(?P<mn>\d{{2}})-(?P<dn>\d{{2}})"
    rf"|(?P<y4>{_YEAR})(?![\d,.]\d))\b"
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<currency>[$€£¥])?(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|m)\b)?"
    r"(?:\s?(?P<percent>%|per ?cent\b))?",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_][\w'’.-]*[^\W_]|[^\W\d_]")
# Words that may join capitalized words into one name ("Bank of America", "Leonardo da Vinci").
_NAME_JOINERS = frozenset({"of", "de", "da", "del", "der", "di", "du", "van", "von", "la", "le"})
# Capitalized at a sentence's start by grammar, and not names there.
_NOT_NAMES = FUNCTION_WORDS | frozenset(
    [
        "according",
        "like",
        "unlike",
        "although",
        "despite",
        "following",
        "today",
        "yesterday",
        "tomorrow",
        "currently",
        "recently",
        "initially",
        "originally",
        "later",
        "earlier",
        "meanwhile",
        "now",
        "since",
        "while",
        "yes",
        "no",
        "the",
        "this",
        "that",
        "these",
        "those",
        "our",
        "their",
        "his",
        "her",
        "its",
        "in",
        "on",
        "at",
        "by",
        "for",
        "from",
        "with",
        "after",
        "before",
        "during",
    ]
)
# A later sentence that names the value it replaces.
_REPLACEMENT_CUES = re.compile(
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
    r"^\W*(?:it|its|he|his|she|her|they|their|this|these|(?:the|a|an)\s+[a-z])",
    re.IGNORECASE,
)
_ALIAS = re.compile(
    r"\b(?:known|called|nicknamed|referred to|dubbed|titled)\s+(?:as|by)?\b", re.IGNORECASE
)
_ARTICLES = re.compile(r"\s*(?:(?:the|a|an|names?)\s+)*\W*", re.IGNORECASE)
_PRONOUN_SUBJECT = re.compile(
    r"\b(?:it|he|she|they)\s+(?:is|was|are|were|has|had|became)\b", re.IGNORECASE
)
# Enumerations: values of one kind, this many, joined by commas and "and": a list, not a value.
MAX_VALUES_OF_A_KIND = 3
_LIST_GAP = re.compile(r"\s*(?:,|;|/)?\s*(?:(?:and|or|&)\s+)?")
MIN_FRAME_OVERLAP = 0.5
MIN_FRAME_OVERLAP_WITH_CUE = 0.34
# Sentences this close (all-MiniLM-L6-v2 cosine) say the same thing in other words.
PARAPHRASE_COSINE = 0.6


@dataclass(frozen=True)
class Value:
    """A span a fact turns on: its surface text, a normalized key, and its kind."""

    text: str
    key: str
    kind: str  # "name", "date", "number:<unit class>"
    start: int
    end: int


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
    refers_back: bool  # opens with a pronoun or a common noun: about what the text is about
    role_objects: frozenset[str]  # names a single role is of ("Acme" in "the CEO of Acme")

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(value.key for value in self.values)


@dataclass(frozen=True)
class Contradiction:
    """Two sentences giving different values for one subject and attribute."""

    old_sentence: str
    new_sentence: str
    subject: str  # the shared anchor(s), e.g. "Acme"
    attribute: str  # the shared frame words, e.g. "ceo"
    old_value: str
    new_value: str
    kind: str

    def describe(self) -> str:
        about = f"{self.attribute} of {self.subject}" if self.subject else self.attribute
        return f"{about}: {self.old_value!r} vs {self.new_value!r}"


def extract_values(sentence: str) -> list[Value]:
    """Dates, numbers and names of one sentence, left to right, non-overlapping."""
    values: list[Value] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in taken)

    for match in _DATE.finditer(sentence):
        key = _date_key(match)
        if key and free(match.start(), match.end()):
            values.append(Value(match.group(0), key, "date", match.start(), match.end()))
            taken.append((match.start(), match.end()))
    for start, end in _numbered_names(sentence):
        if free(start, end):
            text = sentence[start:end]
            values.append(Value(text, "e:" + _name_key(text), "name", start, end))
            taken.append((start, end))
    for match in _NUMBER.finditer(sentence):
        start, end = match.start(), match.end()
        if not free(start, end):
            continue
        number = float(match.group("number").replace(",", ""))
        scale = (match.group("scale") or "").lower()
        number *= _SCALE.get(scale, 1.0)
        unit = _unit_after(sentence, end)
        if match.group("percent"):
            unit = "percent"
        elif match.group("currency"):
            unit = "money"
        values.append(Value(match.group(0), f"n:{number:g}", f"number:{unit}", start, end))
        taken.append((start, end))
    for match in _WORD.finditer(sentence):
        word = match.group(0).lower()
        if word in _NUMBER_WORDS and free(match.start(), match.end()):
            unit = _unit_after(sentence, match.end())
            if _CAPITALIZED_NEXT.match(sentence, match.end()):
                continue  # "Nine Inch Nails", "Two Dollar Radio": a name
            if unit:  # "three members", not "the three of them"
                key = f"n:{_NUMBER_WORDS[word]:g}"
                values.append(
                    Value(match.group(0), key, f"number:{unit}", match.start(), match.end())
                )
                taken.append((match.start(), match.end()))
    for match in _WORD.finditer(sentence):
        if match.group(0).lower() in _WEEKDAYS and free(match.start(), match.end()):
            key = "w:" + match.group(0).lower()
            values.append(Value(match.group(0), key, "weekday", match.start(), match.end()))
            taken.append((match.start(), match.end()))
    for start, end in _joined(sentence, [s for s in _name_spans(sentence) if free(*s)]):
        text = sentence[start:end]
        place = re.fullmatch(r"(.+?),\s*(.+)", text)  # "Young, New South Wales"
        key = f"{_name_key(place[1])}|{_name_key(place[2])}" if place else _name_key(text)
        values.append(Value(text, "e:" + key, "name", start, end))
        taken.append((start, end))
    return sorted(values, key=lambda value: value.start)


_PAIR_GAP = re.compile(r",\s*|\s+and\s+|\s*&\s*")
_AND_GAP = re.compile(r"\s+(?:and|&)\s+")


def _joined(sentence: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Two names that make one value: a place and its region ("Columbus, Ohio") or a pair
    ("Steely and Clevie"). Only two: a third name joined the same way makes a list."""
    joined: list[tuple[int, int]] = []
    position = 0
    while position < len(spans):
        start, end = spans[position]
        if position + 1 < len(spans):
            next_start, next_end = spans[position + 1]
            gap = sentence[end:next_start]
            third = spans[position + 2] if position + 2 < len(spans) else None
            continues = third is not None and _PAIR_GAP.fullmatch(sentence[next_end : third[0]])
            # "New York City and Little Rock, Arkansas": after an "and", a comma joins a
            # place to its region (a list puts its commas before the "and").
            region = (
                gap.strip() == ","
                and position > 0
                and _AND_GAP.fullmatch(sentence[spans[position - 1][1] : start]) is not None
            )
            if (
                _PAIR_GAP.fullmatch(gap)
                and not continues
                and (region or not _starts_list(sentence, start, spans[:position]))
            ):
                joined.append((start, next_end))
                position += 2
                continue
        joined.append((start, end))
        position += 1
    return joined


def _starts_list(sentence: str, start: int, before: list[tuple[int, int]]) -> bool:
    """Whether the name at `start` continues a list begun by an earlier name."""
    return bool(before) and _PAIR_GAP.fullmatch(sentence[before[-1][1] : start]) is not None


@lru_cache(maxsize=65536)
def sentence_facts(sentence: str) -> SentenceFacts:
    values = tuple(extract_values(sentence))
    outside = list(sentence)
    for value in values:
        outside[value.start : value.end] = " " * (value.end - value.start)
    words = "".join(outside)  # a cue is a word of the sentence, not of a name ("New Jersey")
    frame = frozenset(stem_words(search_tokens(words))) or _preposition_frame(sentence, values)
    role = _SINGLE_ROLE.search(sentence)
    subject_end = _SUBJECT_END.search(sentence)
    return SentenceFacts(
        text=sentence,
        values=values,
        frame=frame,
        replaces=_REPLACEMENT_CUES.search(words) is not None,
        announces=_UPDATE_CUES.search(words) is not None,
        single_role=role is not None,
        subject_end=subject_end.start() if subject_end else len(sentence),
        refers_back=_REFERENCE_OPENING.match(sentence) is not None,
        role_objects=_role_objects(sentence, values, role),
    )


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
    election"); sentences that refer back ("It was held on ...") are about it."""

    principal: Subject
    sentences: tuple[SentenceFacts, ...]

    def about(self, facts: SentenceFacts) -> list[Subject]:
        """What a sentence is about: its own subject phrase's names and dates, the principal
        subject when it names it or refers back, the organization of a single role."""
        subjects: list[Subject] = [frozenset({key}) for key in facts.role_objects]
        names = [v.key for v in facts.values if v.kind == "name"]
        principal_names = [k for k in self.principal if k.startswith("e:")]
        own = _subject_of(facts) if not facts.refers_back else _of_subject(facts)
        pronoun = not own and _PRONOUN_SUBJECT.search(facts.text) is not None
        if self.principal and (
            facts.refers_back
            or pronoun
            or any(_compatible(n, p) for n in names for p in principal_names)
        ):
            subjects.append(self.principal)
        if own:
            subjects.append(own)
        return subjects


def text_facts(text: str, title: str | None = None) -> TextFacts:
    """The facts of every sentence of `text` that holds a value and a frame."""
    sentences = [
        sentence_facts(sentence)
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
        principal = _subject_of(sentences[0])
    kept = tuple(fact for fact in sentences if fact.values and fact.frame)
    return TextFacts(principal, kept)


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
    """The names (and the dates beside them) of a sentence's subject phrase."""
    opening = [v for v in facts.values if v.start < facts.subject_end]
    if not any(v.kind == "name" for v in opening):
        return _of_subject(facts)
    return frozenset(v.key for v in opening if v.kind in ("name", "date"))


# "The headquarters of Nokia are ...", "The mother tongue of Danielle Darrieux is ...": an
# opening attribute phrase names what the sentence is about after its "of".
_OF_OPENING = re.compile(r"\W*(?i:the|a|an)\s+(?:[a-z][\w'’-]*\s+){1,4}?of\s+(?:the\s+)?")


def _of_subject(facts: SentenceFacts) -> Subject:
    """The name right after an opening "The <attribute> of" (empty without one)."""
    opening = _OF_OPENING.match(facts.text)
    if opening is None:
        return frozenset()
    for value in facts.values:
        if value.kind == "name" and opening.end() <= value.start <= opening.end() + 1:
            return frozenset({value.key})
    return frozenset()


def same_subject(first: Subject, second: Subject, strict: bool = False) -> bool:
    """Whether two subjects pick out one thing: every name of the smaller has a compatible
    name in the other (`strict`: the same name, or a surname of it), and where both carry
    dates they share one."""
    names_a = [k for k in first if k.startswith("e:")]
    names_b = [k for k in second if k.startswith("e:")]
    if not names_a or not names_b:
        return False
    small, large = (names_a, names_b) if len(names_a) <= len(names_b) else (names_b, names_a)
    match = _same_name if strict else _compatible
    if not all(any(match(a, b) for b in large) for a in small):
        return False
    dates_a = {k for k in first if k.startswith("d:")}
    dates_b = {k for k in second if k.startswith("d:")}
    if dates_a and dates_b:
        return any(_dates_compatible(a, b) for a in dates_a for b in dates_b)
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


def find_contradiction(
    old: SentenceFacts,
    new: SentenceFacts,
    cosine: float | None = None,
    old_about: list[Subject] | None = None,
    new_about: list[Subject] | None = None,
) -> Contradiction | None:
    """The contradiction between an earlier and a later sentence, if the rules find one.
    `cosine` (of the two sentences' embeddings, when the caller has them) stands in for a
    shared frame when the later sentence words the attribute differently ("chief executive"
    for "CEO"). `old_about` / `new_about`: what each sentence is about (`TextFacts.about`);
    without them a shared value must anchor the two sentences instead."""
    if not old.values or not new.values:
        return None
    # Other words for the attribute count only in a sentence that announces a change.
    paraphrase = (
        cosine is not None and cosine >= PARAPHRASE_COSINE and (new.announces or new.replaces)
    )
    subject_names = _matched_subject_names(old_about, new_about)
    candidates_old = [v for v in old.values if not _is_subject(v, subject_names)]
    candidates_new = [v for v in new.values if not _is_subject(v, subject_names)]
    old_only = _distinct([v for v in candidates_old if not _present(v, new.values)])
    new_only = _distinct([v for v in candidates_new if not _present(v, old.values)])
    pair = _value_pair(old, new, old_only, new_only)
    if pair is None and new.replaces:
        # "Bob replaced Alice as CEO of Acme": the old value is named in the later sentence.
        named = [v for v in candidates_old if _present(v, new.values)]
        pair = _replaced_pair(new, named, new_only)
    if pair is None:
        return None
    old_value, new_value = pair
    if _aliased(old, old_value) or _aliased(new, new_value):
        return None  # "also known as": names have aliases, not one value
    if _in_list(old, old_value) or _in_list(new, new_value):
        return None  # an enumeration ("starring A, B and C") lists values, it assigns none
    if _clause_date(old, old_value, old_only) and _clause_date(new, new_value, new_only):
        return None  # "in 2019 ... 3.2 million" / "in 2021 ... 3.5 million": facts of their times
    differing = {old_value.key, new_value.key}
    knows_subjects = old_about is not None and new_about is not None
    # Both sentences must be about one subject (what stays of it without the values).
    anchors = sorted(
        {v.text for v in old.values if v.key in new.keys and v.key not in differing},
        key=str.lower,
    )
    # Without a shared value, the subjects must match name for name, not just overlap.
    if knows_subjects and not any(
        same_subject(a - differing, b - differing, strict=not anchors)
        for a in old_about
        for b in new_about
    ):
        return None
    shared = old.frame & new.frame
    local = _local_frame(old, old_value) & _local_frame(new, new_value)
    threshold = MIN_FRAME_OVERLAP_WITH_CUE if new.announces or new.replaces else MIN_FRAME_OVERLAP
    # The attribute: the words next to the values must match; the sentences' words as a
    # whole may stand in for them only when the later one announces a change.
    local_overlap = _overlap(_local_frame(old, old_value), _local_frame(new, new_value))
    same_predicate = bool(_predicate(old, old_value) & _predicate(new, new_value)) or (
        old.frame == new.frame and all(word.startswith("@") for word in old.frame)
    )  # "is in Paris" / "is in Rome": the preposition is all the attribute there is
    cued = new.announces or new.replaces
    if (
        not paraphrase
        and not same_predicate
        and local_overlap < threshold
        and not (cued and _overlap(old.frame, new.frame) >= threshold)
    ):
        return None
    if not knows_subjects and not anchors and (old.frame != new.frame or len(shared) < 2):
        return None
    in_subjects = old_value.start < old.subject_end and new_value.start < new.subject_end
    if in_subjects and not (old.single_role and new.single_role):
        return None  # two subjects with one property ("Alice was born in Paris" / "Bob ...")
    subject = ", ".join(anchors) or ", ".join(sorted(n[2:] for n in subject_names))
    return Contradiction(
        old_sentence=old.text,
        new_sentence=new.text,
        subject=subject,
        attribute=" ".join(sorted(local or shared)) or "(paraphrased)",
        old_value=old_value.text,
        new_value=new_value.text,
        kind=old_value.kind,
    )


def _overlap(first: frozenset[str], second: frozenset[str]) -> float:
    if not first or not second:
        return 0.0
    return len(first & second) / min(len(first), len(second))


def _matched_subject_names(
    old_about: list[Subject] | None, new_about: list[Subject] | None
) -> set[str]:
    """The names of the subjects both sentences are about (they are not values)."""
    names: set[str] = set()
    for a in old_about or []:
        for b in new_about or []:
            if same_subject(a, b):
                names |= {key for key in a | b if key.startswith("e:")}
    return names


def _is_subject(value: Value, subject_names: set[str]) -> bool:
    """A name the sentence is about ("Charmed" in "Charmed was broadcast by UPN") is not a value."""
    return value.kind == "name" and any(_same_name(value.key, name) for name in subject_names)


def _aliased(facts: SentenceFacts, value: Value) -> bool:
    """ "also known as X": the words right before the value introduce an alias."""
    return _ALIAS.search(facts.text[max(0, value.start - 40) : value.start] + "\x00") is not None


def _clause_date(facts: SentenceFacts, value: Value, differing: list[Value]) -> bool:
    """Whether another differing value in the value's own clause is a date (its qualifier)."""
    start, end = _clause_bounds(facts.text, value)
    return any(
        v.kind == "date" and v.key != value.key and start <= v.start and v.end <= end
        for v in differing
    )


def _clause_bounds(text: str, value: Value) -> tuple[int, int]:
    left = max((text.rfind(mark, 0, value.start) for mark in ",;:()–—"), default=-1)
    rights = [text.find(mark, value.end) for mark in ",;:()–—"]
    right = min((r for r in rights if r >= 0), default=len(text))
    return left + 1, right


def _local_frame(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The content words next to a value (five before, two after, other values skipped): the
    attribute it fills. A lifespan "(1 July 1903 – 5 January 1941)" says born and died."""
    before = _outside_values(facts, 0, value.start)
    after = _outside_values(facts, value.end, len(facts.text))
    words = set(stem_words(search_tokens(before)[-5:] + search_tokens(after)[:2]))
    if value.kind == "date" and _LIFESPAN.search(facts.text):
        words |= {"born", "die"}
    return frozenset(words)


def _outside_values(facts: SentenceFacts, start: int, end: int) -> str:
    text = list(facts.text[start:end])
    for other in facts.values:
        if other.end > start and other.start < end:
            for i in range(max(other.start, start), min(other.end, end)):
                text[i - start] = " "
    return "".join(text)


_LIFESPAN = re.compile(r"\([^()]*\d{3,4}\s*[–—-]\s*[^()]*\d{3,4}\s*\)")


def find_contradictions(
    old: TextFacts,
    new: TextFacts,
    limit: int = 8,
    cosine: Callable[[str, str], float | None] | None = None,
) -> list[Contradiction]:
    """Every contradiction between sentences of an earlier text and of a later one.
    `cosine(old sentence, new sentence)` gives their embeddings' cosine, where known; it is
    asked only for sentences that share a value."""
    found: list[Contradiction] = []
    for later in new.sentences:
        later_about = new.about(later)
        if not later_about:
            continue
        for earlier in old.sentences:
            if not (earlier.keys & later.keys) and not (earlier.frame & later.frame):
                continue
            similarity = None
            if cosine is not None and earlier.keys & later.keys:
                similarity = cosine(earlier.text, later.text)
            contradiction = find_contradiction(
                earlier, later, similarity, old.about(earlier), later_about
            )
            if contradiction is not None and all(
                (c.old_sentence, c.new_sentence)
                != (contradiction.old_sentence, contradiction.new_sentence)
                for c in found
            ):
                found.append(contradiction)
                if len(found) >= limit:
                    return found
    return found


def value_context(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The words a value is said with: its predicate and the content words before it."""
    return _predicate(facts, value) | _left_context(facts, value)


def assigns(facts: SentenceFacts, value: Value) -> bool:
    """Whether the sentence gives `value` as a value: not an alias ("also known as") and not
    one of an enumeration ("starring A, B and C")."""
    aliased = value.kind == "name" and _aliased(facts, value)  # a date has no alias
    return not (aliased or _in_list(facts, value))


def same_frame(sentence: str, claim_sentence: str) -> bool:
    """Whether a sentence speaks of a claim's attribute: it shares a frame word with it."""
    a, b = sentence_facts(sentence.strip()), sentence_facts(claim_sentence.strip())
    return bool(a.frame & b.frame)


def mentions_value(sentence: str, value: str) -> bool:
    """Whether `sentence` states `value` (a value's surface text), as a value of its own."""
    key = _value_key_of(value)
    if key is not None:
        return any(v.key == key for v in sentence_facts(sentence).values)
    # A common word ("cello"): as a word of its own, not inside another ("violoncello").
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", sentence.lower()) is not None


# --- helpers --------------------------------------------------------------------------------


def _value_key_of(text: str) -> str | None:
    values = extract_values(text)
    return values[0].key if len(values) == 1 else None


def _distinct(values: list[Value]) -> list[Value]:
    seen: dict[str, Value] = {}
    for value in values:
        seen.setdefault(value.key, value)
    return list(seen.values())


def _value_pair(
    old: SentenceFacts, new: SentenceFacts, old_values: list[Value], new_values: list[Value]
) -> tuple[Value, Value] | None:
    """The (old, new) pair of one kind that the sentences differ in; None when there is none
    or it stays ambiguous. Of several candidates of a kind ("born June 13, 1877 - November 5,
    1946"), the one whose neighbouring words match the other side's is taken; of pairs of
    several kinds, the one whose values share their predicate ("formed in 1993" / "formed in
    1992")."""
    pairs = []
    for kind in {value.kind for value in new_values}:
        news = [v for v in new_values if v.kind == kind]
        olds = [v for v in old_values if _same_kind(v.kind, kind)]
        if not olds:
            continue
        if len(news) > 1 and len(olds) == 1:
            news = _best_by_context(new, news, old, olds[0])
        elif len(news) > 1 and (new.announces or new.replaces):
            # Several candidates on both sides: only a sentence announcing a change is read
            # for which of them it changes.
            olds, news = _pair_by_context(old, olds, new, news)
        if len(news) != 1:
            continue
        if len(olds) > 1:
            olds = _best_by_context(old, olds, new, news[0])
        if len(olds) == 1:
            pairs.append((olds[0], news[0]))
    pairs = [
        (a, b) for a, b in pairs if not (_name_contains(a, b) or _dates_compatible(a.key, b.key))
    ]
    if len(pairs) > 1:
        # The pair sharing its predicate, then the pair of like values (a corrected date
        # keeps its day and month).
        scored = [
            (len(_predicate(old, a) & _predicate(new, b)) + _date_parts_shared(a.key, b.key), a, b)
            for a, b in pairs
        ]
        best = max(score for score, _, _ in scored)
        pairs = [(a, b) for score, a, b in scored if score == best and best > 0]
    return pairs[0] if len(pairs) == 1 else None


def _predicate(facts: SentenceFacts, value: Value) -> frozenset[str]:
    """The two content words nearest before a value (its predicate: "formed in", "born on");
    the dates of a lifespan "(1 July 1903 - 5 January 1941)" are born and died."""
    lifespan = _LIFESPAN.search(facts.text)
    if value.kind == "date" and lifespan and lifespan.start() <= value.start < lifespan.end():
        dates = [
            v
            for v in facts.values
            if v.kind == "date" and lifespan.start() <= v.start < lifespan.end()
        ]
        return frozenset({"born"} if dates and dates[0] is value else {"die"})
    before = search_tokens(_outside_values(facts, 0, value.start))[-2:]
    return frozenset(stem_words(before))


def _replaced_pair(
    new: SentenceFacts, named: list[Value], new_only: list[Value]
) -> tuple[Value, Value] | None:
    """In a replacement sentence, the named old value nearest the cue ("replaced Alice",
    "Alice was succeeded by") and the one new value of its kind."""
    cue = _REPLACEMENT_CUES.search(new.text)
    if cue is None:
        return None
    best: tuple[int, Value, Value] | None = None
    for old_value in named:
        news = [v for v in new_only if _same_kind(old_value.kind, v.kind)]
        mention = next(
            (
                v
                for v in new.values
                if v.key == old_value.key
                or (v.kind == "name" == old_value.kind and _name_contains(v, old_value))
            ),
            None,
        )
        if len(news) != 1 or mention is None:
            continue
        distance = min(abs(mention.start - cue.end()), abs(cue.start() - mention.end))
        if best is None or distance < best[0]:
            best = (distance, old_value, news[0])
    if best is None or _name_contains(best[1], best[2]):
        return None
    return best[1], best[2]


def _left_context(facts: SentenceFacts, value: Value, words: int = 3) -> frozenset[str]:
    """The content words before a value, back to the previous value of its kind."""
    start = max(
        (v.end for v in facts.values if v.kind == value.kind and v.end <= value.start), default=0
    )
    before = search_tokens(_outside_values(facts, start, value.start))[-words:]
    return frozenset(stem_words(before))


def _best_by_context(
    facts: SentenceFacts, values: list[Value], new: SentenceFacts, new_value: Value
) -> list[Value]:
    """Of several candidate old values, those whose preceding words match the new value's;
    for dates, those sharing a part with the new date (a corrected year keeps day and month)."""
    context = _left_context(new, new_value)
    scores = [len(_left_context(facts, value) & context) for value in values]
    if new_value.kind == "date":
        scores = [
            score + 2 * _date_parts_shared(v.key, new_value.key)
            for v, score in zip(values, scores, strict=True)
        ]
    best = max(scores)
    chosen = [v for v, score in zip(values, scores, strict=True) if score == best]
    return chosen if best > 0 else values


def _pair_by_context(
    old: SentenceFacts, olds: list[Value], new: SentenceFacts, news: list[Value]
) -> tuple[list[Value], list[Value]]:
    """Of several values on both sides, the one pair whose preceding words match ("franchise
    based in Philadelphia, Pennsylvania" / "now based in Camden, New Jersey"); all of them
    when no single pair does."""
    scored = [
        (len(_left_context(old, a) & _left_context(new, b)), a, b) for a in olds for b in news
    ]
    best = max(score for score, _, _ in scored)
    top = [(a, b) for score, a, b in scored if score == best]
    if best > 0 and len(top) == 1:
        return [top[0][0]], [top[0][1]]
    return olds, news


def _date_parts_shared(first: str, second: str) -> int:
    if not (first.startswith("d:") and second.startswith("d:")):
        return 0
    a, b = first[2:].split("-"), second[2:].split("-")
    return sum(1 for x, y in zip(a, b, strict=False) if x == y and x.strip("-"))


def _same_kind(first: str, second: str) -> bool:
    if first == second:
        return True
    # A bare number and a number with a unit may be the same quantity ("12" vs "12 members").
    return (
        first.startswith("number:")
        and second.startswith("number:")
        and ""
        in (
            first.split(":", 1)[1],
            second.split(":", 1)[1],
        )
    )


def _name_contains(first: Value, second: Value) -> bool:
    """ "Bob Smith" and "Smith" name the same person: not two values."""
    if first.kind != "name":
        return False
    a = set(first.key[2:].replace("|", " ").split())
    b = set(second.key[2:].replace("|", " ").split())
    return a <= b or b <= a


def _present(value: Value, others: tuple[Value, ...]) -> bool:
    """Whether `others` hold `value`, or the same name told longer or shorter ("Acme" and
    "Acme Corporation")."""
    return any(
        other.key == value.key
        or (value.kind == "name" == other.kind and _name_contains(value, other))
        for other in others
    )


def _dates_compatible(first: str, second: str) -> bool:
    """ "June 2017" and "June 16, 2017": one date told more or less precisely."""
    if not (first.startswith("d:") and second.startswith("d:")):
        return False
    return first.startswith(second) or second.startswith(first)


def _in_list(facts: SentenceFacts, value: Value) -> bool:
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


def _same_name(first: str, second: str) -> bool:
    """Equal name keys, or one the other's last words ("e:weizman", "e:ezer weizman"), or a
    place named without its region ("e:young", "e:young|new south wales")."""
    if first == second:
        return True
    if "|" in first or "|" in second:
        return _same_name(first.split("|")[0], second.split("|")[0])
    a, b = first[2:].split(), second[2:].split()
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return bool(short) and long[-len(short) :] == short and (len(short) > 1 or len(long) <= 3)


def _compatible(first: str, second: str) -> bool:
    """Two name keys for one entity: equal, or one's words within the other's ("e:stella",
    "e:joseph stella")."""
    if first == second:
        return True
    if "|" in first or "|" in second:
        return _compatible(first.split("|")[0], second.split("|")[0]) or _compatible(
            first.replace("|", " "), second.replace("|", " ")
        )
    if not (first.startswith("e:") and second.startswith("e:")):
        return False
    a, b = set(first[2:].replace("|", " ").split()), set(second[2:].replace("|", " ").split())
    return bool(a and b) and (a <= b or b <= a)


def _unit_after(sentence: str, end: int) -> str:
    match = re.match(r"\s*([A-Za-z][a-z]+)", sentence[end:])
    if not match:
        return ""
    word = match.group(1).lower()
    if word in FUNCTION_WORDS or word in MONTHS or word in _SCALE:
        return ""
    return stem_words([word])[0]


def _date_key(match: re.Match[str]) -> str | None:
    groups = match.groupdict()
    year = groups["y1"] or groups["y2"] or groups["y3"] or groups["y4"]
    month_text = groups["m1"] or groups["m2"]
    day = groups["d1"] or groups["d2"] or groups["dn"]
    month = None
    if month_text:
        month = MONTHS.index(_MONTH_ABBREVIATIONS[month_text.lower().rstrip(".")[:3]]) + 1
    elif groups["mn"]:
        month = int(groups["mn"])
    if month_text and not year and not day:
        return None
    if groups["m2"] and not day and not year:
        return None
    if groups["m1"] and not year:  # "5 May": a day of some year
        return f"d:--{month:02d}-{int(day):02d}"
    parts = [year or "----"]
    if month:
        parts.append(f"{month:02d}")
        if day:
            parts.append(f"{int(day):02d}")
    return "d:" + "-".join(parts)


def _name_spans(sentence: str) -> list[tuple[int, int]]:
    """Runs of capitalized words (joined by "of", "de", ...), minus grammar's capitals."""
    words = list(_WORD.finditer(sentence))
    spans: list[tuple[int, int]] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group(0).lower() in _NAME_JOINERS:
            run.pop()
        if run:
            spans.append((run[0].start(), run[-1].end()))
        run.clear()

    for position, match in enumerate(words):
        word = match.group(0)
        lower = word.lower().rstrip(".")
        capitalized = word[0].isupper() and lower not in _ROLE_ACRONYMS
        gap = sentence[run[-1].end() : match.start()] if run else " "
        if run and (gap not in (" ", "-") or _POSSESSIVE.search(run[-1].group(0))):
            close()
        if capitalized and lower not in MONTHS and lower not in _WEEKDAYS:
            if lower in _MONTH_ABBREVIATIONS and len(lower) <= 4:
                close()
                continue
            opening = position == 0 or _opens_clause(sentence, match.start())
            numbered = lower in _NUMBER_WORDS and _CAPITALIZED_NEXT.match(sentence, match.end())
            if (
                opening
                and not run
                and not numbered  # "Nine Inch Nails", "Two Dollar Radio"
                and (lower in _NOT_NAMES or _common_opening(sentence, words, position))
            ):
                continue
            run.append(match)
        elif run and lower in _NAME_JOINERS:
            run.append(match)
        else:
            close()
    close()
    return [(start, _strip_possessive(sentence, start, end)) for start, end in spans]


_CAPITALIZED_NEXT = re.compile(r"\s+[A-Z]")
_NUMBERED_NAME = re.compile(r"\b(?:[A-Z][\w-]*\s+)*[A-Z][A-Z\w-]*\s+\d{1,3}(?![\d,.]\d|\w)")


def _numbered_names(sentence: str) -> list[tuple[int, int]]:
    """Names that end in a model number ("HD 21", "Apollo 11", "Boeing 747")."""
    spans = []
    for match in _NUMBERED_NAME.finditer(sentence):
        first = match.group(0).split()[0]
        if first.lower() not in _NOT_NAMES and first.lower() not in MONTHS:
            spans.append((match.start(), match.end()))
    return spans


_POSSESSIVE = re.compile(r"['’]s$")
# What follows a sentence-opening name: a verb, a comma, a possessive ("Alice is", "Penn
# recorded", "Bob, ..."). A capitalized opening word followed by a common word is grammar's
# capital ("Club historians have ...", "Archival records show ...").
_NAME_FOLLOWER = re.compile(
    r"(?:is|are|was|were|has|have|had|will|would|can|could|may|might|must|should|said|says|"
    r"became|becomes|remains|joined|left|took|won|made|[a-z]+ed|[a-z]+s|[a-z]{3,}ly)$"
)


def _common_opening(sentence: str, words: list[re.Match[str]], position: int) -> bool:
    word = words[position].group(0)
    if word.isupper() or _POSSESSIVE.search(word) or position + 1 >= len(words):
        return False
    following = words[position + 1]
    gap = sentence[words[position].end() : following.start()]
    if gap.strip() or following.group(0)[0].isupper():
        return False  # "Bob, the CEO", "Alice Moreno": a name
    return _NAME_FOLLOWER.fullmatch(following.group(0)) is None


def _opens_clause(sentence: str, start: int) -> bool:
    before = sentence[:start].rstrip()
    return not before or before[-1] in '.:;!?"“(–—-'


def _strip_possessive(sentence: str, start: int, end: int) -> int:
    text = sentence[start:end]
    for suffix in ("'s", "’s"):
        if text.endswith(suffix):
            return end - len(suffix)
    return end


def _name_key(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode() or text
    folded = _POSSESSIVE.sub("", folded.replace("’", "'"))
    words = [w.lower().strip(".,") for w in re.split(r"[\s,&]+|\band\b", folded) if w.strip(".,")]
    return " ".join(w for w in words if w not in _NAME_JOINERS and w != "the")
