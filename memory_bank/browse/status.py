"""The store at a glance: its sizes, its versions (one per commit), its last reorganizations and
the Query Graph's open conflicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory_bank.browse.catalog import StoreCatalog
from memory_bank.browse.memory import utc_iso
from memory_bank.browse.models import OpenConflict, Reorganization, StoreStatus, VersionInfo
from memory_bank.graph.persist import GraphState
from memory_bank.ingest.commit_version import REORGANIZATIONS_FILE
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation

OPEN_CONFLICTS_SHOWN = 20
REORGANIZATIONS_SHOWN = 5


def store_status(
    location: StoreLocation, catalog: StoreCatalog, graph: GraphState | None
) -> StoreStatus:
    meta = catalog.reader.meta
    live = catalog.root
    conflicts = sorted(
        graph.graph.conflicts.values() if graph is not None else [],
        key=lambda conflict: conflict.detected_at,
        reverse=True,
    )
    open_conflicts = [conflict for conflict in conflicts if conflict.status == "open"]
    edges: dict[str, int] = {}
    for _, _, relation in graph.graph.edges() if graph is not None else []:
        edges[relation] = edges.get(relation, 0) + 1
    sessions = list(graph.sessions.values()) if graph is not None else []
    return StoreStatus(
        store_version=catalog.store_version,
        created_at=str(meta.get("created_at", "")),
        updated_at=str(meta.get("updated_at", "")),
        documents=int(meta.get("total_documents", 0)),
        chunks=int(meta.get("total_chunks", 0)),
        directories=int(meta.get("total_directories", 0)),
        backend=str(meta.get("backend", "")),
        embedding_model=str(meta.get("embedding_model", "")),
        versions=versions(location, live),
        reorganizations=reorganizations(live),
        graph_nodes=len(graph.graph.nodes) if graph is not None else 0,
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
    )


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
