"""The session's work on the graph, in memory (the keeper persists it): node creation, the
two-phase analysis with the merge cascade, cross-validation, planning and retrieval.

- A new node is analysed against its candidates (hybrid top-k plus one-hop neighbours): a
  conflict is recorded (open) and stops the analysis -- the planner then puts a
  cross-validation task first; merges fold the nodes into a new one that inherits their
  edges, updates the inherited neighbours and re-enters retrieval without them (the cascade,
  seed 001 §3.2.4); else related edges are made and both sides' context and keywords updated.
- A cross-validation intercept settles the pending conflicts with the integration agent: the
  claim the validation supports is current; if every node involved is a session node they are
  merged into one current node that keeps both versions in its history; a stored memory is
  never merged away -- its contradicted claim is marked superseded instead.
Memory nodes (stored memories) keep their id and record; session nodes that a merge or a
validation replaced stay as records with status "merged" or "superseded".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memory_bank.graph.analysis import NodeView, Relationship, two_phase, with_relation
from memory_bank.graph.batch import conflict_record, context_text, refresh_contexts
from memory_bank.graph.contradictions import Contradiction
from memory_bank.graph.graph import compose_embedding, node_terms, query_terms
from memory_bank.graph.model import Conflict, GraphNode, HistoryEntry, MergeEvent
from memory_bank.graph.persist import GraphState
from memory_bank.index.embedding import Embedder
from memory_bank.query.question import content_terms
from memory_bank.session.agents import SessionAgents
from memory_bank.session.memory_source import MemorySource
from memory_bank.session.models import NodeInfo
from memory_bank.session.topics import ClusterDraft
from memory_bank.text.lexicon import (
    QUESTION_WORDS,
    search_tokens,
    stem_words,
    stemmed_search_tokens,
)
from memory_bank.text.sentences import split_sentences

MAX_CASCADE = 8  # merges in a row for one new node (each re-enters retrieval)


@dataclass
class Analysis:
    """What analysing one new node did."""

    node_id: str  # the node that stands at the end (a merge's result, or the node itself)
    conflicts: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)  # nodes made by merges
    related: int = 0
    candidate_rounds: list[list[str]] = field(default_factory=list)  # ids analysed per round


class SessionEngine:
    def __init__(
        self,
        state: GraphState,
        agents: SessionAgents,
        embedder: Embedder,
        memories: MemorySource,
        top_k: int = 5,
    ) -> None:
        self.state = state
        self.agents = agents
        self.embedder = embedder
        self.memories = memories
        self.top_k = top_k
        self._sentence_cache: dict[str, dict[str, np.ndarray]] = {}

    @property
    def graph(self):
        return self.state.graph

    # --- nodes ------------------------------------------------------------------------------

    def make_nodes(
        self, drafts: Sequence[ClusterDraft], summaries: Sequence[str], session_id: str
    ) -> list[GraphNode]:
        """Session nodes from structured clusters (ids, timestamps and vectors by code)."""
        if not drafts:
            return []
        now = time.time()
        summary_vectors = self.embedder.encode(list(summaries))
        context_vectors = self.embedder.encode(
            [context_text(d.context, d.keywords) for d in drafts]
        )
        return [
            GraphNode(
                id="n-" + uuid.uuid4().hex[:16],
                kind="session",
                summary=summary,
                context=draft.context,
                keywords=list(draft.keywords),
                timestamp=now + position * 1e-6,
                embedding=compose_embedding(summary_vector, context_vector),
                summary_vector=summary_vector,
                content=draft.content,
                source=f"session:{session_id}",
                session_id=session_id,
            )
            for position, (draft, summary, summary_vector, context_vector) in enumerate(
                zip(drafts, summaries, summary_vectors, context_vectors, strict=True)
            )
        ]

    def view(self, node_id: str) -> NodeView:
        node = self.graph.nodes[node_id]
        if node.kind == "memory":
            text = self.memories.text(node_id) or node.summary
            sentences = self.memories.sentence_vectors([node_id]).get(node_id, {})
            title = self.memories.title(node_id)
        else:
            text = node.content or node.summary  # a summary is an extract of its content
            sentences = self._session_sentences(node_id, text)
            title = None
        return NodeView(
            id=node.id,
            summary=node.summary,
            context=node.context,
            keywords=list(node.keywords),
            timestamp=node.timestamp,
            vector=node.embedding,
            text=text,
            title=title,
            sentence_vectors=sentences,
            document=node.id.rsplit("-", 1)[0] if node.kind == "memory" else "",
        )

    def _session_sentences(self, node_id: str, text: str) -> dict[str, np.ndarray]:
        cached = self._sentence_cache.get(node_id)
        if cached is None:
            sentences = list(dict.fromkeys(split_sentences(text)))
            vectors = self.embedder.encode(sentences) if sentences else []
            cached = self._sentence_cache[node_id] = dict(zip(sentences, vectors, strict=True))
        return cached

    # --- analysis ---------------------------------------------------------------------------

    def analyse(
        self, node_id: str, session_id: str | None, exclude: Sequence[str] = ()
    ) -> Analysis:
        """Seed 001 §3.2.3 for one node, with the merge cascade (see the module docstring)."""
        outcome = Analysis(node_id=node_id)
        excluded = {node_id, *exclude}
        for _ in range(MAX_CASCADE + 1):
            node = self.graph.nodes[outcome.node_id]
            found = self.graph.retrieve(
                node.embedding, query_terms(node), self.top_k, exclude=excluded
            )
            outcome.candidate_rounds.append([c.id for c in found])
            if not found:
                return outcome
            views = {c.id: self.view(c.id) for c in found}
            new_view = self.view(node.id)
            relationships = two_phase(self.agents.analyze, new_view, list(views.values()))
            conflicts = [r for r in relationships if r.relationship == "conflict"]
            merges = [r for r in relationships if r.relationship == "merge"]
            if conflicts:
                for relationship in conflicts:
                    other = views.get(relationship.existing_node_id)
                    if other is None:
                        continue
                    conflict = conflict_record(
                        new_view, other, relationship, time.time(), session_id
                    )
                    if self.graph.conflict_between(conflict.older, conflict.newer) is None:
                        self.graph.add_conflict(conflict)
                        outcome.conflicts.append(conflict.id)
                return outcome
            if merges:
                partners = [
                    m.existing_node_id for m in merges if m.existing_node_id in self.graph.nodes
                ]
                foldable = [p for p in partners if self.graph.nodes[p].kind == "session"]
                for anchored in set(partners) - set(foldable):
                    self.graph.add_edge(node.id, anchored, "merge")
                if not foldable or node.kind != "session":
                    return outcome
                merged = self.merge([node.id, *foldable], "merge", session_id)
                outcome.merged.append(merged.id)
                outcome.node_id = merged.id
                # The merged node looks again, past the neighbours it inherited.
                excluded = {merged.id, *merged.links}
                continue
            outcome.related += self._relate(
                node.id, [r for r in relationships if r.relationship == "related"]
            )
            return outcome
        return outcome

    def _relate(self, node_id: str, relationships: Sequence[Relationship]) -> int:
        """Related edges, and both sides' context and keywords updated (seed 001 §3.1.4)."""
        made = 0
        node = self.graph.nodes[node_id]
        context, keywords = node.context, list(node.keywords)
        updates: dict[str, tuple[str, list[str]]] = {}
        for relationship in relationships:
            other = self.graph.nodes.get(relationship.existing_node_id)
            if other is None:
                continue
            if self.graph.add_edge(node_id, other.id, "related"):
                made += 1
            if relationship.context_update_new:
                context = relationship.context_update_new
            elif node.kind == "session":
                context = with_relation(context, other.context)
            keywords = _union(keywords, relationship.keywords_update_new or [])
            other_context = relationship.context_update_existing or (
                with_relation(other.context, node.context)
                if other.kind == "session"
                else other.context
            )
            updates[other.id] = (
                other_context,
                relationship.keywords_update_existing or list(other.keywords),
            )
        updates[node_id] = (context, keywords)
        refresh_contexts(self.graph, updates, self.embedder.encode, time.time())
        return made

    # --- merging ----------------------------------------------------------------------------

    def merge(
        self,
        node_ids: Sequence[str],
        trigger: str,
        session_id: str | None,
        validation: str | None = None,
        contradictions: Sequence[Contradiction] = (),
        losers: Sequence[str] = (),
    ) -> GraphNode:
        """Fold session nodes into a new one (seed 001 §3.2.4 and its hard-coded steps)."""
        graph = self.graph
        nodes = [graph.nodes[i] for i in node_ids]
        members = set(node_ids)
        inherited: dict[str, str] = {}
        for node in nodes:
            for other, relation in node.links.items():
                if other not in members:
                    inherited.setdefault(other, relation)
        neighbours = {
            other: (graph.nodes[other].context, list(graph.nodes[other].keywords))
            for other in inherited
        }
        integration = self.agents.integrate(
            [self.view(i) for i in node_ids], neighbours, trigger, validation, contradictions
        )
        now = time.time()
        summary_vector, context_vector = self.embedder.encode(
            [integration.summary, context_text(integration.context, integration.keywords)]
        )
        merged = GraphNode(
            id="n-" + uuid.uuid4().hex[:16],
            kind="session",
            summary=integration.summary,
            context=integration.context,
            keywords=list(integration.keywords),
            timestamp=now,
            embedding=compose_embedding(summary_vector, context_vector),
            summary_vector=summary_vector,
            content="",  # its summary is its text; the raw contexts stay in the Interaction Tree
            source=f"session:{session_id}" if session_id else nodes[0].source,
            session_id=session_id,
            history=[
                HistoryEntry(
                    at=now,
                    event="superseded" if node.id in losers else "merged",
                    summary=node.summary,
                    context=node.context,
                    detail=integration.description,
                    node_id=node.id,
                )
                for node in nodes
            ],
        )
        graph.add_node(merged)
        for other, relation in inherited.items():
            graph.add_edge(merged.id, other, relation)  # type: ignore[arg-type]
        for node in nodes:
            graph.retire(
                node.id,
                "superseded" if node.id in losers else "merged",
                merged.id,
                now,
                integration.description,
            )
        self.state.tree.record_merge(
            MergeEvent(
                event_id="m-" + uuid.uuid4().hex[:16],
                merged_node_ids=tuple(node_ids),
                new_node_id=merged.id,
                timestamp=now,
                description=integration.description,
                trigger=trigger,
            )
        )
        updates = {
            other: update
            for other, update in integration.neighbour_updates.items()
            if other in graph.nodes and other in inherited
        }
        refresh_contexts(graph, updates, self.embedder.encode, now)
        return merged

    def resolve(
        self, conflict_ids: Sequence[str], validation: str, session_id: str | None
    ) -> tuple[list[Conflict], str | None]:
        """Settle conflicts with a cross-validation result; returns them and the node that
        stands for the validated claims (a merge of session nodes, or the winning node)."""
        graph = self.graph
        conflicts = [graph.conflicts[c] for c in conflict_ids if c in graph.conflicts]
        if not conflicts:
            return [], None
        involved = list(
            dict.fromkeys(i for c in conflicts for i in (c.older, c.newer) if i in graph.nodes)
        )
        contradictions = [_contradiction(c) for c in conflicts]
        integration = self.agents.integrate(
            [self.view(i) for i in involved], {}, "conflict", validation, contradictions
        )
        winner = integration.current or involved[-1]
        losers = [i for i in involved if i != winner]
        now = time.time()
        for conflict in conflicts:
            graph.resolve_conflict(
                conflict.id,
                winner if conflict.involves(winner) else conflict.newer,
                now,
                f"validated: {validation[:200]}",
            )
        current_nodes = [i for i in involved if graph.nodes[i].is_current]
        if all(graph.nodes[i].kind == "session" for i in current_nodes) and len(current_nodes) > 1:
            merged = self.merge(
                current_nodes, "conflict", session_id, validation, contradictions, losers
            )
            return conflicts, merged.id
        for loser in losers:
            node = graph.nodes[loser]
            if node.kind == "session" and node.is_current:
                graph.retire(loser, "superseded", winner, now, integration.description)
            elif node.kind == "memory":
                node.history.append(
                    HistoryEntry(
                        at=now,
                        event="claim superseded",
                        detail=integration.description,
                        node_id=loser,
                    )
                )
                graph.touch(loser)
        return conflicts, winner

    # --- retrieval for prompts and planning -------------------------------------------------

    def retrieve(self, query: str, k: int | None = None) -> list[GraphNode]:
        if not query.strip() or not len(self.graph):
            return []
        vector = self.embedder.encode([query])[0]
        return self.graph.retrieve(vector, stemmed_search_tokens(query), k or self.top_k)

    def goal_coverage(self, goal: str) -> tuple[float, list[str]]:
        """Share of the goal's content terms that the memories retrieved for it hold, and the
        goal's words still missing."""
        words = [w for w in dict.fromkeys(search_tokens(goal)) if w not in QUESTION_WORDS]
        if not words:
            return 1.0, []
        found = self.retrieve(goal)
        stems: set[str] = set()
        for node in found:
            stems.update(node_terms(node))
            if node.kind == "session" and node.content:
                stems.update(stemmed_search_tokens(node.content))
        missing = [w for w, s in zip(words, stem_words(words), strict=True) if s not in stems]
        terms = content_terms(goal)
        return (1.0 - len(missing) / len(words)) if terms else 1.0, missing


def node_info(node: GraphNode) -> NodeInfo:
    return NodeInfo(
        id=node.id,
        summary=node.summary,
        context=node.context,
        keywords=list(node.keywords),
        timestamp=node.timestamp,
    )


def _union(first: Sequence[str], second: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))[:12]


def _contradiction(conflict: Conflict) -> Contradiction:
    return Contradiction(
        old_sentence=conflict.old_sentence,
        new_sentence=conflict.new_sentence,
        subject=conflict.subject,
        attribute=conflict.attribute,
        old_value=conflict.old_value,
        new_value=conflict.new_value,
        kind="",
    )
