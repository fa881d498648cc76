"""What a session shows its caller: the Insight Doc, memories, intercept results, exports."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_bank.session.roles import (  # noqa: F401 - the session's own vocabulary
    CompletedTask,
    ConflictNotice,
    InsightDoc,
    NodeInfo,
    PlanRequest,
    PlanResult,
    TaskType,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryView(_Model):
    at: float
    event: str
    summary: str = ""
    context: str = ""
    detail: str = ""
    node_id: str = ""


class ConflictView(_Model):
    id: str
    older: str
    newer: str
    description: str
    subject: str
    attribute: str
    old_value: str
    new_value: str
    old_sentence: str
    new_sentence: str
    detected_at: float
    status: Literal["open", "resolved"]
    current: str | None = None
    superseded: str | None = None
    resolved_at: float | None = None
    resolution: str = ""


class EntryView(_Model):
    entry_id: str
    text: str
    timestamp: float
    metadata: dict[str, Any] = Field(default_factory=dict)
    attachments: list[dict[str, str]] = Field(default_factory=list)


class NodeDetail(_Model):
    """One node with its neighbours, conflicts, history and raw entries (GET /memory/{id})."""

    id: str
    kind: Literal["memory", "session"]
    status: Literal["current", "merged", "superseded"]
    superseded_by: str | None = None
    summary: str
    context: str
    keywords: list[str]
    timestamp: float
    source: str = ""
    neighbours: list[NodeInfo] = Field(default_factory=list)
    relations: dict[str, str] = Field(default_factory=dict)  # neighbour id -> relation
    conflicts: list[ConflictView] = Field(default_factory=list)
    history: list[HistoryView] = Field(default_factory=list)
    entries: list[EntryView] = Field(default_factory=list)


class InterceptResult(_Model):
    session_id: str
    task_type: TaskType
    new_nodes: list[NodeInfo]
    merged: list[str] = Field(default_factory=list)  # ids of nodes made by merges
    related: int = 0  # related edges made
    conflicts: list[ConflictView] = Field(default_factory=list)  # found by this intercept
    resolved: list[ConflictView] = Field(default_factory=list)  # settled by this intercept
    entry_id: str
    insight_doc: InsightDoc
    done: bool  # the termination rule holds


class SessionExport(_Model):
    session_id: str
    insight_doc: InsightDoc
    nodes: list[NodeDetail]
    entries: list[EntryView]
    merge_events: list[dict[str, Any]]
    open: bool


class GraphSummary(_Model):
    """What `memory-bank graph` prints for a whole store."""

    nodes: int
    memory_nodes: int
    session_nodes: int
    retired_nodes: int
    edges: dict[str, int]
    conflicts: list[ConflictView]
    merge_events: int
    sessions: int
    open_sessions: int
    checkpoint: int
