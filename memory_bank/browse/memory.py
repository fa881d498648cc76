"""One memory as a page shows it: its file (frontmatter and text), the document and chunk it was
made from, the Interaction Tree's raw contexts, its neighbours in the Query Graph, and for each
claim it shares a subject with another memory, the timeline of values: which is current, which
were superseded, by what and when."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_bank.browse.catalog import StoreCatalog
from memory_bank.browse.directory import breadcrumb
from memory_bank.browse.models import (
    ClaimTimeline,
    ClaimValue,
    DocumentRef,
    MemoryPage,
    Neighbour,
)
from memory_bank.errors import StoreError
from memory_bank.graph.model import Conflict, GraphNode
from memory_bank.graph.persist import GraphState
from memory_bank.session.models import HistoryView
from memory_bank.session.views import entry_view
from memory_bank.store.files import parse_chunk_file
from memory_bank.text.dates import utc_iso

SESSION_PREFIX = "memory:"  # how a history note names a session memory
MAX_TIMELINE_CONFLICTS = 64  # conflicts followed along one subject (a cycle cannot hang a page)

# A value's state from one conflict; the strongest over all conflicts wins.
_STATE_RANK = {"current": 0, "disputed": 1, "superseded": 2}


def memory_page(catalog: StoreCatalog, graph: GraphState | None, ref: str) -> MemoryPage | None:
    """The memory named by `ref` (chunk id, file path, or a graph node id, with or without
    "memory:"), or None when neither the store nor the graph holds it, or the catalog's reader
    does not see it. Its neighbours, claims and history are those among memories the reader
    sees."""
    row = catalog.memory(ref)
    if row is not None:
        return _stored_memory(catalog, graph, row)
    if graph is None:
        return None
    node = graph.graph.nodes.get(ref.removeprefix(SESSION_PREFIX))
    if node is None or not catalog.sees(node.id):
        return None
    return _session_memory(catalog, graph, node)


def _stored_memory(
    catalog: StoreCatalog, graph: GraphState | None, row: dict[str, Any]
) -> MemoryPage:
    file = catalog.reader.path(row["path"])
    try:
        frontmatter, text = parse_chunk_file(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StoreError(f"memory file {file} is unreadable: {exc}") from exc
    chunk = catalog.chunk(row["chunk_id"]) or {}
    document = catalog.document(row["document_id"])
    node = graph.graph.nodes.get(row["chunk_id"]) if graph is not None else None
    return MemoryPage(
        store_version=catalog.store_version,
        id=row["chunk_id"],
        kind="memory",
        title=row["title"],
        path=row["path"],
        directory=row["directory"],
        breadcrumb=breadcrumb(catalog, row["directory"]),
        frontmatter=frontmatter,
        text=text,
        tldr=row["tldr"],
        keywords=list(row["keywords"] or []),
        document=DocumentRef(**document) if document else None,
        position=chunk.get("position"),
        section=chunk.get("section"),
        raw_text=chunk.get("text", ""),
        **_graph_part(catalog, graph, node),
    )


def _session_memory(catalog: StoreCatalog, graph: GraphState, node: GraphNode) -> MemoryPage:
    return MemoryPage(
        store_version=catalog.store_version,
        id=node.id,
        kind=node.kind,
        title=_short(node.summary),
        path="",
        directory="",
        breadcrumb=[],
        frontmatter={"source": node.source, "session_id": node.session_id or ""},
        text=node.summary,
        tldr=node.context,
        keywords=list(node.keywords),
        document=None,
        position=None,
        section=None,
        raw_text=node.content,
        **_graph_part(catalog, graph, node),
    )


def _graph_part(
    catalog: StoreCatalog, graph: GraphState | None, node: GraphNode | None
) -> dict[str, Any]:
    if graph is None or node is None:
        return {
            "entries": [],
            "status": "current",
            "superseded_by": None,
            "recorded_at": None,
            "neighbours": [],
            "timelines": [],
            "history": [],
        }
    status, superseded_by = node.status, node.superseded_by
    history = [HistoryView(**entry.to_dict()) for entry in node.history]
    if catalog.sight is not None:
        status, superseded_by = catalog.sight.standing(status, superseded_by)
        replaced_by = [node.superseded_by or ""]
        replaced_by += [
            side for c in graph.graph.conflicts_of(node.id) for side in (c.older, c.newer)
        ]
        history = catalog.sight.history(history, replaced_by)
    return {
        "entries": [entry_view(entry) for entry in graph.tree.entries_for(node.id)],
        "status": status,
        "superseded_by": superseded_by,
        "recorded_at": utc_iso(node.timestamp),
        "neighbours": [
            _neighbour(catalog, graph, other, relation)
            for other, relation in sorted(node.links.items())
            if catalog.sees(other)
        ],
        "timelines": claim_timelines(catalog, graph, node.id),
        "history": history,
    }


@dataclass(frozen=True)
class _Described:
    """How a page names a graph node: by its stored memory, else by the node itself."""

    title: str
    path: str
    source: str
    summary: str
    node: GraphNode | None


def _describe(catalog: StoreCatalog, graph: GraphState, node_id: str) -> _Described:
    node = graph.graph.nodes.get(node_id)
    row = catalog.memory(node_id)
    if row is not None:
        return _Described(row["title"], row["path"], row["source"], row["tldr"], node)
    if node is not None:
        return _Described(_short(node.summary), "", node.source, node.summary, node)
    return _Described(node_id, "", "", "", None)


def _short(summary: str) -> str:
    """A session memory's title: the first sentence of its summary, at most 120 characters."""
    return summary.split(". ", 1)[0][:120]


def _neighbour(catalog: StoreCatalog, graph: GraphState, node_id: str, relation: str) -> Neighbour:
    described = _describe(catalog, graph, node_id)
    return Neighbour(
        id=node_id,
        relation=relation,
        title=described.title,
        path=described.path,
        summary=described.summary,
        status=described.node.status if described.node else "current",
    )


def claim_timelines(catalog: StoreCatalog, graph: GraphState, node_id: str) -> list[ClaimTimeline]:
    """For each subject and attribute a conflict of `node_id` is about, every value given for it
    along the chain of conflicts (A replaced by B replaced by C), oldest first; only conflicts
    between memories the catalog's reader sees."""
    timelines, seen = [], set()
    for start in _conflicts_seen(catalog, graph, node_id):
        if start.id in seen:
            continue
        group = _connected(catalog, graph, start)
        seen.update(conflict.id for conflict in group)
        values: dict[tuple[str, str], ClaimValue] = {}
        for conflict in group:
            for claim in _claims(catalog, graph, conflict):
                key = (claim.node_id, claim.value)
                known = values.get(key)
                if known is None or _STATE_RANK[claim.state] > _STATE_RANK[known.state]:
                    values[key] = claim
        timelines.append(
            ClaimTimeline(
                subject=start.subject,
                attribute=start.attribute,
                values=sorted(values.values(), key=lambda v: (v.recorded_at, v.node_id)),
                open=any(conflict.status == "open" for conflict in group),
            )
        )
    return timelines


def _conflicts_seen(catalog: StoreCatalog, graph: GraphState, node_id: str) -> list[Conflict]:
    return [c for c in graph.graph.conflicts_of(node_id) if catalog.sees_conflict(c.older, c.newer)]


def _connected(catalog: StoreCatalog, graph: GraphState, start: Conflict) -> list[Conflict]:
    """The conflicts about `start`'s subject and attribute reachable through their nodes."""
    key = _claim_key(start)
    found = {start.id: start}
    waiting = [start.older, start.newer]
    while waiting and len(found) < MAX_TIMELINE_CONFLICTS:
        for conflict in _conflicts_seen(catalog, graph, waiting.pop()):
            if conflict.id not in found and _claim_key(conflict) == key:
                found[conflict.id] = conflict
                waiting += [conflict.older, conflict.newer]
    return sorted(found.values(), key=lambda conflict: conflict.detected_at)


def _claim_key(conflict: Conflict) -> tuple[str, str]:
    return (
        " ".join(conflict.subject.lower().split()),
        " ".join(conflict.attribute.lower().split()),
    )


def _claims(catalog: StoreCatalog, graph: GraphState, conflict: Conflict) -> list[ClaimValue]:
    sides = (
        (conflict.older, conflict.old_value, conflict.old_sentence),
        (conflict.newer, conflict.new_value, conflict.new_sentence),
    )
    claims = []
    for node_id, value, sentence in sides:
        described = _describe(catalog, graph, node_id)
        superseded = conflict.superseded == node_id
        state = "disputed" if conflict.status == "open" else "current"
        claims.append(
            ClaimValue(
                value=value,
                sentence=sentence,
                node_id=node_id,
                title=described.title,
                path=described.path,
                source=described.source,
                recorded_at=utc_iso(described.node.timestamp) if described.node else "",
                state="superseded" if superseded else state,
                superseded_at=(
                    utc_iso(conflict.resolved_at) if superseded and conflict.resolved_at else None
                ),
                superseded_by=conflict.current if superseded else None,
            )
        )
    return claims
