"""What the question asks, and which memory states it now: currency decided at query time.

The Query Graph finds contradictions at ingest, without a question, so its rules must be
strict: a later sentence that words the attribute in other words ("Bob Tran is the CEO of
Norvale Foods" after "The chief executive of Norvale Foods is Alice Moreno") counts only when
it announces a change ("now", "replaced", ...). A plain restatement -- the usual form of a
fact update -- passes unrecorded. At query time the question names the slot: what kind of
value it asks for (a date for "when", a number for "how many", a name otherwise) and, through
the evidence it retrieves, which memories speak of it. Two memories of the evidence (or a
memory read and a graph neighbour of it) contradict each other for this question when
- they were added by different commits (a later add is a later source; documents of one
  commit have no order);
- a sentence of each gives a different value of the asked kind for the same subject and the
  same attribute (`query.slot_rules`): by the graph's own rules with the question standing in
  for the update cue, where what the two sentences say about their values is alike (the
  embeddings of the sentences with their values masked, "X is the CEO of X", at least
  PARAPHRASE_COSINE apart) or the words around the values match; or, where each sentence is
  its memory's best answer to the question, by the one value of the asked kind the later
  one adds against the earlier one's value said with the same words (`answer_change`); or
  by one common word each (`word_change`);
- neither memory agrees with the other elsewhere: the later one does not state the old value
  as a fact of its own (only beside a replacement cue), the earlier one never names the new
  value (then both hold, as in "played for A, then B").
The later memory's claim is current; the earlier sentence is history. Where the graph already
decided the pair (a validated conflict, or one still open), its verdict stands.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from memory_bank.graph.contradictions import PARAPHRASE_COSINE, Contradiction, find_contradiction
from memory_bank.graph.sentence_facts import SentenceFacts, TextFacts, mentions_value, text_facts
from memory_bank.query.question import term_coverage
from memory_bank.query.slot_rules import (
    SLOT_COSINE,
    Asked,
    answer_change,
    masked,
    roles_differ,
    word_change,
)
from memory_bank.text.lexicon import MARKDOWN_HEADER, text_stems
from memory_bank.text.sentences import split_sentences

# Memories added this close together came in with one commit: they have no order between
# them (a commit stamps its memories `now + position * 1e-6`; two commits are seconds apart).
ORDER_GAP_SECONDS = 0.05
# An earlier sentence compared by the question's value is one of its memory's best answers.
ANSWER_RANK = 2
# Sentence pairs sharing no value and no frame word are compared only from this cosine.
CANDIDATE_COSINE = PARAPHRASE_COSINE
# Sentence pairs judged per question, those closest to answering it first. Dated memories that
# share many names (the turns of a meeting series) make thousands of pairs; unbounded, one such
# question held a Serve replica's only domain thread for a second and every request queued
# behind it waited. The contradiction bench judges 13 pairs or fewer for 90% of its questions
# and scores the same at 32 as at 64.
MAX_JUDGED_PAIRS = 32
_REPLACEMENT = re.compile(
    r"\b(?:not|no longer|formerly|previously|former|replac\w*|succeed\w*|instead of|rather than|"
    r"changed? from|moved from|switched from|earlier|used to|once)\b",
    re.IGNORECASE,
)
Encode = Callable[[list[str]], np.ndarray]
# A memory's facts, and a sentence's stemmed words, worked out once per process rather than
# once per question that reads them.
_text_facts = functools.lru_cache(maxsize=4096)(text_facts)


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


@dataclass(frozen=True)
class _Candidate:
    older: SlotMemory
    newer: SlotMemory
    old_facts: TextFacts
    new_facts: TextFacts
    earlier: SentenceFacts
    later: SentenceFacts
    cosine: float | None  # of the two sentences' stored vectors
    new_vector: np.ndarray | None


def ordered(older: SlotMemory, newer: SlotMemory) -> bool:
    return newer.added_at - older.added_at > ORDER_GAP_SECONDS


def slot_changes(
    question: str,
    memories: Sequence[SlotMemory],
    decided: Callable[[str, str], bool] | None = None,
    query_vector: np.ndarray | None = None,
    encode: Encode | None = None,
) -> list[SlotChange]:
    """The claims of `memories` that a later memory replaced, for what `question` asks.
    `decided(older node, newer node)`: the graph already holds a verdict on the pair.
    `query_vector` (the question's embedding) finds each memory's best answers to the
    question; `encode` embeds the masked sentences (else the stored vectors stand in)."""
    pairs = [
        (older, newer)
        for newer in memories
        for older in memories
        if older.chunk != newer.chunk
        and ordered(older, newer)
        and not (decided is not None and decided(older.node_id, newer.node_id))
    ]
    if not pairs:  # most questions: every memory read came with one commit
        return []
    asked = Asked(question)
    paired = {m.chunk: m for pair in pairs for m in pair}
    facts = {chunk: _text_facts(m.text) for chunk, m in paired.items()}
    rows = {chunk: _fact_vectors(m, facts[chunk]) for chunk, m in paired.items()}
    candidates = [
        candidate
        for older, newer in pairs
        for candidate in _candidates(
            older,
            newer,
            (facts[older.chunk], rows[older.chunk]),
            (facts[newer.chunk], rows[newer.chunk]),
        )
    ]
    if not candidates:  # most questions: no two memories of different commits to compare
        return []
    answers = {m.chunk: _answers(m, asked.terms, query_vector) for m in memories}
    if len(candidates) > MAX_JUDGED_PAIRS:
        candidates = _closest_to_the_question(candidates, answers)[:MAX_JUDGED_PAIRS]
    changes: list[SlotChange] = []
    for candidate, contradiction in zip(
        candidates, _verdicts(candidates, asked, encode), strict=True
    ):
        if contradiction is None:
            continue
        if contradiction.kind == "answer" and not (
            contradiction.old_sentence in list(answers[candidate.older.chunk])[:ANSWER_RANK]
            and contradiction.new_sentence in list(answers[candidate.newer.chunk])[:1]
        ):
            continue
        if not _agree(candidate.older, candidate.newer, contradiction):
            changes.append(
                SlotChange(candidate.older, candidate.newer, contradiction, candidate.new_vector)
            )
    return _latest(changes)


def _closest_to_the_question(
    candidates: Sequence[_Candidate], answers: dict[int, dict[str, float]]
) -> list[_Candidate]:
    """The pairs ordered by how well their two sentences answer the question together (the sum
    of their answer scores); ties, and everything without a query vector, keep their order."""

    def score(memory: SlotMemory, text: str) -> float:
        return answers[memory.chunk].get(text.strip(), 0.0)

    return sorted(
        candidates, key=lambda c: -(score(c.older, c.earlier.text) + score(c.newer, c.later.text))
    )


def _candidates(
    older: SlotMemory,
    newer: SlotMemory,
    old: tuple[TextFacts, np.ndarray],
    new: tuple[TextFacts, np.ndarray],
) -> list[_Candidate]:
    """The sentence pairs worth judging: a shared value or frame word, or close vectors.
    Each memory comes with its facts and their `_fact_vectors`."""
    (old_facts, old_rows), (new_facts, new_rows) = old, new
    # NaN where a sentence has no stored vector: no cosine, the words alone decide.
    if old_rows.shape[1] == new_rows.shape[1]:
        cosines = new_rows @ old_rows.T
    else:  # one of the two memories has no vectors at all
        cosines = np.full((len(new_rows), len(old_rows)), np.nan, dtype=np.float32)
    found = []
    for j, later in enumerate(new_facts.sentences):
        new_vector = None if np.isnan(new_rows[j, 0]) else new_rows[j]
        for i, earlier in enumerate(old_facts.sentences):
            if earlier.text == later.text:
                continue  # a sentence said again (a meeting series' boilerplate) changes nothing
            cosine = None if math.isnan(cosines[j, i]) else float(cosines[j, i])
            if (
                earlier.keys & later.keys
                or earlier.frame & later.frame
                or (cosine is not None and cosine >= CANDIDATE_COSINE)
            ):
                found.append(
                    _Candidate(
                        older, newer, old_facts, new_facts, earlier, later, cosine, new_vector
                    )
                )
    return found


def _fact_vectors(memory: SlotMemory, facts: TextFacts) -> np.ndarray:
    """One row per sentence of `facts`: its stored vector, or NaN where there is none."""
    stored = _vectors_by_text(memory)
    dimension = memory.vectors.shape[1] if memory.vectors.ndim == 2 else 1
    rows = np.full((len(facts.sentences), dimension), np.nan, dtype=np.float32)
    for number, sentence in enumerate(facts.sentences):
        vector = stored.get(sentence.text.strip())
        if vector is not None:
            rows[number] = vector
    return rows


def _verdicts(
    candidates: Sequence[_Candidate], asked: Asked, encode: Encode | None
) -> list[Contradiction | None]:
    """Each pair's change, if any. How alike two sentences are in what they say about their
    values decides some pairs: the mean of their stored vectors' cosine and of their masked
    sentences' cosine (`slot_rules.masked`), computed -- in one encode -- only for the pairs
    whose verdict depends on it; without an encoder, the stored vectors' cosine. The names
    dominate a sentence's embedding ("Satya Nadella studied in Manipal" / "Satya Nadella is
    employed by Google": 0.66); with them masked, one attribute in other words still scores
    high ("X is the CEO of X" / "The chief executive of X is X": 0.87), another one low
    (0.49)."""
    verdicts: list[Contradiction | None] = []
    open_pairs: list[int] = []
    for number, candidate in enumerate(candidates):
        # Likeness only ever lets a rule through (a paraphrase for a shared frame, a bar
        # for values said without shared words), so a pair that finds no change even as
        # alike finds none at all -- most pairs, judged once.
        alike = _judge(candidate, asked, 1.0)
        apart = None if alike is None else _judge(candidate, asked, None)
        verdicts.append(apart)
        if apart != alike:
            open_pairs.append(number)
    if not open_pairs:
        return verdicts
    similarity: dict[int, float | None] = {n: candidates[n].cosine for n in open_pairs}
    if encode is not None:
        texts = list(
            dict.fromkeys(
                masked(f) for n in open_pairs for f in (candidates[n].earlier, candidates[n].later)
            )
        )
        vectors = np.asarray(encode(texts), dtype=np.float32)
        row = {text: vectors[i] for i, text in enumerate(texts)}
        for n in open_pairs:
            candidate = candidates[n]
            masked_cosine = float(row[masked(candidate.earlier)] @ row[masked(candidate.later)])
            raw = candidate.cosine
            similarity[n] = masked_cosine if raw is None else (masked_cosine + raw) / 2
    for n in open_pairs:
        verdicts[n] = _judge(candidates[n], asked, similarity[n])
    return verdicts


def _judge(candidate: _Candidate, asked: Asked, similarity: float | None) -> Contradiction | None:
    """The change the pair makes to what the question asks, if any (the rules in turn)."""
    earlier, later = candidate.earlier, candidate.later
    earlier_about = candidate.old_facts.about(earlier)
    later_about = candidate.new_facts.about(later)
    aligned = similarity is not None and similarity >= SLOT_COSINE
    # The question names the slot: the later sentence needs no update cue of its own, and
    # sentences this alike speak of one attribute (the rules' paraphrase test).
    cued = replace(later, announces=True)
    found = find_contradiction(earlier, cued, 1.0 if aligned else 0.0, earlier_about, later_about)
    if (
        found is not None
        and _asked(found, asked.kinds, asked.question)
        and not roles_differ(earlier, later, found)
    ):
        return found
    found = word_change(earlier, later, candidate.cosine, earlier_about, later_about)
    if found is not None and _asked(found, asked.kinds, asked.question):
        return found
    return answer_change(earlier, later, asked, candidate.old_facts.principal, similarity)


def _answers(
    memory: SlotMemory, terms: frozenset[str], query_vector: np.ndarray | None
) -> dict[str, float]:
    """The memory's sentences with how well each answers the question (cosine plus the share
    of question terms, as the extractive answer scores them), best first; empty without a
    query vector."""
    if query_vector is None or len(memory.vectors) != len(memory.sentences):
        return {}
    scores = memory.vectors @ query_vector
    ranked = sorted(
        (
            -(float(score) + 0.3 * term_coverage(list(terms), text_stems(text))),
            number,
            text.strip(),
        )
        for number, (text, score) in enumerate(zip(memory.sentences, scores, strict=True))
        if not MARKDOWN_HEADER.match(text)  # a heading names a topic; it answers nothing
    )
    best: dict[str, float] = {}
    for negative, _, text in ranked:
        best.setdefault(text, -negative)  # a sentence said twice keeps its better place
    return best


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
