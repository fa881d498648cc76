"""Which sentence pairs of two texts the contradiction rules compare: only those that can be
about one subject.

Both rules that find a conflict between two sentences require it. `find_contradiction` turns
down a pair unless a subject of one sentence and a subject of the other (`TextFacts.about`)
match name for name (`same_subject`); `differ_on_one_span` unless they do or a name stands in
both sentences aligned (an anchor). Two names match only when one's words are among the
other's (`compatible_names`, of which `same_name` is a case), so a pair with no name of a
subject compatible with a name of the other's -- nor, for the span rule, a name both hold -- is
one the rules would turn down, whatever its values and attribute: leaving it out changes no
verdict. The pairs are found through an index of the names' words rather than by trying
every pair, so what is compared grows with the sentences that share a subject, not with the
product of the two texts' lengths.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.subjects import Subject
from memory_bank.graph.value_identity import compatible_names, key_words

Names = frozenset[str]  # name keys ("e:acme corporation")


def subject_names(about: Sequence[Subject]) -> Names:
    """The names of what a sentence is about."""
    return frozenset(key for subject in about for key in subject if key.startswith(("e:", "k:")))


def value_names(facts: SentenceFacts) -> Names:
    """The names a sentence holds as values."""
    return frozenset(value.key for value in facts.values if value.kind == "name")


def subject_pairs(
    earlier_about: Sequence[Sequence[Subject]], later_about: Sequence[Sequence[Subject]]
) -> Iterator[tuple[int, int]]:
    """(earlier index, later index) of the sentence pairs of an earlier and a later text that
    may be about one subject, given what each sentence is about (`TextFacts.about`), later
    sentence by later sentence, earlier ones in text order: the pairs `find_contradictions`
    compares (module docstring)."""
    return _pairs(
        [subject_names(about) for about in earlier_about],
        [subject_names(about) for about in later_about],
    )


def anchored_pairs(
    earlier: Sequence[SentenceFacts],
    earlier_about: Sequence[Sequence[Subject]],
    later: Sequence[SentenceFacts],
    later_about: Sequence[Sequence[Subject]],
) -> Iterator[tuple[int, int]]:
    """As `subject_pairs`, counting too a name both sentences hold (an anchor of the span
    rule): the pairs `span_contradictions` compares."""
    return _pairs(
        [subject_names(a) | value_names(f) for f, a in zip(earlier, earlier_about, strict=True)],
        [subject_names(a) | value_names(f) for f, a in zip(later, later_about, strict=True)],
    )


def _pairs(earlier: Sequence[Names], later: Sequence[Names]) -> Iterator[tuple[int, int]]:
    index: dict[str, list[int]] = {}
    for position, names in enumerate(earlier):
        for word in {word for name in names for word in name_words(name)}:
            index.setdefault(word, []).append(position)
    for later_position, names in enumerate(later):
        found = {
            position
            for word in {word for name in names for word in name_words(name)}
            for position in index.get(word, ())
        }
        for position in sorted(found):
            if any(compatible(a, b) for a in earlier[position] for b in names):
                yield position, later_position


@lru_cache(maxsize=65536)
def name_words(name: str) -> frozenset[str]:
    """A name key's words, and the key itself (a key with no words still matches itself)."""
    return frozenset({name, *key_words(name)})


@lru_cache(maxsize=262144)
def compatible(first: str, second: str) -> bool:
    return compatible_names(first, second)
