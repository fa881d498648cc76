"""The store at a glance: its sizes, its versions (one per commit), its last reorganizations and
the Query Graph's open conflicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_bank.browse.catalog import StoreCatalog
from memory_bank.browse.models import OpenConflict, Reorganization, StoreStatus, VersionInfo
from memory_bank.graph.persist import GraphState
from memory_bank.ingest.commit_version import REORGANIZATIONS_FILE
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation
from memory_bank.store.writer import count_directories
from memory_bank.text.dates import utc_iso

OPEN_CONFLICTS_SHOWN = 20
REORGANIZATIONS_SHOWN = 5


def store_status(
    location: StoreLocation, catalog: StoreCatalog, graph: GraphState | None
) -> StoreStatus:
    """The store at a glance, as the catalog's reader sees it: a reader limited to part of the
    store gets the sizes of its part, the live version only, the graph among its memories, and
    neither the reorganizations nor the sessions (both are about the whole store)."""
    meta = catalog.reader.meta
    live = catalog.root
    whole = catalog.sight is None
    found = graph.graph if graph is not None else None
    conflicts = sorted(
        (
            conflict
            for conflict in (found.conflicts.values() if found is not None else [])
            if catalog.sees_conflict(conflict.older, conflict.newer)
        ),
        key=lambda conflict: conflict.detected_at,
        reverse=True,
    )
    open_conflicts = [conflict for conflict in conflicts if conflict.status == "open"]
    edges: dict[str, int] = {}
    for one, other, relation in found.edges() if found is not None else []:
        if catalog.sees(one) and catalog.sees(other):
            edges[relation] = edges.get(relation, 0) + 1
    nodes = sum(1 for node in found.nodes if catalog.sees(node)) if found is not None else 0
    sessions = list(graph.sessions.values()) if graph is not None and whole else []
    sizes = _sizes(catalog)
    listed = versions(location, live)
    if not whole:
        listed = [version.model_copy(update=sizes) for version in listed if version.live]
    return StoreStatus(
        store_version=catalog.store_version,
        created_at=str(meta.get("created_at", "")),
        updated_at=str(meta.get("updated_at", "")),
        backend=str(meta.get("backend", "")),
        embedding_model=str(meta.get("embedding_model", "")),
        versions=listed,
        reorganizations=reorganizations(live) if whole else [],
        graph_nodes=nodes,
        graph_edges=edges,
        conflicts_resolved=len(conflicts) - len(open_conflicts),
        conflicts_open=len(open_conflicts),
        open_conflicts=[
            OpenConflict(
                id=conflict.id,
                subject=conflict.subject,
                attribute=conflict.attribute,
                description=conflict.description,
                older=conflict.older,
                newer=conflict.newer,
                older_value=conflict.old_value,
                newer_value=conflict.new_value,
                detected_at=utc_iso(conflict.detected_at),
            )
            for conflict in open_conflicts[:OPEN_CONFLICTS_SHOWN]
        ],
        sessions=len(sessions),
        open_sessions=sum(1 for session in sessions if session.open),
        **sizes,
    )


def _sizes(catalog: StoreCatalog) -> dict[str, int]:
    """Documents, chunks and directories: the store's own counts, or those of the part the
    catalog's reader sees."""
    if catalog.sight is None:
        meta = catalog.reader.meta
        return {
            "documents": int(meta.get("total_documents", 0)),
            "chunks": int(meta.get("total_chunks", 0)),
            "directories": int(meta.get("total_directories", 0)),
        }
    rows = catalog.memory_rows(catalog.visible_rows())
    return {
        "documents": len({row["document_id"] for row in rows}),
        "chunks": len(rows),
        "directories": count_directories(catalog.tree),
    }


def versions(location: StoreLocation, live: Path) -> list[VersionInfo]:
    """The version directories still on disk, newest first (a store written before versions
    existed is one unnumbered version)."""
    found = location.versions() or [live]
    listed = []
    for number, directory in reversed(list(enumerate(found, start=1))):
        meta = _json(directory / layout.META_FILE)
        try:
            published = directory.stat().st_mtime  # when it went live (`StoreLocation.publish`)
        except OSError:
            meta = None
        if not isinstance(meta, dict):
            continue  # removed by a commit's garbage collection since it was listed
        listed.append(
            VersionInfo(
                number=int(directory.name.split("-", 1)[0]) if "-" in directory.name else number,
                store_version=str(meta.get("store_version", "")),
                published_at=utc_iso(published),
                documents=int(meta.get("total_documents", 0)),
                chunks=int(meta.get("total_chunks", 0)),
                directories=int(meta.get("total_directories", 0)),
                live=directory.resolve() == live,
            )
        )
    return listed


def reorganizations(live: Path) -> list[Reorganization]:
    log = _json(live / layout.BANK_DIR / REORGANIZATIONS_FILE)
    operations = log if isinstance(log, list) else []
    return [
        Reorganization(
            at=str(operation.get("at", "")),
            reason=str(operation.get("reason", "")),
            moved=len(operation.get("moved", [])),
            new_directories=len(operation.get("new_directories", [])),
            deleted_directories=len(operation.get("deleted_directories", [])),
        )
        for operation in reversed(operations[-REORGANIZATIONS_SHOWN:])
    ]


def _json(path: Path) -> Any:
    """The file's JSON, or None when it is gone or unreadable (a version being collected, a
    store that never reorganized)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
