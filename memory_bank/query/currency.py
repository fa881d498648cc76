"""What is current: the answer and the search prefer the claims that replaced others.

The Query Graph records, for every validated conflict, which memory's claim holds and which is
history (`graph.view.Supersession`). At answer time, a sentence of a memory read that states a
superseded value -- the conflict's own sentence, or another one naming the old value for the
same subject without the new one -- leaves the evidence; where such a sentence would have
been part of the answer, the sentence stating the current value takes its place (read from
the current memory, pulled in if the agent did not read it), and the replaced claim is
reported as history with both timestamps. Search does the same by rank: the current memory
is placed above a hit whose matching claim was superseded, which carries the history note.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from memory_bank.graph.claims import mentions_value, text_facts
from memory_bank.graph.view import GraphView, Supersession
from memory_bank.index.corpus import StoreCorpus
from memory_bank.index.embedding import TextEncoder
from memory_bank.query.answering import ANSWER_MARGIN, AnswerSentence
from memory_bank.query.question import stem_all, term_coverage
from memory_bank.schemas import HistoryNote, SearchHit
from memory_bank.text.lexicon import search_tokens

SESSION_MEMORY = -1  # AnswerSentence.chunk of a sentence from a session's memory (no file)


@dataclass
class Reconciled:
    sentences: list[AnswerSentence]
    history: list[HistoryNote] = field(default_factory=list)
    extra_chunks: list[int] = field(default_factory=list)  # current memories pulled in


class Currency:
    def __init__(self, view: GraphView, corpus: StoreCorpus, embedder: TextEncoder | None) -> None:
        self.view = view
        self.corpus = corpus
        self.embedder = embedder
        self._index_of_chunk = {chunk_id: i for i, chunk_id in enumerate(corpus.chunk_ids)}

    def supersessions(self, indices: Iterable[int]) -> dict[int, list[Supersession]]:
        found = {}
        for index in indices:
            if 0 <= index < len(self.corpus.chunk_ids):
                claims = self.view.superseded_claims(self.corpus.chunk_ids[index])
                if claims:
                    found[index] = claims
        return found

    # --- answers ----------------------------------------------------------------------------

    def reconcile(
        self,
        sentences: list[AnswerSentence],
        terms: list[str],
        query_vector: np.ndarray,
        select: Callable[[list[AnswerSentence], list[str]], list[AnswerSentence]],
    ) -> Reconciled:
        """`sentences` (scored, best first) without superseded claims; where one would have
        been chosen, the current claim's sentence in its place, with its history note."""
        claims = self.supersessions({s.chunk for s in sentences})
        if not claims or not sentences:
            return Reconciled(sentences)
        stale: dict[tuple[int, int], Supersession] = {}
        for sentence in sentences:
            claim = _stale_claim(sentence.text, claims.get(sentence.chunk, []))
            if claim is not None:
                stale[(sentence.chunk, sentence.number)] = claim
        if not stale:
            return Reconciled(sentences)
        chosen = {(s.chunk, s.number) for s in select(sentences, terms)}
        best = sentences[0].score
        kept = [s for s in sentences if (s.chunk, s.number) not in stale]
        history: list[HistoryNote] = []
        extra: list[int] = []
        for sentence in sentences:
            claim = stale.get((sentence.chunk, sentence.number))
            if claim is None or not (
                (sentence.chunk, sentence.number) in chosen
                or sentence.score >= best - ANSWER_MARGIN
            ):
                continue
            note = self.note(claim)
            if note not in history:
                history.append(note)
            current = self._current_sentence(claim, query_vector, terms)
            if current is None:
                continue
            current = replace(current, score=max(current.score, sentence.score) + 1e-6)
            kept = [s for s in kept if (s.chunk, s.number) != (current.chunk, current.number)]
            kept.append(current)
            if current.chunk >= 0 and current.chunk not in extra:
                extra.append(current.chunk)
        kept.sort(key=lambda s: (-s.score, s.chunk, s.number))
        return Reconciled(kept, history, extra)

    def current_notes(self, sentences: Sequence[AnswerSentence]) -> list[HistoryNote]:
        """History of the claims the answer's sentences replaced (their memory is the current
        side of a resolved conflict and the sentence states the current value)."""
        notes: list[HistoryNote] = []
        for sentence in sentences:
            if not 0 <= sentence.chunk < len(self.corpus.chunk_ids):
                continue
            node_id = self.corpus.chunk_ids[sentence.chunk]
            graph = self.view.state.graph
            for conflict in graph.conflicts_of(node_id):
                if conflict.status != "resolved" or conflict.current != node_id:
                    continue
                text = sentence.text.strip()
                if text != conflict.new_sentence.strip() and not (
                    mentions_value(text, conflict.new_value)
                    and _same_topic(text, conflict.new_sentence)
                ):
                    continue
                superseded = graph.nodes.get(conflict.superseded or "")
                current = self.view.standing(node_id)
                if superseded is None or current is None:
                    continue
                note = self.note(Supersession(conflict, superseded, current))
                if note not in notes:
                    notes.append(note)
        return notes

    def _current_sentence(
        self, claim: Supersession, query_vector: np.ndarray, terms: list[str]
    ) -> AnswerSentence | None:
        conflict = claim.conflict
        node = claim.current_node
        index = self._index_of_chunk.get(node.id)
        wanted = conflict.new_sentence.strip()
        if index is not None:
            texts, vectors = self.corpus.chunk_sentences(index)
            for number, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                if text.strip() == wanted or (
                    mentions_value(text, conflict.new_value) and _same_topic(text, wanted)
                ):
                    return _scored(index, number, text, vector, query_vector, terms)
            return None
        if self.embedder is None:
            return None
        text = (
            wanted
            if wanted and wanted in f"{node.summary} {node.content}"
            else _stating(node.summary, conflict.new_value) or wanted
        )
        if not text:
            return None
        vector = np.asarray(self.embedder.encode([text])[0], dtype=np.float32)
        return _scored(SESSION_MEMORY, 0, text, vector, query_vector, terms)

    def note(self, claim: Supersession) -> HistoryNote:
        conflict = claim.conflict
        return HistoryNote(
            subject=conflict.subject,
            attribute=conflict.attribute,
            superseded_value=conflict.old_value,
            current_value=conflict.new_value,
            superseded_text=conflict.old_sentence,
            current_text=conflict.new_sentence,
            superseded_source=self._source(claim.superseded_node.id),
            current_source=self._source(claim.current_node.id),
            recorded_at=_iso(claim.superseded_node.timestamp),
            superseded_at=_iso(conflict.resolved_at or claim.current_node.timestamp),
            conflict_id=conflict.id,
        )

    def _source(self, node_id: str) -> str:
        index = self._index_of_chunk.get(node_id)
        return self.corpus.chunk_path(index) if index is not None else f"memory:{node_id}"

    # --- search -----------------------------------------------------------------------------

    def rerank(
        self, hits: list[SearchHit], query: str, hit_for: Callable[[int, float], SearchHit]
    ) -> list[SearchHit]:
        """Hits with history notes; the current memory of a superseded matching claim right
        above the hit that states the old one."""
        terms = list(stem_all(search_tokens(query)))
        indices = [self._index_of_chunk.get(h.chunk_id) for h in hits if h.kind == "chunk"]
        claims = self.supersessions(i for i in indices if i is not None)
        if not claims:
            return hits
        ranked: list[SearchHit] = []
        for hit in hits:
            index = self._index_of_chunk.get(hit.chunk_id) if hit.kind == "chunk" else None
            relevant = [
                c
                for c in claims.get(index, [])
                if term_coverage(terms, stem_all(search_tokens(c.conflict.old_sentence))) > 0
            ]
            for claim in relevant:
                current_index = self._index_of_chunk.get(claim.current_node.id)
                if current_index is None:
                    continue
                ranked = [h for h in ranked if h.chunk_id != claim.current_node.id]
                ranked.append(hit_for(current_index, hit.score))
            notes = [self.note(c) for c in relevant]
            if any(h.chunk_id == hit.chunk_id for h in ranked):
                continue
            ranked.append(hit.model_copy(update={"history": notes}) if notes else hit)
        seen: set[str] = set()
        unique = []
        for hit in ranked:
            key = f"{hit.kind}:{hit.chunk_id}:{hit.chunk_path}"
            if key not in seen:
                seen.add(key)
                unique.append(hit)
        return unique[: len(hits)]


_REPLACED_CLAUSE = re.compile(
    r"(?:,|;|\(|—|–)?\s*(?:not|rather than|instead of|replacing|succeeding|formerly|previously|"
    r"(?:who|which)\s+(?:took over|replaced|succeeded)[^,;()]*?)\b[^,;()]*",
    re.IGNORECASE,
)


def without_replaced(sentence: str, notes: Sequence[HistoryNote]) -> str:
    """`sentence` without the clause that names a value it replaced (", not The WB as earlier
    reported", ", replacing Alice Moreno"): the answer states what is current; what it
    replaced is in the history."""
    text = sentence
    for note in notes:
        if not note.superseded_value or not mentions_value(text, note.superseded_value):
            continue
        for match in _REPLACED_CLAUSE.finditer(text):
            if note.superseded_value.lower() in match.group(0).lower():
                trimmed = (text[: match.start()] + text[match.end() :]).strip()
                if mentions_value(trimmed, note.current_value):
                    text = re.sub(r"\s+([.,;])", r"\1", trimmed)
                    if text[-1:].isalnum() and sentence.rstrip()[-1:] in ".!?":
                        text += sentence.rstrip()[-1]
                break
    return text


def _stale_claim(sentence: str, claims: Sequence[Supersession]) -> Supersession | None:
    text = sentence.strip()
    for claim in claims:
        conflict = claim.conflict
        if text == conflict.old_sentence.strip():
            return claim
        if (
            conflict.old_value
            and mentions_value(text, conflict.old_value)
            and not mentions_value(text, conflict.new_value)
            and _same_topic(text, conflict.old_sentence)
        ):
            return claim
    return None


def _same_topic(sentence: str, claim_sentence: str) -> bool:
    """Whether a sentence speaks of the claim's subject and attribute (shares a frame word)."""
    a = text_facts(sentence).sentences
    b = text_facts(claim_sentence).sentences
    return bool(a and b and a[0].frame & b[0].frame)


def _stating(summary: str, value: str) -> str | None:
    from memory_bank.text.sentences import split_sentences

    return next((s for s in split_sentences(summary) if mentions_value(s, value)), None)


def _scored(
    chunk: int,
    number: int,
    text: str,
    vector: np.ndarray,
    query_vector: np.ndarray,
    terms: list[str],
) -> AnswerSentence:
    from memory_bank.query.answering import SENTENCE_TERM_WEIGHT

    stems = stem_all(search_tokens(text))
    score = float(vector @ query_vector) + SENTENCE_TERM_WEIGHT * term_coverage(terms, stems)
    return AnswerSentence(chunk, number, text, np.asarray(vector, dtype=np.float32), score, stems)


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
