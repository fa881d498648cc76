"""Merging session nodes, and settling conflicts with a cross-validation.

- A merge folds session nodes into a new one that inherits their edges and updates the
  inherited neighbours; the nodes it replaced stay as records with status "merged".
- A cross-validation intercept settles the pending conflicts with the integration agent: the
  claim the validation supports is current; if every node involved is a session node they are
  merged into one current node that keeps both versions in its history; a stored memory is
  never merged away -- its contradicted claim is marked superseded instead.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

import numpy as np

from memory_bank.graph.batch import context_text, refresh_contexts
from memory_bank.graph.contradictions import Contradiction
from memory_bank.graph.graph import compose_embedding
from memory_bank.graph.model import Conflict, GraphNode, HistoryEntry, MergeEvent
from memory_bank.graph.node_views import NodeViews
from memory_bank.graph.persist import GraphState
from memory_bank.session.agents import SessionAgents


class NodeMerger:
    """Merges and validations on one graph state, with the session's integration agent."""

    def __init__(
        self,
        state: GraphState,
        agents: SessionAgents,
        views: NodeViews,
        encode: Callable[[list[str]], np.ndarray],
    ) -> None:
        self.state = state
        self.agents = agents
        self.views = views
        self.encode = encode

    @property
    def graph(self):
        return self.state.graph

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
            [self.views.view(i) for i in node_ids], neighbours, trigger, validation, contradictions
        )
        now = time.time()
        summary_vector, context_vector = self.encode(
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
        refresh_contexts(graph, updates, self.encode, now)
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
            [self.views.view(i) for i in involved], {}, "conflict", validation, contradictions
        )
        winner = integration.current or involved[-1]
        losers = [i for i in involved if i != winner]
        now = time.time()
        for conflict in conflicts:
            graph.resolve_conflict(
                conflict.id,
                winner if winner in (conflict.older, conflict.newer) else conflict.newer,
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
