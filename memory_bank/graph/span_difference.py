"""Two claims worded the same but for one span disagree on that span.

The principle, whatever kind of span it is (a number, a date, a name or a common noun phrase):
two sentences about one subject are read as sequences of units -- each value one unit, every
other word its stem, articles left out -- cut into clauses at commas and clause words ("and",
"who", "which"), and each clause of one aligned with each clause of the other (difflib).
Then, in a pair of clauses
- a span both sides fill between two aligned stretches is a difference; one that only one side
  has there (an inserted word) is one too, unless it holds no content word;
- past the last aligned stretch (or before the first) each side may go on with details of its
  own: only what the two say in place of each other right there counts -- a value, or the
  words up to the next preposition or value;
- a span that says one value told differently ("1823" / "May 1823", "Hale" / "Martin Hale"),
  or a reference ("it") for a name, is no difference.
Exactly one difference, of one kind on both sides (a value of one kind for another of it, or
a short phrase of words for another, said after a predicate and not itself a participle that
opens another predicate), with an attribute around it (an aligned word other than grammar's
and the subject's names), about one subject: the claims disagree. Two differences are
two facts ("in 2010 ... 4,000" / "in 2020 ... 4,600"; "The Brennet Bridge is 240 metres long" /
"The Carrow Bridge is 310 metres long"), none is agreement or a detail added.

It reads only the words, and needs no cue: whether the later claim replaces the earlier is
for the caller to decide (in a session, neither is known to, and the two are cross-validated).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import takewhile

from memory_bank.graph.contradictions import MEASURE_UNITS, Contradiction
from memory_bank.graph.sentence_facts import SentenceFacts, mentions_value, sentence_facts
from memory_bank.graph.sentence_pairs import anchored_pairs
from memory_bank.graph.subjects import Subject, TextFacts, same_subject
from memory_bank.graph.value_context import in_list, named_as_alias
from memory_bank.graph.value_identity import dates_compatible, name_contains, same_kind
from memory_bank.graph.values import Value
from memory_bank.text.cues import REPLACEMENT_CUES
from memory_bank.text.lexicon import stem_words

# Longest common noun phrase read as one value, in content words.
MAX_PHRASE_WORDS = 4
_TOKEN = re.compile(r"[^\W_][\w'’-]*|[,;:()\[\]—–]")
_ARTICLES = frozenset({"a", "an", "the"})
# The closed word classes: they carry grammar, not what a claim is about. (A stop list for
# search drops content words too -- "made", "began", "found" -- that may be an attribute.)
# fmt: off
_GRAMMAR_WORDS = frozenset([
    "this", "that", "these", "those", "its", "his", "her", "their", "our", "your", "my", "some",
    "any", "each", "every", "no", "all", "both", "it", "he", "she", "they", "we", "you", "i",
    "him", "them", "us", "one", "who", "whom", "whose", "which", "what", "be", "is", "are", "was",
    "were", "been", "being", "am", "has", "have", "had", "having", "do", "does", "did", "will",
    "would", "shall", "should", "can", "could", "may", "might", "must", "of", "in", "on", "at",
    "to", "for", "from", "by", "with", "about", "as", "into", "onto", "over", "under", "between",
    "through", "during", "before", "after", "since", "until", "upon", "within", "without", "near",
    "above", "below", "across", "along", "around", "behind", "beside", "beyond", "inside",
    "outside", "towards", "against", "among", "per", "and", "or", "but", "nor", "so", "yet",
    "than", "if", "because", "while", "although", "though", "not", "also", "very", "then",
    "there", "here", "now", "still", "just", "only", "even", "too", "already", "again",
])
# fmt: on
# Where a clause ends: what follows it is a detail of its own.
_CLAUSE_WORDS = frozenset(
    {"and", "but", "or", "who", "whom", "whose", "which", "that", "where", "when", "while"}
)
# Where a phrase ends.
# fmt: off
_PHRASE_WORDS = frozenset([
    "with", "above", "below", "across", "along", "around", "behind", "beside", "beyond", "inside",
    "outside", "towards", "against", "among", "per", "in", "on", "at", "for", "from", "by",
    "since", "after", "before", "during", "under", "near", "this", "its", "his", "her", "their",
])
# fmt: on
_CLAUSE = ","
# A participle opens a predicate ("painted green" / "owned by the city"), not a value ("reed"
# and "seed" are no participles).
PREDICATE_PARTICIPLE = re.compile(
    r"[a-z]{2,}(?<!e)ed|agreed|freed|built|made|held|known|born|sold|kept|grown|shown|given|"
    r"taken|written|run|led|found|brought|begun|done|seen|set|put|won|lost|laid|paid|said|told|"
    r"sent|spent|bought|caught|taught|dug|hung|struck|worn|torn|drawn|thrown|flown|chosen|"
    r"stolen|spoken|broken|driven|fallen|beaten|sunk|shut|lit|fed|bred|spun|swept|dealt"
)


@dataclass(frozen=True)
class Unit:
    """A word (its stem), a value, or a boundary of one sentence, with its place in it."""

    key: str
    kind: str  # "word", "mark", or a value's kind ("name", "date", "number:<unit>", ...)
    start: int
    end: int
    value: Value | None = None

    @property
    def content(self) -> bool:
        return self.kind != "word" or self.key not in _GRAMMAR_WORDS


@dataclass(frozen=True)
class SpanDifference:
    """The one span two claims differ in: what each side says there."""

    old_value: str
    new_value: str
    kind: str  # a value's kind, or "phrase" for common words
    attribute: str  # the aligned content words around it
    anchors: tuple[str, ...]  # aligned names: what both speak of
    opens: bool = False  # the span comes before anything aligned: it is what each speaks of


@lru_cache(maxsize=65536)
def sentence_units(sentence: str) -> tuple[Unit, ...]:
    """`sentence` as units (module docstring): values whole, other words stemmed."""
    values = sentence_facts(sentence).values
    units: list[Unit] = []
    position = 0
    for value in (*values, None):
        end = value.start if value is not None else len(sentence)
        units += _word_units(sentence, position, end)
        if value is not None:
            units.append(Unit(value.key, value.kind, value.start, value.end, value))
            position = value.end
    return tuple(units)


def _word_units(sentence: str, start: int, end: int) -> list[Unit]:
    tokens = list(_TOKEN.finditer(sentence, start, end))
    words = [m.group(0).lower() for m in tokens]
    stems = stem_words(words)
    units = []
    for match, word, stem in zip(tokens, words, stems, strict=True):
        # the possessive "'s" after a name ("Hobb's Cross" read as the names "Hobb", "Cross")
        # is grammar, as an article is
        clitic = word == "s" and sentence[match.start() - 1 : match.start()] in {"'", "’"}
        if word in _ARTICLES or clitic:
            continue
        if not word[0].isalnum() or word in _CLAUSE_WORDS:
            units.append(Unit(_CLAUSE, "mark", match.start(), match.end()))
        elif word in _PHRASE_WORDS:
            units.append(Unit(word, "mark", match.start(), match.end()))
        else:
            units.append(Unit(word if word in _GRAMMAR_WORDS else stem, "word", *match.span()))
    return units


@dataclass(frozen=True)
class _Alignment:
    """Two clauses' units aligned, and the spans they differ in (module docstring)."""

    old: tuple[Unit, ...]
    opcodes: list[tuple[str, int, int, int, int]]
    spans: list[tuple[int, list[Unit], list[Unit]]]  # (opcode index, old side, new side)


def _clauses(sentence: str) -> list[tuple[Unit, ...]]:
    """A sentence's units cut at its clause boundaries (commas, "and", "who", ...)."""
    clauses: list[list[Unit]] = [[]]
    for unit in sentence_units(sentence):
        if unit.key == _CLAUSE and unit.kind == "mark":
            clauses.append([])
        else:
            clauses[-1].append(unit)
    return [tuple(clause) for clause in clauses if clause]


@lru_cache(maxsize=16384)
def _alignments(old: str, new: str) -> tuple[_Alignment, ...]:
    """Every pair of clauses of the two sentences that align on a word."""
    return tuple(
        alignment
        for a in _clauses(old)
        for b in _clauses(new)
        if (alignment := _aligned(a, b)) is not None
    )


def _aligned(a: tuple[Unit, ...], b: tuple[Unit, ...]) -> _Alignment | None:
    opcodes = SequenceMatcher(
        None, [u.key for u in a], [u.key for u in b], autojunk=False
    ).get_opcodes()
    said = [n for n, op in enumerate(opcodes) if op[0] == "equal"]
    if not any(u.kind != "mark" for n in said for u in a[opcodes[n][1] : opcodes[n][2]]):
        return None
    first, last = opcodes[said[0]], opcodes[said[-1]]
    spans: list[tuple[int, list[Unit], list[Unit]]] = []
    # Before the first aligned stretch and past the last, what each side says in place of the
    # other right there (what only one side goes on with is a detail of its own).
    head = (_trailing(list(a[: first[1]])), _trailing(list(b[: first[3]])))
    spans += [(-1, *head)] if all(head) and not _told_alike(*head) else []
    for n in range(said[0] + 1, said[-1]):
        operation, i1, i2, j1, j2 = opcodes[n]
        old_side, new_side = list(a[i1:i2]), list(b[j1:j2])
        if operation == "equal" or _told_alike(old_side, new_side):
            continue
        if (old_side and new_side) or _inserted_content(old_side, b, new_side, a):
            spans.append((n, old_side, new_side))
    tail = (_leading(list(a[last[2] :])), _leading(list(b[last[4] :])))
    spans += [(len(opcodes), *tail)] if all(tail) and not _told_alike(*tail) else []
    return _Alignment(a, opcodes, spans)


def differs_in_several_spans(old: str, new: str, old_value: str, one_subject: bool = False) -> bool:
    """Whether a clause of `old` that says `old_value` and one of `new` worded alike differ in
    more than one span: two facts (of other times, occasions or attributes), not two values
    for one. `one_subject`: the two are known to be about one subject, so where both subject
    phrases differ by a name ("The hotel" / "The Grand Ossory Hotel") is that subject told
    two ways."""
    at = old.find(old_value)
    ends = (sentence_facts(old).subject_end, sentence_facts(new).subject_end)

    def in_subjects(old_side: list[Unit], new_side: list[Unit]) -> bool:
        # the subject named on one side at least ("The hotel" / "The Grand Ossory Hotel"), not
        # a word of the attribute ("The head librarian" / "The deputy librarian")
        named = any(u.kind == "name" for u in (*old_side, *new_side))
        return named and all(
            side and side[-1].end <= end for side, end in ((old_side, ends[0]), (new_side, ends[1]))
        )

    return any(
        sum(not (one_subject and in_subjects(o, n)) for _, o, n in alignment.spans) > 1
        and alignment.old[0].start <= at < alignment.old[-1].end
        for alignment in _alignments(old, new)
    )


def span_difference(old: str, new: str) -> SpanDifference | None:
    """The span `new` says differently from `old` in a pair of clauses worded the same but
    for it (module docstring); None when no pair of clauses differs in exactly one span that
    is a value. The subject is checked by `differ_on_one_span`."""
    differences = (_difference(old, new, alignment) for alignment in _alignments(old, new))
    found = next((found for found in differences if found is not None), None)
    if found is not None and _said_by_both(old, new, found):
        return None
    return found


def _said_by_both(old: str, new: str, found: SpanDifference) -> bool:
    """Whether either sentence also says the other's span (words in another order, no other
    value), unless the later one names the earlier value as replaced ("replaced Ada Venn")."""
    return mentions_value(old, found.new_value) or (
        mentions_value(new, found.old_value) and not REPLACEMENT_CUES.search(new)
    )


def _difference(old: str, new: str, alignment: _Alignment) -> SpanDifference | None:
    a, opcodes, spans = alignment.old, alignment.opcodes, alignment.spans
    if len(spans) != 1:
        return None
    at, old_side, new_side = spans[0]
    kind = _one_value(old_side, new_side)
    if kind is None:
        return None
    aligned = [a[i] for op, i1, i2, _, _ in opcodes if op == "equal" for i in range(i1, i2)]
    attribute = [
        u.key for u in aligned if u.kind == "word" and u.content and u.key not in MEASURE_UNITS
    ]
    if not attribute:
        # only the subject is shared: two attributes ("holds ..." / "is owned by"), or two
        # measures of one unit ("410 metres long" / "38 metres above the river")
        return None
    said_before = [
        a[i] for op, i1, i2, _, _ in opcodes[: max(at, 0)] if op == "equal" for i in range(i1, i2)
    ]
    if kind == "phrase" and not (said_before and said_before[-1].value is None):
        return None  # no predicate before the words, or a value's own unit ("metres high")
    if kind == "phrase" and not any(u.kind == "word" and u.content for u in said_before):
        return None  # words in place of the predicate ("was built as" / "was used as")
    if kind == "phrase" and any(
        PREDICATE_PARTICIPLE.fullmatch(text[side[0].start : side[0].end].lower()) is not None
        for text, side in ((old, old_side), (new, new_side))
    ):
        return None  # two predicates: "is painted green" / "is owned by the city"
    return SpanDifference(
        old_value=old[old_side[0].start : old_side[-1].end],
        new_value=new[new_side[0].start : new_side[-1].end],
        kind=kind,
        attribute=" ".join(dict.fromkeys(attribute)),
        anchors=tuple(
            dict.fromkeys(
                old[u.start : u.end] for u in aligned if u.kind == "name" and u.value is not None
            )
        ),
        opens=at == -1,
    )


def differ_on_one_span(
    old: SentenceFacts, new: SentenceFacts, old_about: list[Subject], new_about: list[Subject]
) -> SpanDifference | None:
    """The span difference of two sentences about one subject: a name both hold outside the
    span, or subjects (`TextFacts.about`: the text's principal one for a sentence that refers
    back) that match name for name. A difference in the subject phrase of both is two subjects
    with one property ("Alice was born in Paris" / "Bob ..."), unless only one can hold the
    role ("is the CEO of")."""
    found = span_difference(old.text, new.text)
    if found is None:
        return None
    if not found.anchors and not any(
        same_subject(a, b, strict=True) for a in old_about for b in new_about
    ):
        return None
    if found.opens and not (old.single_role and new.single_role):
        return None
    return found


def _inserted_content(
    old_side: list[Unit], new: tuple[Unit, ...], new_side: list[Unit], old: tuple[Unit, ...]
) -> bool:
    """Whether words only one side has between aligned ones say something: a content word the
    other clause does not say elsewhere (where it does, the two only order it differently)."""
    for side, other in ((old_side, new), (new_side, old)):
        keys = {u.key for u in other}
        if any(u.content and u.kind != "mark" and u.key not in keys for u in side):
            return True
    return False


def _leading(side: list[Unit]) -> list[Unit]:
    """What a side says first past the aligned words: its first value, else its words up to a
    boundary (a value ends the phrase too)."""
    if side and side[0].value is not None:
        return side[:1]
    return list(takewhile(lambda unit: unit.kind == "word", side))


def _trailing(side: list[Unit]) -> list[Unit]:
    """What a side says last before the aligned words (`_leading`, read backwards)."""
    return _leading(side[::-1])[::-1]


def _told_alike(old_side: list[Unit], new_side: list[Unit]) -> bool:
    """One value on both sides told differently, or no content word on either side."""
    if old_side and new_side and not all(any(u.content for u in s) for s in (old_side, new_side)):
        return True  # "it" for "Brackley Lighthouse", "is" for "measures": no other claim
    if len(old_side) == len(new_side) == 1 and old_side[0].value and new_side[0].value:
        first, second = old_side[0].value, new_side[0].value
        return (
            first.key == second.key
            or dates_compatible(first.key, second.key)
            or (first.kind == "name" == second.kind and name_contains(first, second))
        )
    old_words, new_words = _said_words(old_side), _said_words(new_side)
    # "coaching inn" / "inn", "the viaduct" / "the Corran Viaduct": the same thing, told more
    # or less precisely
    return bool(old_words and new_words) and (old_words <= new_words or new_words <= old_words)


def _said_words(side: list[Unit]) -> set[str]:
    """The stems of a span's content words, a name's words included."""
    words = {u.key for u in side if u.kind == "word" and u.content}
    names = [u.value.text.lower() for u in side if u.value is not None and u.kind == "name"]
    return words | set(stem_words(" ".join(names).split()))


def _one_value(old_side: list[Unit], new_side: list[Unit]) -> str | None:
    """The kind of value a differing span says on both sides: one value of one kind, or a
    short phrase of words with a content word on each side; None for anything else."""
    if not old_side or not new_side:
        return None
    if len(old_side) == len(new_side) == 1 and old_side[0].value and new_side[0].value:
        first, second = old_side[0].value.kind, new_side[0].value.kind
        return first if same_kind(first, second) else None
    sides = (old_side, new_side)
    if all(u.kind == "word" for side in sides for u in side) and all(
        0 < sum(u.content for u in side) <= MAX_PHRASE_WORDS for side in sides
    ):
        return "phrase"
    return None


def span_contradictions(old: TextFacts, new: TextFacts, limit: int = 8) -> list[Contradiction]:
    """Every one-span disagreement between a sentence of an earlier text and one of a later
    text (`text_facts(..., all_sentences=True)`: a phrase needs no value), as contradictions.
    A value listed among others, or named as an alias, is assigned by neither claim. Only
    sentences that may be about one subject are compared (`sentence_pairs`)."""
    found: list[Contradiction] = []
    earlier_about, later_about = old.abouts, new.abouts  # read once per text
    for e, n in anchored_pairs(old.sentences, earlier_about, new.sentences, later_about):
        earlier, later = old.sentences[e], new.sentences[n]
        if earlier.text == later.text:
            continue
        difference = differ_on_one_span(earlier, later, earlier_about[e], later_about[n])
        if difference is None or _not_assigned(earlier, later, difference):
            continue
        found.append(
            Contradiction(
                old_sentence=earlier.text,
                new_sentence=later.text,
                subject=", ".join(difference.anchors),
                attribute=difference.attribute,
                old_value=difference.old_value,
                new_value=difference.new_value,
                kind=difference.kind,
            )
        )
        if len(found) >= limit:
            break
    return found


def _not_assigned(old: SentenceFacts, new: SentenceFacts, difference: SpanDifference) -> bool:
    for facts, text in ((old, difference.old_value), (new, difference.new_value)):
        value = next((v for v in facts.values if v.text == text), None)
        if value is not None and (in_list(facts, value) or named_as_alias(facts, value)):
            return True
    return False
