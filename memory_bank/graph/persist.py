"""The Query Graph, the Interaction Tree and the sessions on disk: Parquet tables, never pickle.

One format of records (tables of upserted records, and the ids deleted) for two places:
- a *checkpoint*, in the store's graph log `.<store>.graph/<seq>/` beside the versions: the
  records one batch of changes touched. A checkpoint is written into a temporary directory and
  renamed into place, so it is there whole or not.
- a *snapshot*, in each store version's `.bank/graph/`: `graph.json` names the last checkpoint
  it holds (`seq`) and its *layers*, record directories applied in order. A commit links the
  previous version's layers and the checkpoints since as new layers (hard links: the files
  are never changed), so it writes nothing of the graph it did not change; when the layers
  grow past `MAX_LAYERS` or `LAYERS_SHARE` of the first one's bytes, it writes the whole graph
  as one layer instead (compaction). A snapshot written before layers holds its records in
  `.bank/graph/` itself.

A graph is the live version's snapshot with every checkpoint numbered above the snapshot's
`seq` applied in order (`load_graph_state`). Records are upserted whole, so applying a
checkpoint twice gives the same graph.

Beside the nodes, `node_terms` holds the stems the graph's BM25 indexes of each current node,
and `graph.json` the lexicon's `STEMS_VERSION` they were made under: loading a graph reads its
nodes' stems instead of tokenizing every node's text, so a process that opens the store for a
small change does not pay for the whole graph's words. Records without them (written before, or
under another lexicon) are tokenized as they load; code from before ignores the table.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from memory_bank.errors import StoreError
from memory_bank.graph.graph import DIMENSIONS, QueryGraph
from memory_bank.graph.interaction import InteractionTree
from memory_bank.graph.model import (
    Attachment,
    Conflict,
    GraphNode,
    HistoryEntry,
    InteractionEntry,
    MergeEvent,
    SessionRecord,
)
from memory_bank.store.atomic import fsync_directory
from memory_bank.store.disk import writing
from memory_bank.store.tables import EMBEDDING_TYPE, embedding_array
from memory_bank.text.lexicon import STEMS_VERSION

GRAPH_DIR = "graph"  # under a version's .bank/
GRAPH_META = "graph.json"
FORMAT = 1
_CHECKPOINT_NAME = re.compile(r"\d{9}")

NODES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("status", pa.string()),
        ("summary", pa.string()),
        ("context", pa.string()),
        ("keywords", pa.list_(pa.string())),
        ("timestamp", pa.float64()),
        ("links", pa.string()),  # JSON {neighbour id: relation}
        ("history", pa.string()),  # JSON list of HistoryEntry
        ("superseded_by", pa.string()),
        ("content", pa.string()),
        ("source", pa.string()),
        ("session_id", pa.string()),
        ("embedding", EMBEDDING_TYPE),
        ("summary_vector", EMBEDDING_TYPE),
    ]
)
CONFLICTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("older", pa.string()),
        ("newer", pa.string()),
        ("description", pa.string()),
        ("subject", pa.string()),
        ("attribute", pa.string()),
        ("old_value", pa.string()),
        ("new_value", pa.string()),
        ("old_sentence", pa.string()),
        ("new_sentence", pa.string()),
        ("detected_at", pa.float64()),
        ("status", pa.string()),
        ("current", pa.string()),
        ("resolved_at", pa.float64()),
        ("resolution", pa.string()),
        ("session_id", pa.string()),
    ]
)
ENTRIES_SCHEMA = pa.schema(
    [
        ("entry_id", pa.string()),
        ("text", pa.string()),
        ("timestamp", pa.float64()),
        ("metadata", pa.string()),  # JSON
        ("attachments", pa.string()),  # JSON list of {id, type, path}
    ]
)
NODE_ENTRIES_SCHEMA = pa.schema([("node_id", pa.string()), ("entry_ids", pa.list_(pa.string()))])
NODE_TERMS_SCHEMA = pa.schema([("node_id", pa.string()), ("terms", pa.list_(pa.string()))])
MERGE_EVENTS_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("merged_node_ids", pa.list_(pa.string())),
        ("new_node_id", pa.string()),
        ("timestamp", pa.float64()),
        ("description", pa.string()),
        ("trigger", pa.string()),
    ]
)
SESSIONS_SCHEMA = pa.schema(
    [
        ("session_id", pa.string()),
        ("insight_doc", pa.string()),  # JSON
        ("created_at", pa.float64()),
        ("updated_at", pa.float64()),
        ("open", pa.bool_()),
        ("pending_conflicts", pa.list_(pa.string())),
    ]
)
DELETED_SCHEMA = pa.schema([("kind", pa.string()), ("id", pa.string())])
TABLES = {
    "nodes": NODES_SCHEMA,
    "conflicts": CONFLICTS_SCHEMA,
    "entries": ENTRIES_SCHEMA,
    "node_entries": NODE_ENTRIES_SCHEMA,
    "merge_events": MERGE_EVENTS_SCHEMA,
    "sessions": SESSIONS_SCHEMA,
    "deleted": DELETED_SCHEMA,
    "node_terms": NODE_TERMS_SCHEMA,
}


@dataclass
class GraphState:
    """Everything the graph's storage holds for one store."""

    graph: QueryGraph = field(default_factory=QueryGraph)
    tree: InteractionTree = field(default_factory=InteractionTree)
    sessions: dict[str, SessionRecord] = field(default_factory=dict)
    seq: int = 0  # the last checkpoint applied
    changed_sessions: set[str] = field(default_factory=set)


@dataclass
class GraphRecords:
    """Records to write: a whole state (snapshot) or one batch of changes (checkpoint)."""

    nodes: list[GraphNode] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    entries: list[InteractionEntry] = field(default_factory=list)
    node_entries: dict[str, list[str]] = field(default_factory=dict)
    merge_events: list[MergeEvent] = field(default_factory=list)
    sessions: list[SessionRecord] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (kind, id)
    # node id -> the stems the graph's BM25 indexes of it (current nodes among `nodes`), so
    # that loading the graph does not tokenize every node again
    terms: dict[str, list[str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        # `terms` alone is no change: it only describes `nodes`
        return any(getattr(self, f.name) for f in fields(self) if f.name != "terms")


def all_records(state: GraphState) -> GraphRecords:
    return GraphRecords(
        nodes=list(state.graph.nodes.values()),
        terms=_indexed_terms(state.graph, state.graph.nodes),
        conflicts=list(state.graph.conflicts.values()),
        entries=list(state.tree.entries.values()),
        node_entries={k: list(v) for k, v in state.tree.node_to_entries.items()},
        merge_events=list(state.tree.merge_events.values()),
        sessions=list(state.sessions.values()),
    )


def take_changes(state: GraphState) -> GraphRecords:
    """The records changed since the last call, as a checkpoint's content."""
    graph_changes = state.graph.take_changes()
    tree_changes = state.tree.take_changes()
    sessions = sorted(state.changed_sessions)
    state.changed_sessions = set()
    graph, tree = state.graph, state.tree
    nodes = [graph.nodes[i] for i in sorted(graph_changes.nodes) if i in graph.nodes]
    return GraphRecords(
        nodes=nodes,
        terms=_indexed_terms(graph, (node.id for node in nodes)),
        conflicts=[
            graph.conflicts[i] for i in sorted(graph_changes.conflicts) if i in graph.conflicts
        ],
        entries=[tree.entries[i] for i in sorted(tree_changes.entries)],
        node_entries={i: list(tree.node_to_entries[i]) for i in sorted(tree_changes.links)},
        merge_events=[tree.merge_events[i] for i in sorted(tree_changes.merge_events)],
        sessions=[state.sessions[i] for i in sessions if i in state.sessions],
        deleted=[("node", i) for i in sorted(graph_changes.deleted_nodes)]
        + [("conflict", i) for i in sorted(graph_changes.conflicts) if i not in graph.conflicts],
    )


def _indexed_terms(graph: QueryGraph, node_ids: Iterable[str]) -> dict[str, list[str]]:
    found = {node_id: graph.indexed_terms(node_id) for node_id in node_ids}
    return {node_id: terms for node_id, terms in found.items() if terms is not None}


# --- writing --------------------------------------------------------------------------------


def write_records(directory: Path, records: GraphRecords, seq: int) -> None:
    """Write `records` as Parquet tables into `directory` (created), with `graph.json`."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = {
        "conflicts": [_fields(c, CONFLICTS_SCHEMA) for c in records.conflicts],
        "entries": [_entry_row(e) for e in records.entries],
        "node_entries": [
            {"node_id": k, "entry_ids": v} for k, v in sorted(records.node_entries.items())
        ],
        "merge_events": [merge_event_row(m) for m in records.merge_events],
        "sessions": [_session_row(s) for s in records.sessions],
        "deleted": [{"kind": k, "id": i} for k, i in records.deleted],
        "node_terms": [{"node_id": k, "terms": v} for k, v in sorted(records.terms.items())],
    }
    tables = {"nodes": _nodes_table(records.nodes)} | {
        name: pa.Table.from_pylist(table_rows, schema=TABLES[name])
        for name, table_rows in rows.items()
    }
    for name, table in tables.items():
        if table.num_rows:
            pq.write_table(table, directory / f"{name}.parquet")
    meta = {"format": FORMAT, "seq": seq, "stems": STEMS_VERSION}
    (directory / GRAPH_META).write_text(json.dumps(meta), encoding="utf-8")


def write_checkpoint(log_dir: Path, records: GraphRecords, seq: int) -> Path:
    """One checkpoint, whole or not at all: written aside, synced, renamed into place."""
    with writing(log_dir):
        log_dir.mkdir(parents=True, exist_ok=True)
        temporary = log_dir / f".tmp-{secrets.token_hex(6)}"
        try:
            write_records(temporary, records, seq)
            for path in temporary.iterdir():
                with open(path, "rb") as handle:
                    os.fsync(handle.fileno())
            fsync_directory(temporary)
            final = log_dir / f"{seq:09d}"
            os.rename(temporary, final)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        fsync_directory(log_dir)
    return final


def checkpoints(log_dir: Path, after: int = 0) -> list[tuple[int, Path]]:
    """The checkpoints in `log_dir` numbered above `after`, in order."""
    if not log_dir.is_dir():
        return []
    found = [
        (int(path.name), path)
        for path in log_dir.iterdir()
        if _CHECKPOINT_NAME.fullmatch(path.name)
    ]
    return sorted(item for item in found if item[0] > after)


def drop_checkpoints(log_dir: Path, upto: int) -> None:
    """Remove checkpoints a snapshot holds (numbered `upto` or below) and dead temporaries."""
    if not log_dir.is_dir():
        return
    for path in log_dir.iterdir():
        held = _CHECKPOINT_NAME.fullmatch(path.name) and int(path.name) <= upto
        if held or path.name.startswith(".tmp-"):
            shutil.rmtree(path, ignore_errors=True)


# --- reading --------------------------------------------------------------------------------


def read_seq(directory: Path) -> int:
    meta = read_meta(directory)
    try:
        return int(meta["seq"]) if meta is not None else 0
    except (ValueError, KeyError) as exc:
        raise StoreError(f"unreadable graph metadata {directory / GRAPH_META}: {exc}") from exc


def read_meta(directory: Path) -> dict[str, Any] | None:
    """The `graph.json` of a snapshot or checkpoint directory; None where there is none."""
    path = directory / GRAPH_META
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"unreadable graph metadata {path}: {exc}") from exc
    if not isinstance(meta, dict):
        raise StoreError(f"unreadable graph metadata {path}: not a JSON object")
    return meta


def stored_stems_usable(directory: Path) -> bool:
    """Whether the node stems stored in `directory` are what this code's lexicon makes of the
    nodes' text (records written before stems were stored, or under another lexicon: not)."""
    meta = read_meta(directory)
    return meta is not None and meta.get("stems") == STEMS_VERSION


def apply_records(state: GraphState, directory: Path) -> None:
    """Upsert every record stored in `directory` into `state` (a snapshot or a checkpoint)."""
    tables = {name: _read(directory / f"{name}.parquet", schema) for name, schema in TABLES.items()}
    graph, tree = state.graph, state.tree
    stems = (
        {row["node_id"]: row["terms"] for row in tables["node_terms"].to_pylist()}
        if stored_stems_usable(directory)
        else {}
    )
    for row, vectors in _node_rows(tables["nodes"]):
        graph.put_node(_node(row, *vectors), stems.get(row["id"]))
    for row in tables["conflicts"].to_pylist():
        graph.put_conflict(Conflict(**row))
    for row in tables["entries"].to_pylist():
        entry = _entry(row)
        tree.entries.setdefault(entry.entry_id, entry)
    for row in tables["node_entries"].to_pylist():
        tree.node_to_entries[row["node_id"]] = list(row["entry_ids"])
    for row in tables["merge_events"].to_pylist():
        event = MergeEvent(**row | {"merged_node_ids": tuple(row["merged_node_ids"])})
        tree.merge_events[event.event_id] = event
    for row in tables["sessions"].to_pylist():
        record = _session(row)
        state.sessions[record.session_id] = record
    for row in tables["deleted"].to_pylist():
        if row["kind"] == "node":
            graph.delete_node(row["id"])  # a node no longer there is passed over
        elif row["kind"] == "conflict":
            graph.forget_conflict(row["id"])
    graph.take_changes()
    tree.take_changes()


# --- rows -----------------------------------------------------------------------------------


def _nodes_table(nodes: Iterable[GraphNode]) -> pa.Table:
    nodes = list(nodes)
    columns = NODES_SCHEMA.remove(14).remove(13)  # the vectors go in as arrays, below
    rows = [
        _fields(n, columns)
        | {
            "keywords": list(n.keywords),
            "links": json.dumps(n.links, sort_keys=True),
            "history": json.dumps([h.to_dict() for h in n.history]),
        }
        for n in nodes
    ]
    base = pa.Table.from_pylist(rows, schema=columns)
    no_vectors = np.zeros((0, DIMENSIONS), np.float32)
    embedding = np.stack([n.embedding for n in nodes]) if nodes else no_vectors
    summary = np.stack([n.summary_vector for n in nodes]) if nodes else no_vectors
    return base.append_column("embedding", embedding_array(embedding)).append_column(
        "summary_vector", embedding_array(summary)
    )


def _read(path: Path, schema: pa.Schema) -> pa.Table:
    if not path.is_file():
        return schema.empty_table()
    try:
        return pq.read_table(path).cast(schema)
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"graph table {path} is unreadable: {exc}") from exc


def _node_rows(table: pa.Table) -> list[tuple[dict[str, Any], tuple[np.ndarray, np.ndarray]]]:
    if not table.num_rows:
        return []
    embeddings = _matrix(table, "embedding")
    summaries = _matrix(table, "summary_vector")
    rows = table.drop_columns(["embedding", "summary_vector"]).to_pylist()
    return [(row, (embeddings[i], summaries[i])) for i, row in enumerate(rows)]


def _matrix(table: pa.Table, column: str) -> np.ndarray:
    values = table.column(column).combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float32).reshape(table.num_rows, -1).copy()


def _node(row: dict[str, Any], embedding: np.ndarray, summary_vector: np.ndarray) -> GraphNode:
    decoded = {
        "keywords": list(row["keywords"] or []),
        "links": json.loads(row["links"] or "{}"),
        "history": [HistoryEntry.from_dict(h) for h in json.loads(row["history"] or "[]")],
        "content": row["content"] or "",
        "source": row["source"] or "",
    }
    return GraphNode(**row | decoded, embedding=embedding, summary_vector=summary_vector)


def _fields(record: object, schema: pa.Schema) -> dict[str, Any]:
    """A record's attributes named by the columns of its table."""
    return {name: getattr(record, name) for name in schema.names}


def _entry_row(entry: InteractionEntry) -> dict[str, Any]:
    return _fields(entry, ENTRIES_SCHEMA) | {
        "metadata": json.dumps(entry.metadata, sort_keys=True, default=str),
        "attachments": json.dumps([a.__dict__ for a in entry.attachments]),
    }


def _entry(row: dict[str, Any]) -> InteractionEntry:
    attachments = tuple(Attachment(**a) for a in json.loads(row["attachments"] or "[]"))
    return InteractionEntry(
        **row | {"metadata": json.loads(row["metadata"] or "{}"), "attachments": attachments}
    )


def merge_event_row(event: MergeEvent) -> dict[str, Any]:
    """A merge event as a row of its table (and as a session export lists it)."""
    return _fields(event, MERGE_EVENTS_SCHEMA) | {"merged_node_ids": list(event.merged_node_ids)}


def _session_row(record: SessionRecord) -> dict[str, Any]:
    return _fields(record, SESSIONS_SCHEMA) | {
        "insight_doc": json.dumps(record.insight_doc),
        "pending_conflicts": list(record.pending_conflicts),
    }


def _session(row: dict[str, Any]) -> SessionRecord:
    record = SessionRecord(**row)
    record.insight_doc = json.loads(row["insight_doc"])
    record.pending_conflicts = list(row["pending_conflicts"] or [])
    return record
