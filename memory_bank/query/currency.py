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

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from memory_bank.graph.sentence_facts import mentions_value, same_frame
from memory_bank.graph.view import GraphView, Supersession
from memory_bank.index.corpus import StoreCorpus
from memory_bank.index.embedding import TextEncoder
from memory_bank.index.vector_cache import TextVectorCache
from memory_bank.query.bridges import bridges
from memory_bank.query.question import term_coverage
from memory_bank.query.roles import ClaimHistory
from memory_bank.query.slot_pairs import SentencePairs
from memory_bank.query.slots import SlotChange, SlotMemory, slot_changes
from memory_bank.schemas import HistoryNote, SearchHit
from memory_bank.text.dates import utc_iso
from memory_bank.text.lexicon import stemmed_search_tokens, text_stems
from memory_bank.text.sentences import split_sentences

MAX_SLOT_MEMORIES = 32  # memories read plus graph neighbours compared for the question's slot
MASKED_CACHE_SIZE = 4096  # masked-sentence vectors of the slot rules kept across questions
SENTENCE_PAIRS_CACHE_SIZE = 2048  # pairs of memories whose sentence pairs are kept (same)


class Currency:
    def __init__(self, view: GraphView, corpus: StoreCorpus, embedder: TextEncoder | None) -> None:
        self.view = view
        self.corpus = corpus
        self.embedder = embedder
        # The slot rules embed the same masked sentences of the same memories question after
        # question.
        self._masked_vectors = (
            TextVectorCache(embedder.encode, MASKED_CACHE_SIZE) if embedder is not None else None
        )
        self._index_of_chunk = {chunk_id: i for i, chunk_id in enumerate(corpus.chunk_ids)}
        # One store version's memories (a Currency lives as long as its corpus).
        self._sentence_pairs = SentencePairs(SENTENCE_PAIRS_CACHE_SIZE)

    def supersessions(self, indices: Iterable[int]) -> dict[int, list[Supersession]]:
        ids = self.corpus.chunk_ids
        found = {i: self.view.superseded_claims(ids[i]) for i in indices if 0 <= i < len(ids)}
        return {index: claims for index, claims in found.items() if claims}

    # --- answers ----------------------------------------------------------------------------

    def claims(
        self,
        indices: Iterable[int],
        question: str | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[ClaimHistory]:
        """The superseded and current claims of the memories read (by memory index), as the
        answer role takes them: the graph's resolved conflicts, and with `question` those its
        slot decides between memories of different commits (`query.slots`)."""
        indices = list(indices)
        self.view.refresh()
        found = self._graph_claims(indices)
        if question:
            known = {(c.kind, c.chunk, c.sentence.strip()) for c in found}
            found += [
                c
                for c in self.question_claims(indices, question, query_vector)
                if (c.kind, c.chunk, c.sentence.strip()) not in known
            ]
            found += self.bridge_claims(indices, question)
        return found

    def bridge_claims(self, indices: Sequence[int], question: str) -> list[ClaimHistory]:
        """The graph's resolved conflicts about something the evidence may name, in memories
        not read (`query.bridges`): the answer states their current claim where it quotes a
        sentence naming what they are about."""
        graph = self.view.state.graph
        read = {self.corpus.chunk_ids[i] for i in indices if 0 <= i < len(self.corpus.chunk_ids)}
        found = []
        for bridge in bridges(question, graph.conflicts.values()):
            conflict = bridge.conflict
            superseded = graph.nodes.get(conflict.older)
            current = self.view.standing(conflict.newer)
            if superseded is None or current is None or current.id in read:
                continue  # the current claim was read: the answer's own evidence states it
            replaced = self._superseded(-1, Supersession(conflict, superseded, current))
            if not replaced.current_sentence or replaced.current_vector is None:
                continue
            # Told where the current claim stands: no memory read holds the replaced one.
            chunk = replaced.current_chunk if replaced.current_chunk is not None else -1
            found.append(
                replaced.model_copy(
                    update={"kind": "bridge", "chunk": chunk, "about": list(bridge.about)}
                )
            )
        return found

    def _graph_claims(self, indices: list[int]) -> list[ClaimHistory]:
        found = [
            self._superseded(index, claim)
            for index, claims in self.supersessions(indices).items()
            for claim in claims
        ]
        graph = self.view.state.graph
        for index in indices:
            if not 0 <= index < len(self.corpus.chunk_ids):
                continue
            node_id = self.corpus.chunk_ids[index]
            for conflict in graph.conflicts_of(node_id):
                if conflict.status != "resolved" or conflict.current != node_id:
                    continue  # the node's claim is not the one that holds
                superseded = graph.nodes.get(conflict.superseded or "")
                current = self.view.standing(node_id)
                if superseded is None or current is None:
                    continue
                found.append(
                    ClaimHistory(
                        kind="current",
                        chunk=index,
                        sentence=conflict.new_sentence,
                        old_value=conflict.old_value,
                        new_value=conflict.new_value,
                        note=self.note(Supersession(conflict, superseded, current)),
                    )
                )
        return found

    def question_claims(
        self, indices: Sequence[int], question: str, query_vector: np.ndarray | None = None
    ) -> list[ClaimHistory]:
        """The claims the question's slot decides: among the memories read and their graph
        neighbours, a later add's differing value for what the question asks is current."""
        memories = self._slot_memories(indices)
        graph = self.view.state.graph

        def decided(older: str, newer: str) -> bool:
            conflict = graph.conflict_between(older, newer)
            return conflict is not None and (
                conflict.status != "resolved" or conflict.current != newer
            )

        read = set(indices)
        found: list[ClaimHistory] = []
        changes = slot_changes(
            question, memories, decided, query_vector, self._masked_vectors, self._sentence_pairs
        )
        for change in changes:
            contradiction, newer = change.contradiction, change.newer.chunk
            current = ClaimHistory(
                kind="current",
                chunk=newer,
                sentence=contradiction.new_sentence,
                old_value=contradiction.old_value,
                new_value=contradiction.new_value,
                note=self._slot_note(change),
            )
            if change.older.chunk in read:  # the claim it replaced, as the answer reads it
                superseded = {
                    "kind": "superseded",
                    "chunk": change.older.chunk,
                    "sentence": contradiction.old_sentence,
                    "current_sentence": contradiction.new_sentence,
                    "current_chunk": newer,
                    "current_path": self.corpus.chunk_path(newer),
                    "current_vector": change.new_vector,
                }
                found.append(current.model_copy(update=superseded))
            found.append(current)
        return found

    def _slot_memories(self, indices: Sequence[int]) -> list[SlotMemory]:
        """The memories read that the graph knows, then their graph neighbours (a later add
        the agent did not read may state the current value; an earlier one, what it
        replaced), at most MAX_SLOT_MEMORIES."""
        graph = self.view.state.graph
        chosen = list(dict.fromkeys(i for i in indices if 0 <= i < len(self.corpus.chunk_ids)))
        for index in list(chosen):
            node = graph.nodes.get(self.corpus.chunk_ids[index])
            for neighbour in sorted(node.links) if node is not None else []:
                other = self._index_of_chunk.get(neighbour)
                if other is not None and other not in chosen:
                    chosen.append(other)
        memories = []
        for index in chosen[:MAX_SLOT_MEMORIES]:
            node = graph.nodes.get(self.corpus.chunk_ids[index])
            if node is None or not node.is_current:
                continue
            texts, vectors = self.corpus.chunk_sentences(index)
            memories.append(
                SlotMemory(
                    chunk=index,
                    node_id=node.id,
                    added_at=node.timestamp,
                    text=self.corpus.chunk_text(index),
                    sentences=texts,
                    vectors=vectors,
                )
            )
        return memories

    def _slot_note(self, change: SlotChange) -> HistoryNote:
        contradiction = change.contradiction
        return HistoryNote(
            subject=contradiction.subject,
            attribute=contradiction.attribute,
            superseded_value=contradiction.old_value,
            current_value=contradiction.new_value,
            superseded_text=contradiction.old_sentence,
            current_text=contradiction.new_sentence,
            superseded_source=self.corpus.chunk_path(change.older.chunk),
            current_source=self.corpus.chunk_path(change.newer.chunk),
            recorded_at=utc_iso(change.older.added_at),
            superseded_at=utc_iso(change.newer.added_at),
            conflict_id="",
            basis="question",
        )

    def _superseded(self, index: int, claim: Supersession) -> ClaimHistory:
        conflict = claim.conflict
        current_chunk, text, vector = self._current_sentence(claim)
        return ClaimHistory(
            kind="superseded",
            chunk=index,
            sentence=conflict.old_sentence,
            old_value=conflict.old_value,
            new_value=conflict.new_value,
            current_sentence=text,
            current_chunk=current_chunk,
            current_path=self.corpus.chunk_path(current_chunk)
            if current_chunk is not None
            else None,
            current_vector=vector,
            note=self.note(claim),
        )

    def _current_sentence(self, claim: Supersession) -> tuple[int | None, str, np.ndarray | None]:
        """Where the current claim is stated: a sentence of the current memory's chunk (with its
        stored vector), or of a session memory's summary (embedded here)."""
        conflict = claim.conflict
        node = claim.current_node
        wanted = conflict.new_sentence.strip()
        index = self._index_of_chunk.get(node.id)
        if index is not None:
            texts, vectors = self.corpus.chunk_sentences(index)
            for text, vector in zip(texts, vectors, strict=True):
                if text.strip() == wanted or (
                    mentions_value(text, conflict.new_value) and same_frame(text, wanted)
                ):
                    return index, text, np.asarray(vector, dtype=np.float32)
            return index, "", None
        text = (
            wanted
            if wanted and wanted in f"{node.summary} {node.content}"
            else _stating(node.summary, conflict.new_value) or wanted
        )
        if not text or self.embedder is None:
            return None, text, None
        return None, text, np.asarray(self.embedder.encode([text])[0], dtype=np.float32)

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
            recorded_at=utc_iso(claim.superseded_node.timestamp),
            superseded_at=utc_iso(conflict.resolved_at or claim.current_node.timestamp),
            conflict_id=conflict.id,
        )

    def _source(self, node_id: str) -> str:
        index = self._index_of_chunk.get(node_id)
        return self.corpus.chunk_path(index) if index is not None else f"memory:{node_id}"

    def tool_note(self, tool: str, arguments: dict) -> str:
        """For an agent that reads a memory file (`cat`) or a chunk (`deep_retrieval`): what of
        it a later memory superseded, to append to the tool's output."""
        self.view.refresh()
        index = None
        if tool == "cat":
            index = self.corpus.index_of_path(
                str(arguments.get("file", arguments.get("path", ""))).lstrip("/")
            )
        elif tool == "deep_retrieval":
            index = self._index_of_chunk.get(str(arguments.get("chunk_id", "")))
        claims = self.supersessions([index]).get(index, []) if index is not None else []
        return "".join(
            f"\n[memory note: {note.superseded_text!r} was superseded on {note.superseded_at} by "
            f"{note.current_text!r} ({note.current_source}); state the current value]"
            for note in map(self.note, claims)
        )

    # --- search -----------------------------------------------------------------------------

    def session_hits(self, query: str, query_vector: np.ndarray, k: int) -> list[SearchHit]:
        """The current session memories (graph nodes no stored file stands for) that match
        `query`, scored like the store's hybrid search (alpha * BM25 / best + (1 - alpha) *
        cosine over the graph), as hits of kind "memory"."""
        graph = self.view.state.graph
        if not any(n.kind == "session" and n.is_current for n in graph.nodes.values()):
            return []
        ranked = graph.top_k(query_vector, stemmed_search_tokens(query), k * 4)
        hits = []
        for node_id, score in ranked:
            node = graph.nodes[node_id]
            if node.kind != "session":
                continue
            hits.append(
                SearchHit(
                    chunk_path="",
                    chunk_id=node.id,
                    source=node.source,
                    document_id="",
                    score=float(score),
                    text=node.summary,
                    kind="memory",
                )
            )
        return hits[:k]

    def rerank(
        self, hits: list[SearchHit], query: str, hit_for: Callable[[int, float], SearchHit]
    ) -> list[SearchHit]:
        """Hits with history notes; the current memory of a superseded matching claim right
        above the hit that states the old one."""
        self.view.refresh()
        terms = list(text_stems(query))
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
                if term_coverage(terms, text_stems(c.conflict.old_sentence)) > 0
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
        unique: dict[str, SearchHit] = {}
        for hit in ranked:
            unique.setdefault(f"{hit.kind}:{hit.chunk_id}:{hit.chunk_path}", hit)
        return list(unique.values())[: len(hits)]


def _stating(summary: str, value: str) -> str | None:
    return next((s for s in split_sentences(summary) if mentions_value(s, value)), None)
