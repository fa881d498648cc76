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

from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from memory_bank.graph.sentence_facts import SentenceFacts, in_subject, sentence_facts
from memory_bank.graph.sentence_pairs import subject_pairs
from memory_bank.graph.subjects import Subject, TextFacts, same_subject
from memory_bank.graph.value_context import (
    clause_date,
    in_list,
    left_context,
    local_frame,
    modifies_noun,
    named_as_alias,
    predicate_of,
    value_context,
)
from memory_bank.graph.value_identity import (
    date_parts_shared,
    dates_compatible,
    distinct_values,
    name_contains,
    same_kind,
    same_name,
)
from memory_bank.graph.values import Value
from memory_bank.text.cues import REPLACEMENT_CUES

MIN_FRAME_OVERLAP = 0.5
MIN_FRAME_OVERLAP_WITH_CUE = 0.34
# Sentences this close (all-MiniLM-L6-v2 cosine) say the same thing in other words.
PARAPHRASE_COSINE = 0.6


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
    # A change needs a value the later sentence holds and the earlier one lacks, and one the
    # earlier holds and the later lacks (or names as replaced): most pairs compared repeat all
    # their values one way or the other, and are done here.
    # (Equal keys settle most of them at once; `holds` also matches names told longer.)
    if new.keys <= old.keys or all(old.holds(v) for v in new.values):
        return None
    if not new.replaces and (old.keys <= new.keys or all(new.holds(v) for v in old.values)):
        return None
    cued = new.announces or new.replaces
    # Other words for the attribute count only in a sentence that announces a change.
    paraphrase = cosine is not None and cosine >= PARAPHRASE_COSINE and cued
    subject_names = _matched_subject_names(old_about, new_about)
    candidates_old = [v for v in old.values if not _is_subject(v, subject_names)]
    candidates_new = [v for v in new.values if not _is_subject(v, subject_names)]
    old_only = distinct_values([v for v in candidates_old if not new.holds(v)])
    new_only = distinct_values([v for v in candidates_new if not old.holds(v)])
    # A name qualifying a noun ("an American actress", "the Gambino crime family") is a value
    # only against another such name: a nationality is no birthplace, no employer.
    pair = _value_pair(
        old,
        new,
        [v for v in old_only if not modifies_noun(old, v)],
        [v for v in new_only if not modifies_noun(new, v)],
    ) or _value_pair(
        old,
        new,
        [v for v in old_only if modifies_noun(old, v)],
        [v for v in new_only if modifies_noun(new, v)],
    )
    if pair is None and new.replaces:
        # "Bob replaced Alice as CEO of Acme": the old value is named in the later sentence.
        named = [v for v in candidates_old if new.holds(v)]
        pair = _replaced_pair(new, named, new_only)
    if pair is None:
        return None
    old_value, new_value = pair
    if named_as_alias(old, old_value) or named_as_alias(new, new_value):
        return None  # "also known as": names have aliases, not one value
    if in_list(old, old_value) or in_list(new, new_value):
        return None  # an enumeration ("starring A, B and C") lists values, it assigns none
    if clause_date(old, old_value, old_only) and clause_date(new, new_value, new_only):
        return None  # "in 2019 ... 3.2 million" / "in 2021 ... 3.5 million": facts of their times
    differing = {old_value.key, new_value.key}
    knows_subjects = old_about is not None and new_about is not None
    # Both sentences must be about one subject (what stays of it without the values).
    anchors = sorted(
        {v.text for v in old.values if v.key in new.keys and v.key not in differing}, key=str.lower
    )
    # Without a shared value, the subjects must match name for name, not just overlap.
    if knows_subjects and not any(
        same_subject(a - differing, b - differing, strict=not anchors)
        for a in old_about
        for b in new_about
    ):
        return None
    shared = old.frame & new.frame
    local = local_frame(old, old_value) & local_frame(new, new_value)
    threshold = MIN_FRAME_OVERLAP_WITH_CUE if cued else MIN_FRAME_OVERLAP
    # The attribute: the words next to the values must match; the sentences' words as a
    # whole may stand in for them only when the later one announces a change.
    # A unit of measure is no attribute of its own: "410 metres long" / "38 metres above"
    measure = frozenset({old_value.kind.removeprefix("number:")}) & MEASURE_UNITS
    local_overlap = overlap(
        local_frame(old, old_value) - measure, local_frame(new, new_value) - measure
    )
    same_predicate = (
        bool(predicate_of(old, old_value) & predicate_of(new, new_value))
        or (old.frame == new.frame and all(word.startswith("@") for word in old.frame))
        or counts_of_one_thing(old_value, new_value)
    )  # "is in Paris" / "is in Rome": the preposition is all the attribute there is
    if (
        not paraphrase
        and not same_predicate
        and local_overlap < threshold
        and not (cued and overlap(old.frame, new.frame) >= threshold)
    ):
        return None
    if not knows_subjects and not anchors and (old.frame != new.frame or len(shared) < 2):
        return None
    in_subjects = in_subject(old, old_value) and in_subject(new, new_value)
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


# Units of measure (stems): a measure needs its dimension said ("240 metres long" is no
# height); any other unit is a thing counted, and the count is the attribute. A measure in a
# unit of length answers "how long / tall / wide / deep" (`query.goal_answers`).
# fmt: off
LENGTH_UNITS = frozenset([
    "metr", "meter", "kilometr", "kilomet", "km", "m", "cm", "mm", "mile", "feet", "foot", "ft",
    "inch", "yard",
])
MEASURE_UNITS = LENGTH_UNITS | frozenset([
    "kg", "kilogram", "gram", "g", "tonn", "ton", "pound", "lb", "ounc", "acr", "hectar", "litr",
    "liter", "gallon", "year", "month", "week", "day", "hour", "minut", "second", "knot", "mph",
    "kph", "degre", "percent", "money",
])
# fmt: on


def counts_of_one_thing(first: Value, second: Value) -> bool:
    """Two numbers of one counted unit ("84 rooms", "112 rooms"): the count of that thing."""
    unit = first.kind.removeprefix("number:")
    return (
        first.kind == second.kind
        and first.kind.startswith("number:")
        and bool(unit)
        and unit not in MEASURE_UNITS
    )


def overlap(first: AbstractSet[str], second: AbstractSet[str]) -> float:
    """The share of the smaller set's words found in the other (0 when either is empty)."""
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
    return value.kind == "name" and any(same_name(value.key, name) for name in subject_names)


def find_contradictions(
    old: TextFacts,
    new: TextFacts,
    limit: int = 8,
    cosine: Callable[[str, str], float | None] | None = None,
) -> list[Contradiction]:
    """Every contradiction between sentences of an earlier text and of a later one.
    `cosine(old sentence, new sentence)` gives their embeddings' cosine, where known; it is
    asked only for sentences that share a value, the later one with a cue. Only sentences
    that may be about one subject are compared (`sentence_pairs`)."""
    found: list[Contradiction] = []
    # What each sentence is about, read once per text: it is asked for every pair it is in.
    earlier_about, later_about = old.abouts, new.abouts
    for e, n in subject_pairs(earlier_about, later_about):
        earlier, later = old.sentences[e], new.sentences[n]
        if not (earlier.keys & later.keys) and not (earlier.frame & later.frame):
            continue
        similarity = None
        # The cosine stands in for a shared frame only beside a cue (`find_contradiction`).
        if cosine is not None and (later.announces or later.replaces) and earlier.keys & later.keys:
            similarity = cosine(earlier.text, later.text)
        contradiction = find_contradiction(
            earlier, later, similarity, earlier_about[e], later_about[n]
        )
        if contradiction is not None and all(
            (c.old_sentence, c.new_sentence)
            != (contradiction.old_sentence, contradiction.new_sentence)
            for c in found
        ):
            found.append(contradiction)
            if len(found) >= limit:
                break
    return best_supported(found)


def best_supported(found: list[Contradiction]) -> list[Contradiction]:
    """A later sentence gives one value for one attribute: of the earlier claims it would
    replace, those whose values are said with the most words alike (`support`)."""
    scores = [support(c) for c in found]
    best: dict[str, int] = {}
    for contradiction, score in zip(found, scores, strict=True):
        best[contradiction.new_sentence] = max(best.get(contradiction.new_sentence, score), score)
    return [c for c, score in zip(found, scores, strict=True) if score == best[c.new_sentence]]


def support(contradiction: Contradiction) -> int:
    """How many words the change's old and new values are said with alike ("headquartered in
    Canton" / "headquartered in Atlanta": 1; "runs two chains: Dunkin' Donuts and
    Baskin-Robbins" / "headquartered in Atlanta": 0)."""
    old = sentence_facts(contradiction.old_sentence)
    new = sentence_facts(contradiction.new_sentence)
    old_value = next((v for v in old.values if v.text == contradiction.old_value), None)
    new_value = next((v for v in new.values if v.text == contradiction.new_value), None)
    if old_value is None or new_value is None:
        return 0
    return len(value_context(old, old_value) & value_context(new, new_value))


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
        olds = [v for v in old_values if same_kind(v.kind, kind)]
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
        (a, b) for a, b in pairs if not (name_contains(a, b) or dates_compatible(a.key, b.key))
    ]
    if len(pairs) > 1:
        # The pair sharing its predicate, then the pair of like values (a corrected date
        # keeps its day and month; "84 rooms" is counted as "112 rooms" is, "1980" is not).
        scored = [
            (
                len(predicate_of(old, a) & predicate_of(new, b))
                + date_parts_shared(a.key, b.key)
                + counts_of_one_thing(a, b),
                a,
                b,
            )
            for a, b in pairs
        ]
        best = max(score for score, _, _ in scored)
        pairs = [(a, b) for score, a, b in scored if score == best and best > 0]
    return pairs[0] if len(pairs) == 1 else None


def _replaced_pair(
    new: SentenceFacts, named: list[Value], new_only: list[Value]
) -> tuple[Value, Value] | None:
    """In a replacement sentence, the named old value nearest the cue ("replaced Alice",
    "Alice was succeeded by") and the one new value of its kind."""
    cue = REPLACEMENT_CUES.search(new.text)
    if cue is None:
        return None
    best: tuple[int, Value, Value] | None = None
    for old_value in named:
        news = [v for v in new_only if same_kind(old_value.kind, v.kind)]
        mention = next(
            (
                v
                for v in new.values
                if v.key == old_value.key
                or (v.kind == "name" == old_value.kind and name_contains(v, old_value))
            ),
            None,
        )
        if len(news) != 1 or mention is None:
            continue
        distance = min(abs(mention.start - cue.end()), abs(cue.start() - mention.end))
        if best is None or distance < best[0]:
            best = (distance, old_value, news[0])
    if best is None or name_contains(best[1], best[2]):
        return None
    return best[1], best[2]


def _best_by_context(
    facts: SentenceFacts, values: list[Value], new: SentenceFacts, new_value: Value
) -> list[Value]:
    """Of several candidate old values, those whose preceding words match the new value's;
    for dates, those sharing a part with the new date (a corrected year keeps day and month)."""
    context = left_context(new, new_value)
    scores = [len(left_context(facts, value) & context) for value in values]
    if new_value.kind == "date":
        scores = [
            score + 2 * date_parts_shared(v.key, new_value.key)
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
    old_contexts = [left_context(old, a) for a in olds]
    new_contexts = [left_context(new, b) for b in news]
    scored = [
        (len(old_context & new_context), a, b)
        for a, old_context in zip(olds, old_contexts, strict=True)
        for b, new_context in zip(news, new_contexts, strict=True)
    ]
    best = max(score for score, _, _ in scored)
    top = [(a, b) for score, a, b in scored if score == best]
    if best > 0 and len(top) == 1:
        return [top[0][0]], [top[0][1]]
    return olds, news
