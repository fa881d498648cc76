"""The session's work on the graph, in memory (the graph's storage persists it): the
two-phase analysis of new nodes (made from drafted pieces, `pieces.py`) with the merge cascade,
and retrieval for planning.

A new node is analysed against its candidates (hybrid top-k plus one-hop neighbours): a
conflict is recorded (open) and stops the analysis -- the planner then puts a cross-validation
task first; merges fold the nodes into a new one (`merging.py`) that re-enters retrieval without
them (the cascade, seed 001 §3.2.4); else related edges are made and both sides' context and
keywords updated. Memory nodes (stored memories) keep their id and record; session nodes that a
merge or a validation replaced stay as records with status "merged" or "superseded".
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_bank.graph.analysis import Relationship, two_phase, with_relation
from memory_bank.graph.batch import conflict_record, refresh_contexts
from memory_bank.graph.graph import node_terms, query_terms
from memory_bank.graph.memory_source import MemorySource
from memory_bank.graph.model import GraphNode
from memory_bank.graph.node_views import NodeViews, SentenceVectors
from memory_bank.graph.persist import GraphState
from memory_bank.index.embedding import Embedder
from memory_bank.query.question import content_terms
from memory_bank.session.agents import SessionAgents
from memory_bank.session.merging import NodeMerger
from memory_bank.session.models import NodeInfo
from memory_bank.text.lexicon import (
    QUESTION_WORDS,
    search_tokens,
    stem_words,
    stemmed_search_tokens,
)

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
        sentences: SentenceVectors | None = None,
    ) -> None:
        self.state = state
        self.agents = agents
        self.embedder = embedder
        self.top_k = top_k
        self.views = NodeViews(state.graph, memories, embedder.encode, sentences)
        self.merger = NodeMerger(state, agents, self.views, embedder.encode)

    @property
    def graph(self):
        return self.state.graph

    # --- analysis ---------------------------------------------------------------------------

    def analyse(
        self,
        node_id: str,
        session_id: str | None,
        exclude: Sequence[str] = (),
        task_goal: str | None = None,
    ) -> Analysis:
        """Seed 001 §3.2.3 for one node, with the merge cascade (see the module docstring);
        `task_goal`: the session's question, which names the attribute two nodes may differ
        on."""
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
            views = {c.id: self.views.view(c.id) for c in found}
            new_view = self.views.view(node.id)
            analyze = functools.partial(self.agents.analyze, task_goal=task_goal)
            relationships = two_phase(analyze, new_view, list(views.values()))
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
                merged = self.merger.merge([node.id, *foldable], "merge", session_id)
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
