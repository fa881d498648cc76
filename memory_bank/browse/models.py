"""What the browsing views return: pydantic models, JSON over HTTP, with no vectors in them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_bank.conversation.records import TurnRecord
from memory_bank.session.models import EntryView, HistoryView


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Crumb(_View):
    """One step of a breadcrumb: a directory from the root down."""

    path: str  # "/" or "/a/b"
    name: str  # "" for the root


class DirectoryEntry(_View):
    """A subdirectory as a listing shows it, with its size."""

    path: str
    name: str
    description: str
    memories: int  # in its whole subtree
    directories: int  # its own subdirectories


class MemoryEntry(_View):
    """A memory as a listing shows it."""

    chunk_id: str
    title: str
    tldr: str
    path: str  # of its file, relative to the store root ("a/b/title.md")


class DirectoryPage(_View):
    """One directory: its README's summary and key terms, its subdirectories with their sizes
    and one page of the memories filed directly in it."""

    store_version: str
    path: str
    name: str
    title: str  # the README's heading
    summary: str  # the README's text before its first section
    key_terms: list[str]
    description: str  # what the parent's README says of it
    breadcrumb: list[Crumb]  # the root first, this directory last
    memories: int  # in the whole subtree
    directories: list[DirectoryEntry]
    files: list[MemoryEntry]  # the page asked for, by file name
    files_total: int  # memories filed directly here
    offset: int


class DocumentRef(_View):
    document_id: str
    source: str  # the path given to ingest
    title: str
    kind: str


class Neighbour(_View):
    """A memory the Query Graph links to this one."""

    id: str
    relation: str  # "related" or "merge"
    title: str  # the memory's title, or a session memory's summary
    path: str  # of its file, "" for a session memory
    summary: str
    status: str  # "current", "merged", "superseded"


class ClaimValue(_View):
    """One value a memory gave for a subject and attribute, and what became of it."""

    value: str
    sentence: str
    node_id: str
    title: str
    path: str  # of the memory's file ("" for a session memory)
    source: str  # the document it came from
    recorded_at: str  # UTC ISO 8601: when the memory stating it was added
    state: Literal["current", "superseded", "disputed"]  # disputed: an open conflict
    superseded_at: str | None = None
    superseded_by: str | None = None  # the node whose value replaced it


class ClaimTimeline(_View):
    """The values given for one subject and attribute, oldest first."""

    subject: str
    attribute: str
    values: list[ClaimValue]
    open: bool  # some conflict about it is not settled yet


class MemoryPage(_View):
    """One memory with what surrounds it: its file, its source, the raw text behind it, its
    neighbours in the Query Graph and the history of its claims."""

    store_version: str
    id: str  # the chunk id (the graph node's id), or a session memory's node id
    kind: Literal["memory", "session"]
    title: str
    path: str  # of its file, "" for a session memory
    directory: str  # tree path, "" for a session memory
    breadcrumb: list[Crumb]
    frontmatter: dict[str, Any]
    text: str  # the memory (the file's body)
    tldr: str
    keywords: list[str]
    document: DocumentRef | None
    position: int | None  # of the chunk within its document
    section: str | None
    raw_text: str  # the chunk the memory was made from
    entries: list[EntryView]  # the Interaction Tree's raw contexts behind the node
    status: str  # "current", "merged", "superseded" (a memory never in the graph: "current")
    superseded_by: str | None
    recorded_at: str | None  # when the memory entered the graph
    neighbours: list[Neighbour]
    timelines: list[ClaimTimeline]
    history: list[HistoryView]


class VersionInfo(_View):
    """One version directory of the store (a commit), newest first."""

    number: int
    store_version: str
    published_at: str  # UTC ISO 8601
    documents: int
    chunks: int
    directories: int
    live: bool


class Reorganization(_View):
    at: str
    reason: str
    moved: int
    new_directories: int
    deleted_directories: int


class OpenConflict(_View):
    id: str
    subject: str
    attribute: str
    description: str
    older: str
    newer: str
    older_value: str
    newer_value: str
    detected_at: str


class StoreStatus(_View):
    """The store at a glance."""

    store_version: str
    created_at: str
    updated_at: str
    documents: int
    chunks: int
    directories: int
    backend: str
    embedding_model: str
    versions: list[VersionInfo]
    reorganizations: list[Reorganization]  # the latest first
    graph_nodes: int
    graph_edges: dict[str, int]
    conflicts_resolved: int
    conflicts_open: int
    open_conflicts: list[OpenConflict]  # the latest first, at most a page
    sessions: int
    open_sessions: int


class ConversationSummary(_View):
    conversation_id: str
    turns: int


class ConversationPage(_View):
    """A conversation's working turns and running summary, read from its files."""

    conversation_id: str
    turns: int
    working: list[TurnRecord] = Field(default_factory=list)  # the latest, oldest first
    working_total: int
    episodic_turns: int
    consolidated_turns: int
    summary: str
    evictions: int
