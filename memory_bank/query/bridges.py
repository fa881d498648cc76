"""Currency one hop away: a question that names X through another fact ("the man who produced
the soundtrack of Natural Born Killers", "the soap opera Kate Ramsay is from") reads the memory
that names X, not the memory whose claim about X a later add replaced. The Query Graph knows
that claim (a resolved conflict); this finds it from the evidence.

A resolved conflict is a bridge for a question when
- what it is about -- the names its old and new sentences share, other than the values -- is
  named by a sentence of the evidence the answer would quote (checked by the answer:
  `answering.apply_bridges`);
- its value is of a kind the question asks for (a date for "when", a name for "who");
- its new value is said with a content word of the question ("born", "created",
  "broadcast").
The current claim's sentence then joins the answer, and the replaced claim is history.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from memory_bank.graph.model import Conflict
from memory_bank.graph.sentence_facts import in_subject, sentence_facts
from memory_bank.graph.subjects import text_facts
from memory_bank.graph.value_context import value_context
from memory_bank.graph.value_identity import compatible_names, same_name
from memory_bank.graph.values import extract_values, name_key
from memory_bank.query.question import content_terms
from memory_bank.query.slot_rules import answer_kinds


@dataclass(frozen=True)
class Bridge:
    """A resolved conflict the question may reach through the evidence."""

    conflict: Conflict
    about: tuple[str, ...]  # name keys of what the conflict is about


def conflict_subject(conflict: Conflict) -> tuple[str, ...]:
    """The name keys of what the conflict is about: the names of its new sentence's subject
    phrase ("The series Charmed was ...", "Trent Reznor, the Nine Inch Nails founder, was
    ..."), else the names its two sentences share, else the names of the subject the graph
    recorded for it (what the earlier text is about) -- never one of its values."""
    return _subject(
        conflict.old_sentence.strip(),
        conflict.new_sentence.strip(),
        conflict.old_value,
        conflict.new_value,
        conflict.subject,
    )


@lru_cache(maxsize=16384)
def _subject(
    old_sentence: str, new_sentence: str, old_value: str, new_value: str, recorded: str
) -> tuple[str, ...]:
    """`conflict_subject` of the conflict's strings (cached)."""
    old = sentence_facts(old_sentence)
    new = sentence_facts(new_sentence)
    values = {v.key for text in (old_value, new_value) for v in extract_values(text)}

    def value(key: str) -> bool:  # a value, or a part of one ("Sacramento" of its region)
        return key in values or any(compatible_names(key, v) for v in values)

    names = [v for v in new.values if v.kind == "name" and not value(v.key)]
    found = [v.key for v in names if in_subject(new, v)]
    if not found:
        found = [
            v.key
            for v in names
            if any(o.kind == "name" and compatible_names(v.key, o.key) for o in old.values)
        ]
    if not found:
        parts = [part for part in recorded.split(", ") if re.search(r"[^\W\d]", part)]
        found = [f"e:{name_key(part)}" for part in parts if name_key(part)]
        found = [key for key in found if not value(key)]
    return tuple(dict.fromkeys(found))


def _asked(kinds: frozenset[str], terms: set[str], conflict: Conflict) -> bool:
    """Whether the conflict's value is of a kind the question asks for and is said with a word
    of the question's content `terms` (its predicate or the words before it: "broadcast" in
    "was originally broadcast by UPN"; not "series" in "The series Charmed", which names the
    subject)."""
    kind, words = _said_with(conflict.new_sentence.strip(), conflict.new_value)
    return kind in kinds and bool(words & terms)


@lru_cache(maxsize=16384)
def _said_with(sentence: str, value: str) -> tuple[str, frozenset[str]]:
    """The kind of `value` and the words `sentence` says it with."""
    values = extract_values(value)
    kind = values[0].kind.split(":", 1)[0] if len(values) == 1 else "name"
    facts = sentence_facts(sentence)
    keys = {v.key for v in values}
    said = [v for v in facts.values if v.key in keys or value in v.text]
    words = frozenset().union(*(value_context(facts, v) for v in said)) if said else facts.frame
    return kind, words


def bridges(question: str, conflicts: Iterable[Conflict]) -> list[Bridge]:
    """The resolved conflicts that may answer `question` one hop away (what they are about is
    matched against the evidence by the answer)."""
    kinds = answer_kinds(question)
    terms = set(content_terms(question))
    found = []
    for conflict in conflicts:
        if conflict.status != "resolved" or conflict.current != conflict.newer:
            continue
        if not _asked(kinds, terms, conflict):
            continue
        about = conflict_subject(conflict)
        if about:
            found.append(Bridge(conflict, about))
    return found


def names_any(sentence: str, about: Iterable[str], text: str | None = None) -> bool:
    """Whether `sentence` names one of the name keys `about` (the same name, or its last
    words: "Reznor" for "Trent Reznor"), itself or -- a sentence of `text` that refers back
    to what its text is about ("He was runner-up in ...") -- through its text's subject."""
    keys = _named(sentence.strip(), text or "")
    return any(same_name(key, wanted) for key in keys for wanted in about)


@lru_cache(maxsize=16384)
def _named(sentence: str, text: str) -> frozenset[str]:
    facts = sentence_facts(sentence)
    keys = {v.key for v in facts.values if v.kind == "name"}
    if text:
        for subject in text_facts(text).about(facts):
            keys |= {key for key in subject if key.startswith("e:")}
    return frozenset(keys)
