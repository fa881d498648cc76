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
  by one common word each (`word_change`); or, whatever else the two sentences say, where
  each memory's answer to the question states its attribute in the question's own words
  (`query.goal_answers`, the reading a session gives its task goal);
- neither memory agrees with the other elsewhere: the later one does not state the old value
  as a fact of its own (only beside a replacement cue), the earlier one never names the new
  value (then both hold, as in "played for A, then B").
The later memory's claim is current; the earlier sentence is history. Where the graph already
decided the pair (a validated conflict, or one still open), its verdict stands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from memory_bank.graph.contradictions import Contradiction, find_contradiction
from memory_bank.graph.sentence_facts import SentenceFacts, mentions_value, sentence_facts
from memory_bank.graph.subjects import Subject, TextFacts, subjects_about, text_facts
from memory_bank.graph.value_identity import same_kind
from memory_bank.query.goal_answers import Goal, GoalAnswer
from memory_bank.query.goal_disagreement import disagreement
from memory_bank.query.question import term_coverage
from memory_bank.query.slot_pairs import (
    Candidate,
    SentencePair,
    SentencePairs,
    SlotMemory,
    fact_vectors,
    sentence_pairs,
    stored_vectors,
)
from memory_bank.query.slot_rules import (
    SLOT_COSINE,
    Asked,
    answer_change,
    masked,
    roles_differ,
    word_change,
)
from memory_bank.text.cues import SET_ASIDE_CUES
from memory_bank.text.lexicon import MARKDOWN_HEADER, text_stems
from memory_bank.text.sentences import split_sentences

# Memories added this close together came in with one commit: they have no order between
# them (a commit stamps its memories `now + position * 1e-6`; two commits are seconds apart).
ORDER_GAP_SECONDS = 0.05
# An earlier sentence compared by the question's value is one of its memory's best answers.
ANSWER_RANK = 2
# Sentence pairs judged per question, those closest to answering it first. Dated memories that
# share many names (the turns of a meeting series) make thousands of pairs; unbounded, one such
# question held a Serve replica's only domain thread long enough for every request queued
# behind it to wait. The contradiction bench needs far fewer pairs for nearly all its questions
# and scores the same with twice this bound.
MAX_JUDGED_PAIRS = 32
# Sentence pairs whose question-free verdicts (`_question_free_changes`) are kept per process.
RULE_CACHE_SIZE = 16384
Encode = Callable[[list[str]], np.ndarray]
# A memory's facts, and a sentence's stemmed words, worked out once per process rather than
# once per question that reads them.
_text_facts = functools.lru_cache(maxsize=4096)(text_facts)


@functools.lru_cache(maxsize=4096)
def _every_sentence(text: str) -> TextFacts:
    return text_facts(text, all_sentences=True)


@dataclass(frozen=True)
class SlotChange:
    """For the question's slot, `newer` replaced the claim `older` states."""

    older: SlotMemory
    newer: SlotMemory
    contradiction: Contradiction
    new_vector: np.ndarray | None  # the new sentence's vector, where stored


def ordered(older: SlotMemory, newer: SlotMemory) -> bool:
    return newer.added_at - older.added_at > ORDER_GAP_SECONDS


def slot_changes(
    question: str,
    memories: Sequence[SlotMemory],
    decided: Callable[[str, str], bool] | None = None,
    query_vector: np.ndarray | None = None,
    encode: Encode | None = None,
    known_pairs: SentencePairs | None = None,
) -> list[SlotChange]:
    """The claims of `memories` that a later memory replaced, for what `question` asks.
    `decided(older node, newer node)`: the graph already holds a verdict on the pair.
    `query_vector` (the question's embedding) finds each memory's best answers to the
    question; `encode` embeds the masked sentences (else the stored vectors stand in);
    `known_pairs` keeps the sentence pairs of the store's memories across questions."""
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
    facts: dict[int, tuple[TextFacts, np.ndarray]] = {}

    def facts_of(memory: SlotMemory) -> tuple[TextFacts, np.ndarray]:
        if memory.chunk not in facts:
            text = _text_facts(memory.text)
            facts[memory.chunk] = (text, fact_vectors(memory, text))
        return facts[memory.chunk]

    def between(older: SlotMemory, newer: SlotMemory) -> list[SentencePair]:
        if known_pairs is not None:
            return known_pairs.between(older, newer, facts_of)
        return sentence_pairs(facts_of(older), facts_of(newer))

    candidates = [
        Candidate(older, newer, pair) for older, newer in pairs for pair in between(older, newer)
    ]
    if not candidates:  # most questions: no two memories of different commits to compare
        return []
    goal = Goal(question)
    own = _OwnAnswers(goal)
    by_answers = _answer_changes(goal, pairs, own)
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
        contradiction = _asked_old_side(goal, contradiction, own(candidate.older))
        if contradiction is not None and not _agree(
            candidate.older, candidate.newer, contradiction
        ):
            changes.append(
                SlotChange(
                    candidate.older, candidate.newer, contradiction, candidate.pair.new_vector
                )
            )
    # Where both memories answer the question in its own words, their answers say which
    # claim changed: a sentence pair judged without the question may be another attribute.
    by_answers = [c for c in by_answers if not _agree(c.older, c.newer, c.contradiction)]
    answered = {(c.older.chunk, c.newer.chunk) for c in by_answers}
    changes = [c for c in changes if (c.older.chunk, c.newer.chunk) not in answered]
    return _latest(changes + by_answers)


class _OwnAnswers:
    """Each memory's answer to the question in its own words (`goal_answers`, no paraphrase:
    a replacement sets a claim aside as history, where a session's conflict only asks for a
    check), read once per memory. Every sentence is read; a common noun phrase may be the
    answer ("roofed with thatch")."""

    def __init__(self, goal: Goal) -> None:
        self._goal = goal
        self._answers: dict[int, GoalAnswer | None] = {}

    def __call__(self, memory: SlotMemory) -> GoalAnswer | None:
        if not self._goal.names or self._goal.plural:
            return None
        if memory.chunk not in self._answers:
            self._answers[memory.chunk] = self._goal.answer(_every_sentence(memory.text), None)
        return self._answers[memory.chunk]


def _answer_changes(
    goal: Goal, pairs: Sequence[tuple[SlotMemory, SlotMemory]], own: _OwnAnswers
) -> list[SlotChange]:
    """The pairs whose two memories each state, in the question's own words, a different value
    for what it asks: the later one's replaced the earlier one's."""
    changes = []
    for older, newer in pairs:
        earlier, later = own(older), own(newer)
        if earlier is None or later is None:
            continue
        found = disagreement(goal, earlier, later)
        if found is not None:
            vector = stored_vectors(newer).get(later.sentence.text.strip())
            changes.append(SlotChange(older, newer, found, vector))
    return changes


def _asked_old_side(
    goal: Goal, judged: Contradiction, earlier: GoalAnswer | None
) -> Contradiction | None:
    """A judged change, its old side what the earlier memory says in the question's own words
    where the judged old sentence says none of them: a sentence pair judged without the
    question may pair the new value with another of the memory's values ("near the village
    of Quenmoor" for "Who designed Quenmoor House?", where the memory says "designed by John
    Pellow"). The answer must be a value of the new one's kind, unit and all. None where the
    earlier memory's own answer is the new value."""
    if earlier is None or not earlier.stated or not earlier.values:
        return judged
    if goal.states_attribute(judged.old_sentence):
        return judged  # the judge's old sentence speaks of what is asked
    answer = earlier.values[0]
    new_kinds = [
        v.kind for v in sentence_facts(judged.new_sentence).values if v.text == judged.new_value
    ]
    new_kind = new_kinds[0] if new_kinds else "word"
    if not same_kind(answer.kind, new_kind) or mentions_value(answer.text, judged.old_value):
        return judged
    if mentions_value(earlier.sentence.text, judged.new_value):
        return None
    return replace(
        judged, old_sentence=earlier.sentence.text, old_value=answer.text, kind=answer.kind
    )


def _closest_to_the_question(
    candidates: Sequence[Candidate], answers: dict[int, dict[str, float]]
) -> list[Candidate]:
    """The pairs ordered by how well their two sentences answer the question together (the sum
    of their answer scores); ties, and everything without a query vector, keep their order."""

    def score(memory: SlotMemory, text: str) -> float:
        return answers[memory.chunk].get(text.strip(), 0.0)

    return sorted(
        candidates,
        key=lambda c: -(score(c.older, c.pair.earlier.text) + score(c.newer, c.pair.later.text)),
    )


def _verdicts(
    candidates: Sequence[Candidate], asked: Asked, encode: Encode | None
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
        alike = _judge(candidate.pair, asked, 1.0)
        apart = None if alike is None else _judge(candidate.pair, asked, None)
        verdicts.append(apart)
        if apart != alike:
            open_pairs.append(number)
    if not open_pairs:
        return verdicts
    similarity: dict[int, float | None] = {n: candidates[n].pair.cosine for n in open_pairs}
    if encode is not None:
        texts = list(
            dict.fromkeys(
                masked(f)
                for n in open_pairs
                for f in (candidates[n].pair.earlier, candidates[n].pair.later)
            )
        )
        vectors = np.asarray(encode(texts), dtype=np.float32)
        row = {text: vectors[i] for i, text in enumerate(texts)}
        for n in open_pairs:
            pair = candidates[n].pair
            masked_cosine = float(row[masked(pair.earlier)] @ row[masked(pair.later)])
            raw = pair.cosine
            similarity[n] = masked_cosine if raw is None else (masked_cosine + raw) / 2
    for n in open_pairs:
        verdicts[n] = _judge(candidates[n].pair, asked, similarity[n])
    return verdicts


def _judge(pair: SentencePair, asked: Asked, similarity: float | None) -> Contradiction | None:
    """The change the pair makes to what the question asks, if any (the rules in turn)."""
    aligned = similarity is not None and similarity >= SLOT_COSINE
    old_principal = pair.old_facts.referent(pair.earlier)
    new_principal = pair.new_facts.referent(pair.later)
    by_rules, by_word = _question_free_changes(
        pair.earlier, pair.later, old_principal, new_principal, aligned, pair.cosine
    )
    if by_rules is not None and _asked(by_rules, asked.kinds, asked.question):
        return by_rules
    if by_word is not None and _asked(by_word, asked.kinds, asked.question):
        return by_word
    return answer_change(pair.earlier, pair.later, asked, old_principal, similarity)


@functools.lru_cache(maxsize=RULE_CACHE_SIZE)
def _question_free_changes(
    earlier: SentenceFacts,
    later: SentenceFacts,
    old_principal: Subject,
    new_principal: Subject,
    aligned: bool,
    cosine: float | None,
) -> tuple[Contradiction | None, Contradiction | None]:
    """The change the graph's rules find in the pair, and the one-word change: the question
    only decides whether it asks for such values. The same sentence pairs are judged question
    after question (a meeting series' turns), and these rules were a large share of the cost
    of such a question, so each pair is judged once per process. `aligned`: the pair is alike
    enough to speak of one attribute."""
    earlier_about = subjects_about(old_principal, earlier)
    later_about = subjects_about(new_principal, later)
    # The question names the slot: the later sentence needs no update cue of its own, and
    # sentences this alike speak of one attribute (the rules' paraphrase test).
    cued = replace(later, announces=True)
    found = find_contradiction(earlier, cued, 1.0 if aligned else 0.0, earlier_about, later_about)
    if found is not None and roles_differ(earlier, later, found):
        found = None
    return found, word_change(earlier, later, cosine, earlier_about, later_about)


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
        (-(float(score) + 0.3 * term_coverage(list(terms), text_stems(text))), number, text.strip())
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
        if sentence.strip() == contradiction.new_sentence.strip() or SET_ASIDE_CUES.search(
            sentence
        ):
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
    # A later value that was itself replaced is no current claim.
    return [c for c in best.values() if (c.newer.chunk, c.contradiction.new_sentence) not in best]


def _sentences(memory: SlotMemory) -> Sequence[str]:
    return memory.sentences or split_sentences(memory.text)
