"""The pairwise rules of query-time currency (`query.slots`): does a later sentence give
another value than an earlier one for what the question asks?

- `answer_change`: each sentence is its memory's answer to the question; compared by the
  value the question asks for, even where the earlier one is an encyclopedic sentence with
  many values ("Edmund Irvine Jr. (born 10 November 1965) is a retired British racing driver
  from Northern Ireland." / "Eddie Irvine was born on 10 November 1964.").
- `word_change`: the value is a common word ("plays the violin" / "now plays the cello").
- `masked`: a sentence with its values replaced by placeholders, so that the embedding of
  what is said about the values ("X is the CEO of X") can be compared without the names,
  which dominate a sentence's embedding.
(The third rule is the graph's own, `graph.contradictions.find_contradiction`, with the question
standing in for an update cue.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_bank.graph.contradictions import PARAPHRASE_COSINE, Contradiction
from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.subjects import Subject, same_subject
from memory_bank.graph.value_context import (
    assigns,
    clause_bounds,
    clause_words,
    modifies_noun,
    outside_values,
    value_context,
)
from memory_bank.graph.values import Value, extract_values
from memory_bank.query.question import content_terms
from memory_bank.text.cues import CHANGE_WORDS
from memory_bank.text.lexicon import search_tokens, stem_words

# Two sentences this alike (`slots._verdicts`: their vectors' and their masked texts' mean
# cosine) speak of one attribute in other words.
SLOT_COSINE = 0.65
# Two sentences about one subject this close (cosine) that differ in one common word each say
# the same with another value ("plays the violin" / "plays the cello").
WORD_CHANGE_COSINE = 0.75
_DATE_QUESTION = re.compile(
    r"\b(?:when|since when|(?:what|which)\s+(?:day|month|decade|century)|year|date|birthday)\b",
    re.IGNORECASE,
)
_NUMBER_QUESTION = re.compile(
    r"\bhow\s+(?:many|much|long|old|tall|high|far|big|large|heavy|deep|wide|often)\b|"
    r"\b(?:population|number|amount|count|percentage|share|size|length|height|area|total|"
    r"price|cost|salary|capacity|attendance|age|rate)\b",
    re.IGNORECASE,
)


def answer_kinds(question: str) -> frozenset[str]:
    """The kinds of value the question asks for: "date" (when, what year), "number" (how
    many, the population), else "name" (who, where, which ...)."""
    kinds = set()
    if _DATE_QUESTION.search(question):
        kinds.add("date")
    if _NUMBER_QUESTION.search(question):
        kinds.add("number")
    return frozenset(kinds or {"name"})


class Asked:
    """What the question asks for: kinds of value, its own values, its content words."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.kinds = answer_kinds(question)
        self.values = extract_values(question)
        self.terms = frozenset(content_terms(question))

    def takes(self, value: Value) -> bool:
        """A value of an asked kind that the question does not itself name."""
        return value.kind.split(":", 1)[0] in self.kinds and not any(
            v.key == value.key or _alias(v, value) for v in self.values
        )


def answer_change(
    earlier: SentenceFacts,
    later: SentenceFacts,
    asked: Asked,
    earlier_principal: Subject,
    similarity: float | None,
) -> Contradiction | None:
    """The two memories' answers to the question, compared by the value it asks for: the
    later sentence holds one value of the asked kind that the earlier lacks, the earlier
    (an encyclopedic sentence with many values, "Edmund Irvine Jr. (born 10 November 1965) is
    a retired British racing driver from Northern Ireland.") one or more it lacks, of which
    the one said with the same words (its predicate, or a word of the question: "born")
    is the old value. Both must be about one subject: a name of each (or the earlier text's
    subject, for a sentence opening "She ...") is the same name, by its last word ("Eddie
    Irvine", "Edmund Irvine Jr."). Kept only where each sentence is its memory's best answer
    to the question (checked by the caller)."""
    later_names = [v for v in later.values if v.kind == "name"]
    earlier_names = [v for v in earlier.values if v.kind == "name"]
    news = [
        v
        for v in later.values
        if asked.takes(v)
        and not _present_in(v, earlier.values)
        and not any(_alias(v, o) for o in earlier_names)
    ]
    # A name qualifying a noun ("an Austrian synthpop band") answers only against another.
    qualifiers = not any(not modifies_noun(later, v) for v in news)
    news = [v for v in news if modifies_noun(later, v) == qualifiers]
    if len(news) != 1:
        return None
    [new] = news
    olds = [
        v
        for v in earlier.values
        if asked.takes(v)
        and modifies_noun(earlier, v) == qualifiers
        and (
            not (_present_in(v, later.values) or any(_alias(v, o) for o in later_names))
            or _in_another_role(earlier, v, later, new)
        )
    ]
    if not olds:
        return None
    # "NBA TV's NBA Inside Stuff", "India's pop band Euphoria": a possessor qualifies the
    # noun phrase after it; the value is what it owns.
    olds = [v for v in olds if not possessor(earlier, v)] or olds
    # One subject: a name of each sentence is the same name, or the earlier sentence refers
    # back ("She was best known for ...") to its text's subject, named by the later one.
    others = [b for b in later_names if b is not new]
    subjects = [v for v in earlier_names if v not in olds]
    refers_back = (
        earlier.refers_back
        or _PRONOUN_OPENING.match(earlier.text) is not None
        or _FRONTED_THEN_REFERENCE.match(earlier.text) is not None
    )
    if not any(_alias(a, b) for a in subjects for b in others) and not (
        refers_back and any(_alias_key(key, b.key) for key in earlier_principal for b in others)
    ):
        return None
    context = value_context(later, new) | asked.terms
    # The words a value is said with, and its head noun: a value and the one replacing it are
    # often named alike ("Earl of Northumbria" / "Earl of Mercia", "University of South
    # Dakota" / "Montana State University").
    scored = [(len(value_context(earlier, v) & context) + _same_head(v, new), v) for v in olds]
    best = max(score for score, _ in scored)
    # Of values said with the same words, the first: in "a striker for Premier League club
    # Manchester City and the Argentina national team" the predicate's own object.
    old = next(v for score, v in scored if score == best)
    if best == 0 and len(olds) > 1:
        # Nothing else tells them apart: the one introduced like the new value ("founded by
        # William Bass in Burton" / "established in Derby": the place, not the founder).
        alike = [v for v in olds if _preposition(earlier, v) == _preposition(later, new)]
        olds = alike if len(alike) == 1 and _preposition(later, new) else olds
        old = olds[0]
    # Without shared words, one candidate on each side must say alike what it says about its
    # value (a date or a number is less ambiguous than a name: a lower bar).
    bar = SLOT_COSINE if new.kind == "name" else PARAPHRASE_COSINE
    if best == 0 and not (len(olds) == 1 and similarity is not None and similarity >= bar):
        return None
    if old.kind.split(":", 1)[0] != new.kind.split(":", 1)[0]:
        return None
    if _roles_differ(earlier, old, later, new):
        return None  # "founded by Stewart Lane" / "based in Chicago": a founder is no place
    if not (assigns(earlier, old) and assigns(later, new)):
        return None
    return Contradiction(
        old_sentence=earlier.text,
        new_sentence=later.text,
        subject=", ".join(dict.fromkeys(b.text for b in others)),
        attribute=" ".join(sorted(value_context(later, new)))[:60] or "(the question's)",
        old_value=old.text,
        new_value=new.text,
        kind="answer",
    )


def _in_another_role(
    earlier: SentenceFacts, value: Value, later: SentenceFacts, new: Value
) -> bool:
    """Whether the later sentence names the earlier one's value only in a clause of its own
    that says something else of it, while its new value takes the words the earlier value was
    said with ("co-written and directed by Park Jin-pyo" / "directed by Kim Jee-woon; Park
    Jin-pyo co-wrote the script": Park Jin-pyo is no longer the director)."""
    mentions = [v for v in later.values if v.key == value.key or _alias(v, value)]
    said = clause_words(earlier, value)
    if not mentions or not said & clause_words(later, new):
        return False
    new_clause = clause_bounds(later.text, new)
    return all(
        clause_bounds(later.text, m) != new_clause and not said & clause_words(later, m)
        for m in mentions
    )


def word_change(
    earlier: SentenceFacts,
    later: SentenceFacts,
    cosine: float | None,
    earlier_about: list[Subject],
    later_about: list[Subject],
) -> Contradiction | None:
    """Two sentences about one subject that say the same in all but one word each ("Marta
    Ilves plays the violin" / "Marta Ilves now plays the cello"): the value is a common word
    (an instrument, a sport, a genre), which names and numbers do not cover. Only sentences
    this close in embedding (WORD_CHANGE_COSINE) and without other values in which they
    differ."""
    if cosine is None or cosine < WORD_CHANGE_COSINE or earlier.keys != later.keys:
        return None
    shared_name = any(v.kind == "name" for v in earlier.values)  # the same names: one subject
    if not shared_name and not any(same_subject(a, b) for a in earlier_about for b in later_about):
        return None
    old_words = _plain_words(earlier)
    new_words = _plain_words(later)
    old_only = {stem: word for stem, word in old_words.items() if stem not in new_words}
    new_only = {stem: word for stem, word in new_words.items() if stem not in old_words}
    if len(old_only) != 1 or len(new_only) != 1:
        return None
    [old_value] = old_only.values()
    [new_value] = new_only.values()
    shared = sorted(set(old_words) & set(new_words))
    return Contradiction(
        old_sentence=earlier.text,
        new_sentence=later.text,
        subject=", ".join(sorted(v.text for v in earlier.values if v.kind == "name")),
        attribute=" ".join(shared[:4]) or "(paraphrased)",
        old_value=old_value,
        new_value=new_value,
        kind="word",
    )


_PREPOSITION = re.compile(r"\b(in|at|on|from|by|to|near|for|with|of)\s+(?:the\s+)?$", re.IGNORECASE)


# What a preposition says a name is: who did it ("by") or where ("in", "at", ...).
_ROLES = {
    "by": "agent",
    "in": "place",
    "at": "place",
    "on": "place",
    "near": "place",
    "from": "place",
}


def roles_differ(earlier: SentenceFacts, later: SentenceFacts, found: Contradiction) -> bool:
    """Whether the change's old and new values are introduced as different roles: one as who
    did it ("by"), the other as where ("in", "at", ...)."""
    old = next((v for v in earlier.values if v.text == found.old_value), None)
    new = next((v for v in later.values if v.text == found.new_value), None)
    return old is not None and new is not None and _roles_differ(earlier, old, later, new)


def _roles_differ(earlier: SentenceFacts, old: Value, later: SentenceFacts, new: Value) -> bool:
    return {"agent", "place"} <= {value_role(earlier, old), value_role(later, new)}


def value_role(facts: SentenceFacts, value: Value) -> str | None:
    """What its preposition says a value is: "agent" ("by Edna Pryor"), "place" ("on Mill
    Street"), or None."""
    return _ROLES.get(_preposition(facts, value) or "")


def _preposition(facts: SentenceFacts, value: Value) -> str | None:
    """The preposition right before a value ("in" of "established in Derby"), if any."""
    match = _PREPOSITION.search(facts.text[max(0, value.start - 16) : value.start])
    return match.group(1).lower() if match else None


def _same_head(first: Value, second: Value) -> int:
    """1 when two names share their head noun (the last word before an "of", else the last
    word: "Earl" of "Anglo-Saxon Earl of Northumbria" and of "Earl of Mercia"), else 0."""
    if not first.kind == "name" == second.kind:
        return 0
    heads = [re.split(r"\s+of\s+", v.text, maxsplit=1)[0].split()[-1:] for v in (first, second)]
    return int(bool(heads[0]) and [w.lower() for w in heads[0]] == [w.lower() for w in heads[1]])


def possessor(facts: SentenceFacts, value: Value) -> bool:
    """Whether the name stands before a possessive "'s" ("India's pop band")."""
    return value.kind == "name" and facts.text[value.end : value.end + 2] in ("'s", "’s")


def _plain_words(facts: SentenceFacts) -> dict[str, str]:
    """Stem -> word of a sentence's content words outside its values, cue words left out."""
    outside = outside_values(facts, 0, len(facts.text))
    words = [w for w in search_tokens(outside) if w not in CHANGE_WORDS]
    return dict(zip(stem_words(words), words, strict=True))


def masked(sentence: SentenceFacts) -> str:
    """The sentence with its names as "X" and its numbers and dates as "N"."""
    text = sentence.text
    for value in sorted(sentence.values, key=lambda v: -v.start):
        text = text[: value.start] + ("X" if value.kind == "name" else "N") + text[value.end :]
    return text


# Last words that head many different names ("New York City", "Mexico City"): no alias by them.
# fmt: off
_GENERIC_HEADS = frozenset([
    "city", "county", "state", "states", "university", "college", "river", "records", "studios",
    "studio", "entertainment", "company", "group", "league", "club", "park", "street", "island",
    "islands", "school", "academy", "airport", "station", "network", "party", "award", "awards",
    "bank", "band", "church", "hall", "house", "centre", "center",
])
# fmt: on
_NAME_SUFFIXES = frozenset(["jr", "sr", "ii", "iii", "iv"])
_ORGANIZATION_SUFFIXES = frozenset(
    ["corporation", "corp", "inc", "ltd", "limited", "company", "co", "group", "holdings", "plc"]
)
_PRONOUN_OPENING = re.compile(r"\W*(?:he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
# "Based out of New York City, the company records ...", "In 1990, he moved ...": a fronted
# phrase, then a main clause whose subject refers back to what the text is about.
_FRONTED_THEN_REFERENCE = re.compile(
    r"[^,;.]{1,80},\s*(?:[Hh]e|[Ss]he|[Ii]t|[Tt]hey|(?:[Tt]he|[Tt]his)\s+[a-z][\w-]*)\s+[a-z]"
)


def _name_words(key: str) -> list[str]:
    """A name key's words, without its region ("e:cedar falls|iowa": the place, not Iowa) and
    without a generational suffix."""
    words = key[2:].split("|")[0].replace(".", " ").split()
    while words and words[-1] in _NAME_SUFFIXES:
        words.pop()
    return words


def _alias_key(first: str, second: str) -> bool:
    """Two name keys for one entity: equal; one's words within the other's, a single word
    only as the other's last word ("e:aguero", "e:sergio aguero") or before an
    organization's suffix ("e:acme", "e:acme corporation") -- "Indian" is no "Indian Ocean";
    or one person's names with the same last word and first names that begin alike
    ("e:eddie irvine", "e:edmund irvine jr")."""
    if not (first.startswith("e:") and second.startswith("e:")):
        return False
    a, b = _name_words(first), _name_words(second)
    if not a or not b:
        return False
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if set(short) <= set(long):
        rest = [w for w in long if w not in short]
        return (
            len(short) > 1
            or not rest
            or long[-1] == short[0]
            or all(w in _ORGANIZATION_SUFFIXES for w in rest)
        )
    # Two first names for one person begin alike ("Eddie", "Edmund"); "William Bass" and
    # "Michael Bass" are two people of one family.
    return (
        len(a) > 1
        and len(b) > 1
        and a[-1] == b[-1]
        and len(a[-1]) > 2
        and a[-1] not in _GENERIC_HEADS
        and a[0][0] == b[0][0]
    )


def _alias(first: Value, second: Value) -> bool:
    return first.kind == "name" == second.kind and _alias_key(first.key, second.key)


def _present_in(value: Value, others: Sequence[Value]) -> bool:
    """`others` hold the value: the same key, the same name told longer or shorter, the same
    date told more or less precisely."""
    for other in others:
        if other.key == value.key or _alias(value, other):
            return True
        if value.kind == "date" == other.kind and (
            value.key.startswith(other.key) or other.key.startswith(value.key)
        ):
            return True
    return False
