"""The offline memory analysis and integration (seed 001 §3.2.3-3.2.4), as plain functions.

Analysis judges a new node against candidate nodes in two independent phases: first conflict
or merge, then -- only for a node with neither -- related. The rules:
- conflict: a sentence of the later node contradicts one of the earlier (`contradictions.py`: a
  different number, date or name for the same subject and attribute); between a session's
  sources, also two sentences worded the same but for one span (`span_difference.py`), and not
  two that differ in more than one span with no cue;
- merge: the two say the same thing (cosine >= MERGE_COSINE and most words shared);
- related: cosine >= RELATED_COSINE, or a shared name with cosine >= RELATED_NAME_COSINE; both
  nodes take the other's keywords that their own text mentions.
Integration merges nodes into one: a merge keeps the fullest summary plus what the others add;
a validated conflict keeps the claim the validation supports and sends the other to history.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from memory_bank.graph.contradictions import Contradiction, find_contradictions, overlap
from memory_bank.graph.sentence_facts import SentenceFacts, mentions_value, sentence_facts
from memory_bank.graph.span_difference import differs_in_several_spans, span_contradictions
from memory_bank.graph.subjects import TextFacts, text_facts
from memory_bank.graph.value_identity import one_holds_the_other, value_key_of
from memory_bank.text.lexicon import stemmed_search_tokens
from memory_bank.text.sentences import split_sentences

MERGE_COSINE = 0.92
MERGE_WORD_SHARE = 0.7  # of the shorter node's distinct stems found in the other
RELATED_COSINE = 0.5
RELATED_NAME_COSINE = 0.3
MAX_KEYWORDS = 12
NEAR_DUPLICATE_SENTENCE = 0.8  # stem overlap above which a sentence adds nothing
_RELATION_NOTE = re.compile(r"\s*\(related to: [^)]*\)$")


@dataclass
class NodeView:
    """What analysis reads of a node (never written back): its text and its vectors."""

    id: str
    summary: str
    context: str
    keywords: list[str]
    timestamp: float
    vector: np.ndarray
    text: str  # the text claims are read from: the summary and the raw content or chunk
    title: str | None = None
    sentence_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    # The stored document a memory node comes from: one document does not contradict itself
    # (its chunks are parts of one account, with no order between them).
    document: str = ""
    known_facts: Mapping[str, SentenceFacts] = field(default_factory=dict)  # stored, by sentence
    _facts: TextFacts | None = None
    _claims: TextFacts | None = None

    @property
    def facts(self) -> TextFacts:
        if self._facts is None:
            self._facts = text_facts(self.text, self.title, known=self.known_facts)
        return self._facts

    @property
    def claims(self) -> TextFacts:
        """Every sentence, with or without a value (`span_difference` reads phrases too)."""
        if self._claims is None:
            self._claims = text_facts(
                self.text, self.title, all_sentences=True, known=self.known_facts
            )
        return self._claims

    def release(self) -> None:
        """Drop the sentences parsed and the vectors read: the view is read no more."""
        self._facts = self._claims = None
        self.sentence_vectors = {}
        self.known_facts = {}


@dataclass
class Relationship:
    existing_node_id: str
    relationship: str  # "conflict" | "merge" | "related" | "unrelated"
    confidence: float
    reasoning: str
    contradictions: list[Contradiction] = field(default_factory=list)
    merge_strategy: str | None = None
    context_update_new: str | None = None
    context_update_existing: str | None = None
    keywords_update_new: list[str] | None = None
    keywords_update_existing: list[str] | None = None

    @property
    def conflict_description(self) -> str | None:
        return "; ".join(c.describe() for c in self.contradictions) or None


@dataclass
class Integration:
    summary: str
    context: str
    keywords: list[str]
    neighbour_updates: dict[str, tuple[str, list[str]]]  # node id -> (context, keywords)
    description: str
    current: str | None = None  # a conflict's node whose claim holds


def judge_conflict_or_merge(
    new: NodeView, candidates: Sequence[NodeView], one_span: bool = False
) -> list[Relationship]:
    """Phase one: conflict (or merge) of `new` with each candidate; others are left out.
    `one_span`: two claims worded the same but for one span conflict too, with no cue
    (`span_difference`): where neither is known to replace the other, as between a session's
    sources."""
    found = []
    for candidate in candidates:
        older, newer = (
            (candidate, new) if candidate.timestamp <= new.timestamp else (new, candidate)
        )
        contradictions = find_contradictions(
            older.facts, newer.facts, cosine=_sentence_cosine(older, newer)
        )
        if one_span:
            contradictions = [c for c in contradictions if not _two_facts(c)]
            contradictions = contradictions or span_contradictions(older.claims, newer.claims)
        if contradictions:
            found.append(
                Relationship(
                    existing_node_id=candidate.id,
                    relationship="conflict",
                    confidence=0.9,
                    reasoning=contradictions[0].describe(),
                    contradictions=contradictions,
                )
            )
            continue
        cosine = float(new.vector @ candidate.vector)
        if cosine >= MERGE_COSINE and word_share(new.text, candidate.text) >= MERGE_WORD_SHARE:
            found.append(
                Relationship(
                    existing_node_id=candidate.id,
                    relationship="merge",
                    confidence=round(cosine, 3),
                    reasoning=f"near-duplicates (cosine {cosine:.2f})",
                    merge_strategy="keep the fuller summary, add what the other adds",
                )
            )
    return found


def _two_facts(contradiction: Contradiction) -> bool:
    """A contradiction the rules found between sentences worded alike that differ in more than
    one span, with no cue that the later replaces the earlier: two facts ("opens at 9 am on
    weekdays" / "at 11 am on Sundays"; "the head teacher" / "the deputy head"). The rules
    found the two about one subject: their subject phrases may name it differently."""
    new = sentence_facts(contradiction.new_sentence)
    return not (new.announces or new.replaces) and differs_in_several_spans(
        contradiction.old_sentence,
        contradiction.new_sentence,
        contradiction.old_value,
        one_subject=True,
    )


def judge_related(new: NodeView, candidates: Sequence[NodeView]) -> list[Relationship]:
    """Phase two: which candidates are related, with both nodes' keyword updates."""
    found = []
    new_names = _names(new)
    for candidate in candidates:
        cosine = float(new.vector @ candidate.vector)
        shares_name = bool(new_names & _names(candidate))
        if cosine < RELATED_COSINE and not (shares_name and cosine >= RELATED_NAME_COSINE):
            continue
        found.append(
            Relationship(
                existing_node_id=candidate.id,
                relationship="related",
                confidence=round(max(cosine, 0.0), 3),
                reasoning=f"cosine {cosine:.2f}" + (", a shared name" if shares_name else ""),
                keywords_update_new=_borrow_keywords(new, candidate),
                keywords_update_existing=_borrow_keywords(candidate, new),
            )
        )
    return found


def analyze_offline(
    new: NodeView, candidates: Sequence[NodeView], judge: Sequence[str], one_span: bool = False
) -> list[Relationship]:
    """One call of the analysis role: `judge` is ["conflict", "merge"] or ["related"]
    (`one_span`: see `judge_conflict_or_merge`)."""
    if "related" in judge:
        return judge_related(new, candidates)
    return judge_conflict_or_merge(new, candidates, one_span)


def two_phase(
    analyze: Callable[[NodeView, Sequence[NodeView], Sequence[str]], list[Relationship]],
    new: NodeView,
    candidates: Sequence[NodeView],
) -> list[Relationship]:
    """Seed 001 §3.2.3: conflict/merge first; related only if neither was found."""
    if not candidates:
        return []
    first = [
        r
        for r in analyze(new, candidates, ["conflict", "merge"])
        if r.relationship in ("conflict", "merge")
    ]
    if first:
        return first
    return [r for r in analyze(new, candidates, ["related"]) if r.relationship == "related"]


def integrate_offline(
    nodes: Sequence[NodeView],
    neighbours: dict[str, tuple[str, list[str]]],
    trigger: str,
    validation: str | None = None,
    contradictions: Sequence[Contradiction] = (),
) -> Integration:
    """Merge `nodes` into one (seed 001 §3.2.4). For a conflict, the node whose claims the
    validation text supports is current; the other's contradicted sentences go to history."""
    ordered = sorted(nodes, key=lambda node: (-node.timestamp, node.id))  # newest first
    current: NodeView | None = None
    dropped: set[str] = set()
    if trigger == "conflict":
        current = _validated(ordered, validation or "", contradictions)
        for contradiction in contradictions:
            losing_value, losing_sentence = (
                (contradiction.old_value, contradiction.old_sentence)
                if _holds(current, contradiction.new_sentence)
                else (contradiction.new_value, contradiction.new_sentence)
            )
            dropped.add(losing_sentence)
            dropped.update(
                s
                for node in ordered
                for s in split_sentences(node.summary)
                if mentions_value(s, losing_value)
            )
        base = current
    else:
        base = max(ordered, key=lambda node: len(node.summary))
    sentences = [s for s in split_sentences(base.summary) if s not in dropped]
    for node in ordered:
        if node is base:
            continue
        for sentence in split_sentences(node.summary):
            if sentence not in dropped and not _near_duplicate(sentence, sentences):
                sentences.append(sentence)
    summary = " ".join(sentences) or base.summary
    keywords = list(dict.fromkeys(k for node in [base, *ordered] for k in node.keywords))[
        :MAX_KEYWORDS
    ]
    context = _RELATION_NOTE.sub("", base.context)
    if trigger == "merge":  # the merged node is about all it merged
        others = [_RELATION_NOTE.sub("", n.context) for n in ordered if n is not base]
        context = "; ".join(dict.fromkeys(c for c in [context, *others] if c))[:200]
    updates = {
        node_id: (with_relation(neighbour_context, context), neighbour_keywords)
        for node_id, (neighbour_context, neighbour_keywords) in neighbours.items()
    }
    ids = ", ".join(node.id for node in ordered)
    if trigger == "conflict" and current is not None:
        held = ", ".join(dict.fromkeys(_held_values(current, contradictions)))
        description = f"merged {ids} after cross-validation: {held or current.id} holds; the contradicted claims are history"
    else:
        description = f"merged near-duplicates {ids}"
    return Integration(
        summary=summary,
        context=context,
        keywords=keywords,
        neighbour_updates=updates,
        description=description,
        current=current.id if current is not None else None,
    )


def with_relation(context: str, other_context: str) -> str:
    """A context that says what it relates to, replacing any earlier note of that kind."""
    base = _RELATION_NOTE.sub("", context).strip()
    other = _RELATION_NOTE.sub("", other_context).strip()
    if not other or other == base:
        return base
    return f"{base} (related to: {other[:80]})"


def word_share(first: str, second: str) -> float:
    return overlap(set(stemmed_search_tokens(first)), set(stemmed_search_tokens(second)))


# --- helpers --------------------------------------------------------------------------------


def _validated(
    nodes: Sequence[NodeView], validation: str, contradictions: Sequence[Contradiction]
) -> NodeView:
    """The node the validation text supports: it states that node's values (`_support`) and
    not the others'; when the text decides nothing, the newest node (the later claim) holds."""
    scores = {}
    for node in nodes:
        score = 0
        for contradiction in contradictions:
            for value, other, sentence in (
                (contradiction.old_value, contradiction.new_value, contradiction.old_sentence),
                (contradiction.new_value, contradiction.old_value, contradiction.new_sentence),
            ):
                if _holds(node, sentence):
                    score += _support(validation, value, other)
                    score -= 1 if _contradicted_by(sentence, validation) else 0
        scores[node.id] = score
    best = max(scores.values())
    # nodes come newest first: a tie keeps the later claim
    return next(node for node in nodes if scores[node.id] == best)


_LOWER_WORD = re.compile(r"\b(?!(?:of|the|and|de|da|von|van)\b)[a-z]{2,}")


def _support(validation: str, value: str, other: str) -> float:
    """How far the validation text states `value` against `other`: as it is (1), or (one half)
    as a value that holds it or that it holds ("12 March 1958" for "1958", "Harbour Road
    Industrial Estate, Dorrington" for "Dorrington"), or, for a common noun phrase, by a word
    of it the other lacks ("covered in slate" for "Welsh slate" against "copper sheet")."""
    if mentions_value(validation, value):
        return 1.0
    key = value_key_of(value)
    if key is None or (key.startswith("e:") and _LOWER_WORD.search(value)):  # "Welsh slate"
        own = set(stemmed_search_tokens(value)) - set(stemmed_search_tokens(other))
        return 0.5 if own & set(stemmed_search_tokens(validation)) else 0.0
    if key[:2] not in ("d:", "e:"):
        return 0.0
    found = [v.key for v in sentence_facts(validation).values if v.key[:2] == key[:2]]
    return 0.5 if any(one_holds_the_other(key, stated) for stated in found) else 0.0


def _holds(node: NodeView, sentence: str) -> bool:
    return sentence in node.text or sentence in node.summary


def _contradicted_by(sentence: str, validation: str) -> bool:
    return bool(find_contradictions(text_facts(sentence), text_facts(validation), limit=1))


def _held_values(node: NodeView, contradictions: Sequence[Contradiction]) -> list[str]:
    return [c.new_value if _holds(node, c.new_sentence) else c.old_value for c in contradictions]


def _near_duplicate(sentence: str, kept: Sequence[str]) -> bool:
    return any(word_share(sentence, other) >= NEAR_DUPLICATE_SENTENCE for other in kept)


def _names(node: NodeView) -> set[str]:
    return {v.key for facts in node.facts.sentences for v in facts.values if v.kind == "name"}


def _borrow_keywords(node: NodeView, other: NodeView) -> list[str] | None:
    """`node`'s keywords plus those of `other` that `node`'s own text mentions."""
    text = node.text.lower()
    added = [k for k in other.keywords if k not in node.keywords and k.lower() in text]
    if not added:
        return None
    return [*node.keywords, *added][:MAX_KEYWORDS]


def _sentence_cosine(older: NodeView, newer: NodeView) -> Callable[[str, str], float | None] | None:
    if not older.sentence_vectors or not newer.sentence_vectors:
        return None

    def cosine(old_sentence: str, new_sentence: str) -> float | None:
        a = older.sentence_vectors.get(old_sentence)
        b = newer.sentence_vectors.get(new_sentence)
        if a is None or b is None:
            return None
        return float(a.astype(np.float32) @ b.astype(np.float32))  # stored in half precision

    return cosine
