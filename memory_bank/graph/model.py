"""The records of the Query Graph and the Interaction Tree (seed 002 §3.2-3.3).

- `GraphNode`: a memory node. `kind` "memory" nodes stand for a stored memory (their id is
  the chunk id; the chunk's text is their raw content) and are never merged away; "session"
  nodes are made by a session's intercepts from a cluster of its context. A node that a merge
  or a validated conflict replaced keeps its record with `status` "merged" or "superseded"
  and `superseded_by`: it leaves retrieval and the edges, never the store.
- `Conflict`: two nodes giving different values for one subject and attribute. `open` until
  validated; then `current` names the node whose claim holds and the other's claim is history
  (`superseded_at`). Conflicts between stored memories are validated by recency (the later
  source holds), a session's by its cross-validation task.
- `InteractionEntry` / `Attachment` / `MergeEvent`: the read-only Interaction Tree.
- `SessionRecord`: an open or closed session's Insight Doc.

Records are plain dataclasses (numpy vectors inside); `persist.py` maps them to Parquet.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

NodeKind = Literal["memory", "session"]
NodeStatus = Literal["current", "merged", "superseded"]
Relation = Literal["related", "merge"]
ConflictStatus = Literal["open", "resolved"]


@dataclass
class HistoryEntry:
    """One earlier state of a node: what it said, until when, and why it changed."""

    at: float  # when it stopped being current
    event: str  # "merged", "superseded", "context updated", "claim superseded"
    summary: str = ""
    context: str = ""
    detail: str = ""  # e.g. the conflict description, the node ids merged in
    node_id: str = ""  # the node this history came from (merged nodes' own ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HistoryEntry:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


@dataclass
class GraphNode:
    id: str
    kind: NodeKind
    summary: str
    context: str
    keywords: list[str]
    timestamp: float
    embedding: np.ndarray  # normalized: summary vector + context/keywords vector
    summary_vector: np.ndarray  # the summary's own vector (kept: re-embedding needs only the rest)
    links: dict[str, Relation] = field(default_factory=dict)  # neighbour id -> relation
    history: list[HistoryEntry] = field(default_factory=list)
    status: NodeStatus = "current"
    superseded_by: str | None = None
    # The raw text the node was made from (a session cluster's content); empty for a memory
    # node, whose chunk text is in chunks.parquet.
    content: str = ""
    source: str = ""  # a memory's source file, or "session:<id>"
    session_id: str | None = None

    @property
    def is_current(self) -> bool:
        return self.status == "current"


@dataclass
class Conflict:
    id: str
    older: str  # node id of the earlier claim
    newer: str  # node id of the later claim
    description: str
    subject: str
    attribute: str
    old_value: str
    new_value: str
    old_sentence: str
    new_sentence: str
    detected_at: float
    status: ConflictStatus = "open"
    current: str | None = None  # the node whose claim holds, once resolved
    resolved_at: float | None = None
    resolution: str = ""  # "later source", or the validation's summary
    session_id: str | None = None

    @property
    def superseded(self) -> str | None:
        """The node whose claim is history, once resolved."""
        if self.current is None:
            return None
        return self.older if self.current == self.newer else self.newer


@dataclass(frozen=True)
class Attachment:
    id: str
    type: str  # "image", "document", "code", ...
    path: str  # where the file is; never its content


@dataclass(frozen=True)
class InteractionEntry:
    """A raw context as intercepted; never modified or deleted."""

    entry_id: str
    text: str
    timestamp: float
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class MergeEvent:
    event_id: str
    merged_node_ids: tuple[str, ...]
    new_node_id: str
    timestamp: float
    description: str
    trigger: str = "merge"  # "merge" or "conflict"


@dataclass
class SessionRecord:
    """A session's Insight Doc (as JSON-ready data) and whether it is still open."""

    session_id: str
    insight_doc: dict[str, Any]
    created_at: float
    updated_at: float
    open: bool = True
    # Conflicts the session's pending cross-validation task is about.
    pending_conflicts: list[str] = field(default_factory=list)
