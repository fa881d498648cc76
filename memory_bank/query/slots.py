"""What the question asks, and which memory states it now: currency decided at query time.

The Query Graph finds contradictions at ingest, without a question, so its rules must be
strict: a later sentence that words the attribute in other words ("Bob Tran is the CEO of
Norvale Foods" after "The chief executive of Norvale Foods is Alice Moreno") counts only when
it announces a change ("now", "replaced", ...). A plain restatement -- the usual form of a
fact update -- passes unrecorded. At query time the question names the slot: what kind of
value it asks for (a date for "when", a number for "how many", a name otherwise) and, through
the evidence it retrieves, which memories speak of it. Two memories of the evidence (or a
memory read and a later graph neighbour of it) contradict each other for this question when
- they were added by different commits (a later add is a later source; documents of one
  commit have no order);
- a sentence of each gives a different value of the asked kind for the same subject and the
  same attribute, by the graph's own rules (`graph.claims.find_contradiction`) with the
  question standing in for the update cue: sentences this close in embedding
  (PARAPHRASE_COSINE) or sharing the words around their values speak of one attribute;
- neither memory agrees with the other elsewhere: the later one does not state the old value
  as a fact of its own (only beside a replacement cue), the earlier one never names the new
  value (then both hold, as in "played for A, then B").
The later memory's claim is current; the earlier sentence is history. Where the graph already
decided the pair (a validated conflict, or one still open), its verdict stands.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from memory_bank.graph.claims import (
    PARAPHRASE_COSINE,
    Contradiction,
    SentenceFacts,
    Subject,
    TextFacts,
    find_contradiction,
    mentions_value,
    same_subject,
    text_facts,
)
from memory_bank.text.lexicon import search_tokens, stem_words
from memory_bank.text.sentences import split_sentences

# Memories added this close together came in with one commit: they have no order between
# them (a commit stamps its memories `now + position * 1e-6`; two commits are seconds apart).
ORDER_GAP_SECONDS = 0.05
# Two sentences about one subject this close (cosine) that differ in one common word each say
# the same with another value ("plays the violin" / "plays the cello").
WORD_CHANGE_COSINE = 0.75
# Words that announce a change rather than state a value.
_CUE_WORDS = frozenset(
    ["now", "currently", "current", "new", "newly", "latest", "today", "actually", "still"]
)

_DATE_QUESTION = re.compile(
    r"\b(?:when|since when|(?:what|which)\s+(?:year|date|day|month|decade|century))\b",
    re.IGNORECASE,
)
_NUMBER_QUESTION = re.compile(
    r"\bhow\s+(?:many|much|long|old|tall|high|far|big|large|heavy|deep|wide|often)\b|"
    r"\b(?:population|number|amount|count|percentage|share|size|length|height|area|total|"
    r"price|cost|salary|capacity|attendance|age|rate)\b",
    re.IGNORECASE,
)
_REPLACEMENT = re.compile(
    r"\b(?:not|no longer|formerly|previously|former|replac\w*|succeed\w*|instead of|rather than|"
    r"changed? from|moved from|switched from|earlier|used to|once)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SlotMemory:
    """A memory the answer may draw on: its chunk, when it was added, its sentences."""

    chunk: int  # memory index
    node_id: str
    added_at: float
    text: str  # the chunk's raw text (what it is about: its title or first subject)
    sentences: Sequence[str]
    vectors: np.ndarray  # one row per sentence (normalized), or an empty array


@dataclass(frozen=True)
class SlotChange:
    """For the question's slot, `newer` replaced the claim `older` states."""

    older: SlotMemory
    newer: SlotMemory
    contradiction: Contradiction
    new_vector: np.ndarray | None  # the new sentence's vector, where stored


def answer_kinds(question: str) -> frozenset[str]:
    """The kinds of value the question asks for: "date" (when, what year), "number" (how
    many, the population), else "name" (who, where, which ...)."""
    kinds = set()
    if _DATE_QUESTION.search(question):
        kinds.add("date")
    if _NUMBER_QUESTION.search(question):
        kinds.add("number")
    return frozenset(kinds or {"name"})


def ordered(older: SlotMemory, newer: SlotMemory) -> bool:
    return newer.added_at - older.added_at > ORDER_GAP_SECONDS


def slot_changes(
    question: str,
    memories: Sequence[SlotMemory],
    decided: Callable[[str, str], bool] | None = None,
) -> list[SlotChange]:
    """The claims of `memories` that a later memory replaced, for what `question` asks.
    `decided(older node, newer node)`: the graph already holds a verdict on the pair."""
    kinds = answer_kinds(question)
    facts = {memory.chunk: text_facts(memory.text) for memory in memories}
    changes: list[SlotChange] = []
    for newer in memories:
        for older in memories:
            if older.chunk == newer.chunk or not ordered(older, newer):
                continue
            if decided is not None and decided(older.node_id, newer.node_id):
                continue
            for found in _pair_changes(older, newer, facts[older.chunk], facts[newer.chunk]):
                contradiction, vector = found
                if _asked(contradiction, kinds, question) and not _agree(
                    older, newer, contradiction
                ):
                    changes.append(SlotChange(older, newer, contradiction, vector))
    return _latest(changes)


def _pair_changes(
    older: SlotMemory, newer: SlotMemory, old_facts: TextFacts, new_facts: TextFacts
) -> list[tuple[Contradiction, np.ndarray | None]]:
    old_vectors = _vectors_by_text(older)
    new_vectors = _vectors_by_text(newer)
    found: list[tuple[Contradiction, np.ndarray | None]] = []
    for later in new_facts.sentences:
        later_about = new_facts.about(later)
        # The question names the slot: the later sentence needs no update cue of its own.
        cued = replace(later, announces=True)
        new_vector = new_vectors.get(later.text.strip())
        for earlier in old_facts.sentences:
            old_vector = old_vectors.get(earlier.text.strip())
            cosine = (
                float(old_vector @ new_vector)
                if old_vector is not None and new_vector is not None
                else None
            )
            if not (earlier.keys & later.keys or earlier.frame & later.frame) and (
                cosine is None or cosine < PARAPHRASE_COSINE
            ):
                continue
            earlier_about = old_facts.about(earlier)
            contradiction = find_contradiction(earlier, cued, cosine, earlier_about, later_about)
            if contradiction is None:
                contradiction = word_change(earlier, later, cosine, earlier_about, later_about)
            if contradiction is not None:
                found.append((contradiction, new_vector))
    return found


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


def _plain_words(facts: SentenceFacts) -> dict[str, str]:
    """Stem -> word of a sentence's content words outside its values, cue words left out."""
    text = list(facts.text)
    for value in facts.values:
        text[value.start : value.end] = " " * (value.end - value.start)
    words = [w for w in search_tokens("".join(text)) if w not in _CUE_WORDS]
    return dict(zip(stem_words(words), words, strict=True))


def _asked(contradiction: Contradiction, kinds: frozenset[str], question: str) -> bool:
    """The values are of a kind the question asks for (a common word for a question about a
    name: "which instrument"), and neither is given by the question."""
    kind = contradiction.kind.split(":", 1)[0]
    if kind not in kinds and not (kind == "word" and "name" in kinds):
        return False
    return not (
        mentions_value(question, contradiction.old_value)
        or mentions_value(question, contradiction.new_value)
    )


def _agree(older: SlotMemory, newer: SlotMemory, contradiction: Contradiction) -> bool:
    """Whether the two memories hold both values elsewhere: the earlier one names the new
    value, or the later one states the old value other than as what it replaced."""
    if any(mentions_value(s, contradiction.new_value) for s in _sentences(older)):
        return True
    for sentence in _sentences(newer):
        if not mentions_value(sentence, contradiction.old_value):
            continue
        if sentence.strip() == contradiction.new_sentence.strip() or _REPLACEMENT.search(sentence):
            continue  # "..., not Portland as earlier reported": the value it replaced
        return True
    return False


def _latest(changes: list[SlotChange]) -> list[SlotChange]:
    """One change per old sentence: the latest memory's (a fact updated twice holds its last
    value)."""
    best: dict[tuple[int, str], SlotChange] = {}
    for change in changes:
        key = (change.older.chunk, change.contradiction.old_sentence)
        kept = best.get(key)
        if kept is None or change.newer.added_at > kept.newer.added_at:
            best[key] = change
    superseded_sentences = {
        (change.older.chunk, change.contradiction.old_sentence) for change in best.values()
    }
    # A later value that was itself replaced is no current claim.
    return [
        change
        for change in best.values()
        if (change.newer.chunk, change.contradiction.new_sentence) not in superseded_sentences
    ]


def _sentences(memory: SlotMemory) -> Sequence[str]:
    return memory.sentences or split_sentences(memory.text)


def _vectors_by_text(memory: SlotMemory) -> dict[str, np.ndarray]:
    if len(memory.vectors) != len(memory.sentences):
        return {}
    return {
        text.strip(): np.asarray(vector, dtype=np.float32)
        for text, vector in zip(memory.sentences, memory.vectors, strict=True)
    }
