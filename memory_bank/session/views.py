"""Records of the graph as the caller sees them (pydantic views, no vectors)."""

from __future__ import annotations

from memory_bank.graph.model import Conflict, GraphNode, InteractionEntry
from memory_bank.graph.persist import GraphState
from memory_bank.session.models import (
    ConflictView,
    EntryView,
    GraphSummary,
    HistoryView,
    NodeDetail,
    NodeInfo,
)


def conflict_view(conflict: Conflict) -> ConflictView:
    return ConflictView(
        id=conflict.id,
        older=conflict.older,
        newer=conflict.newer,
        description=conflict.description,
        subject=conflict.subject,
        attribute=conflict.attribute,
        old_value=conflict.old_value,
        new_value=conflict.new_value,
        old_sentence=conflict.old_sentence,
        new_sentence=conflict.new_sentence,
        detected_at=conflict.detected_at,
        status=conflict.status,
        current=conflict.current,
        superseded=conflict.superseded,
        resolved_at=conflict.resolved_at,
        resolution=conflict.resolution,
    )


def entry_view(entry: InteractionEntry) -> EntryView:
    return EntryView(
        entry_id=entry.entry_id,
        text=entry.text,
        timestamp=entry.timestamp,
        metadata=dict(entry.metadata),
        attachments=[{"id": a.id, "type": a.type, "path": a.path} for a in entry.attachments],
    )


def node_detail(state: GraphState, node: GraphNode, entries: list[EntryView]) -> NodeDetail:
    graph = state.graph
    neighbours = [graph.nodes[i] for i in node.links if i in graph.nodes]
    return NodeDetail(
        id=node.id,
        kind=node.kind,
        status=node.status,
        superseded_by=node.superseded_by,
        summary=node.summary,
        context=node.context,
        keywords=list(node.keywords),
        timestamp=node.timestamp,
        source=node.source,
        neighbours=[
            NodeInfo(
                id=n.id,
                summary=n.summary,
                context=n.context,
                keywords=list(n.keywords),
                timestamp=n.timestamp,
            )
            for n in neighbours
        ],
        relations=dict(node.links),
        conflicts=[conflict_view(c) for c in graph.conflicts_of(node.id)],
        history=[HistoryView(**h.to_dict()) for h in node.history],
        entries=entries,
    )


def graph_summary(state: GraphState) -> GraphSummary:
    nodes = list(state.graph.nodes.values())
    edges: dict[str, int] = {}
    for _, _, relation in state.graph.edges():
        edges[relation] = edges.get(relation, 0) + 1
    return GraphSummary(
        nodes=sum(1 for n in nodes if n.is_current),
        memory_nodes=sum(1 for n in nodes if n.kind == "memory"),
        session_nodes=sum(1 for n in nodes if n.kind == "session" and n.is_current),
        retired_nodes=sum(1 for n in nodes if not n.is_current),
        edges=edges,
        conflicts=[
            conflict_view(c)
            for c in sorted(state.graph.conflicts.values(), key=lambda c: c.detected_at)
        ],
        merge_events=len(state.tree.merge_events),
        sessions=len(state.sessions),
        open_sessions=sum(1 for s in state.sessions.values() if s.open),
        checkpoint=state.seq,
    )
