"""Pydantic schemas shared by every layer: documents, chunks, memories, the taxonomy and results."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DocumentKind = Literal["text", "markdown", "pdf", "conversation"]


class Turn(BaseModel):
    """One turn of a conversation source."""

    model_config = ConfigDict(extra="ignore")

    speaker: str
    text: str
    timestamp: str | None = None


class Document(BaseModel):
    """One source document. `document_id` is a content hash, so the same text gets the same id."""

    document_id: str
    source: str  # the path given to ingest (or "<text>" / "<text:N>" for raw text)
    title: str
    kind: DocumentKind
    text: str
    turns: list[Turn] = Field(default_factory=list)  # only for conversations
    encoding: str = "utf-8"  # what the source file was decoded from (as detected)
    # For conversations: char offset in `text` where each turn starts (same length as `turns`).
    turn_offsets: list[int] = Field(default_factory=list)


class Chunk(BaseModel):
    """A token-bounded piece of one document. Never spans two documents."""

    chunk_id: str  # f"{document_id}-{position:05d}"
    document_id: str
    source: str
    position: int  # 0-based position of the chunk within its document
    text: str
    token_count: int
    start_char: int  # offsets into Document.text
    end_char: int
    section: str | None = None  # nearest Markdown header above the chunk, if any
    speakers: list[str] = Field(default_factory=list)  # conversations: speakers of the turns
    timestamps: list[str] = Field(default_factory=list)  # conversations: timestamps, if given
    first_turn: int | None = None  # conversations: index of the first / last turn in the chunk
    last_turn: int | None = None


class MemorizedChunk(BaseModel):
    """The structured memory of one chunk (seed 000 §2.2 plus keywords and context)."""

    index: int  # global sequence number within the store
    title: str  # snake_case, 3-5 words
    memory: str
    tldr: str
    keywords: list[str] = Field(default_factory=list)
    context: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    # metadata keys set by memorize: source, document_id, chunk_id, token_count, start_char, end_char


class DirectoryNode(BaseModel):
    """A taxonomy plan node (seed 000 §2.3). Leaves hold chunk indices, parents hold none."""

    path: str  # "/" for the root, "/topic/subtopic" below it
    name: str
    description: str = ""
    children: list[DirectoryNode] = Field(default_factory=list)
    chunk_indices: list[int] = Field(default_factory=list)

    def is_leaf(self) -> bool:
        return not self.children

    def iter_nodes(self):
        """Yield this node and every descendant, parents before children."""
        yield self
        for child in self.children:
            yield from child.iter_nodes()

    def leaves(self) -> list[DirectoryNode]:
        return [node for node in self.iter_nodes() if node.is_leaf()]

    def depth(self) -> int:
        """Number of directory levels below the root (a root with only files has depth 0)."""
        if not self.children:
            return 0
        return 1 + max(child.depth() for child in self.children)


class HistoryNote(BaseModel):
    """A claim that a later one replaced: kept as history, never deleted (the Query Graph's
    resolved conflict behind it is `conflict_id`)."""

    subject: str
    attribute: str
    superseded_value: str
    current_value: str
    superseded_text: str  # the sentence that stated the old value
    current_text: str  # the sentence that states the current one
    superseded_source: str  # chunk file path, or "memory:<node id>" for a session memory
    current_source: str
    recorded_at: str  # UTC ISO 8601: when the old claim entered the memory
    superseded_at: str  # when the later claim replaced it
    conflict_id: str  # "" when the question's slot decided it (`basis`)
    # "graph": a conflict the Query Graph resolved; "question": two memories of the answer's
    # evidence give different values for what the question asks, the later add holds
    # (`query.slots`).
    basis: Literal["graph", "question"] = "graph"


class SearchHit(BaseModel):
    """One retrieval result, as the CLI, the Python API and the HTTP API return it."""

    chunk_path: str  # path of the chunk .md file relative to the store root
    chunk_id: str
    source: str  # the original file path given to ingest
    document_id: str
    score: float
    # The raw chunk text, i.e. the evidence passage (the chunk file holds the memory, a shorter
    # extract); for tree-mode README hits, the README's heading and description.
    text: str
    kind: Literal["chunk", "readme", "memory"] = "chunk"  # "memory": a session's graph node
    # Claims of this chunk that later ones replaced (the current chunk is ranked above it).
    history: list[HistoryNote] = Field(default_factory=list)


class TrajectoryStep(BaseModel):
    """One step of an exploration: a tool call (numbered) or a decision between calls."""

    number: int | None = None  # 1-based number of the tool call; None for a decision
    action: str  # "cat", "grep", "search", "ls", "descend", "follow_link", "stop", "answer", ...
    target: str = ""  # the path, pattern or query it was about
    detail: str = ""  # what came of it

    def render(self) -> str:
        """One line of `ChatResult.trajectory`, e.g. "[3] grep 'BERT' -> 1 file"."""
        target = repr(self.target) if self.action in ("search", "grep") else self.target
        line = " ".join(part for part in (self.action, target, self.detail) if part)
        return line if self.number is None else f"[{self.number}] {line}"


class ChatResult(BaseModel):
    """The answer to a question (seed 000 §2.5)."""

    question: str
    answer: str
    sources: list[str]  # store files the answer rests on
    confidence: float
    chunk_ids: list[str] = Field(default_factory=list)  # of the cited memory files
    files_read: list[str] = Field(default_factory=list)
    dirs_explored: list[str] = Field(default_factory=list)
    trajectory: str = ""  # the steps, one rendered line each (the specification's exploration log)
    notes: str | None = None
    steps: list[TrajectoryStep] = Field(default_factory=list)
    # What the answer's current facts replaced: the superseded claims of the memories read,
    # with when each was recorded and replaced. The answer states the current values only.
    history: list[HistoryNote] = Field(default_factory=list)
    # Files the answer rests on that are not what the store wrote (`store.integrity`).
    warnings: list[str] = Field(default_factory=list)


class MovedMemory(BaseModel):
    chunk_id: str
    source: str  # chunk file path before
    target: str  # chunk file path after


class ReorganizeOperation(BaseModel):
    """A full re-plan of a store's tree and what it changed (kept in .bank/reorganizations.json)."""

    at: str  # UTC, ISO 8601
    reason: str  # "rebuild", "every 50 adds", "cohesion 0.61 < 0.66", ...
    moved: list[MovedMemory] = Field(default_factory=list)
    new_directories: list[str] = Field(default_factory=list)
    deleted_directories: list[str] = Field(default_factory=list)


class CommitResult(BaseModel):
    """What one commit did to a store."""

    store_version: str
    written: bool = True  # False: the result equalled the live store, nothing was written
    documents: int = 0  # documents added
    duplicate_documents: int = 0  # already committed by the time this commit ran
    removed_documents: int = 0
    chunks: int = 0  # memories added
    removed_chunks: int = 0
    directories: int = 0  # below the root, after the commit
    # True when the new memories were placed into the stored tree (other memories kept their
    # paths, but for a directory split); False when the tree was planned anew (a new store, a
    # large add, a re-plan).
    placed: bool = False
    new_directories: list[str] = Field(default_factory=list)
    # Stored memories whose file path changed: a placed add that splits a full directory moves
    # that directory's memories into its new subdirectories; a re-plan may move any.
    moved_memories: int = 0
    readmes_regenerated: list[str] = Field(default_factory=list)  # tree paths
    reorganization: ReorganizeOperation | None = None
    # Seconds per step of the commit: wait (for the store's lock), load, plan, readme,
    # readme vectors, graph, write.
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    # The committing process's peak resident memory (MB) at the end of each step: a step that
    # raised it set a new peak (an earlier peak, e.g. the embedding before it, hides smaller
    # ones).
    stage_peak_mb: dict[str, float] = Field(default_factory=dict)
    llm: dict[str, Any] = Field(default_factory=dict)  # the commit's LLM usage (LedgerSummary)
    # The Query Graph's part: nodes added and removed, pairs analysed, related / merge edges
    # and conflicts found, the checkpoint the new version's graph snapshot holds.
    graph: dict[str, Any] = Field(default_factory=dict)


class IngestSummary(BaseModel):
    """What an ingest did; printed by the CLI and returned by MemoryBank.add."""

    store: str
    documents: int
    chunks: int
    directories: int
    skipped: list[str] = Field(default_factory=list)  # "path: reason" per skipped source
    # "path: encoding" per source read in another encoding than UTF-8 (detected).
    decoded: list[str] = Field(default_factory=list)
    unchanged_documents: int = 0  # already in the store (same content hash)
    # Stored documents processed again because the store was made with another memory recipe
    # (other chunking / memorize / embedding settings, or an older version of those stages).
    rebuilt_documents: int = 0
    # True when the new memories were placed into the stored tree (other memories kept their
    # paths); False when the tree was planned anew (a new store, a large add, a rebuild).
    placed: bool = False
    # Given documents whose memories came from the journal of an earlier, interrupted ingest.
    resumed_documents: int = 0
    resumed_chunks: int = 0  # taken from the journal of an earlier run, not made again
    commit: CommitResult | None = None  # None when nothing had to be committed
    # LLM usage of the whole ingest, per role (calls, cache hits, tokens, retries, repairs,
    # fallbacks, seconds, estimated cost); empty with the offline backend.
    llm: dict[str, Any] = Field(default_factory=dict)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    total_seconds: float = 0.0
    # Where the work ran ("local": in-process, "ray") and why, when the CLI chose it.
    runner: str | None = None
    runner_reason: str | None = None
