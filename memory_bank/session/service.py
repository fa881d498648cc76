"""`SessionService`: the Memory Bank's sessions over a store's graph (seed 001 §3.3, §4.2):
open a session with its Insight Doc, intercept a finished task's context (memory made,
conflicts found or settled, the next task planned), enhance the agent's prompt, read a node
and the raw contexts behind it, export and close.

The graph itself is a `GraphStorage` (memory_bank/graph/storage.py), which the store's commits
share (`ingest.graph_step.IngestGraphStep`); on Ray both live in the store's graph actor.
Agent calls that take long (classifying, structuring and embedding a context) run without the
graph lock, through a `PieceDrafter` (`pieces.py`: in this process, or on Ray tasks outside the
graph actor's process); everything that reads and changes the graph runs under it, on the
latest graph, in bounded steps: a long context is taken in pieces of at most
`session.analysis_chars`, each drafted outside the lock and its nodes analysed under it on
their own, so an intercept costs time linear in its length and another caller (on Ray, the
graph actor runs several at once) waits for one piece at most. The limits (`limits.*`) refuse
an oversized goal, context or attachment list before any work.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_bank.config import AppConfig
from memory_bank.errors import SessionError
from memory_bank.graph.model import Attachment, Conflict, InteractionEntry, SessionRecord
from memory_bank.graph.node_views import SentenceVectors
from memory_bank.graph.persist import GraphState, merge_event_row
from memory_bank.graph.storage import GraphStorage
from memory_bank.index.embedders import build_embedder
from memory_bank.index.embedding import Embedder
from memory_bank.limits import check_context, check_files, check_question
from memory_bank.llm.seam import LLM
from memory_bank.session.agents import RoleAgents, SessionAgents
from memory_bank.session.engine import SessionEngine, node_info
from memory_bank.session.models import (
    ConflictNotice,
    ConflictView,
    EntryView,
    GraphSummary,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    PlanRequest,
    SessionExport,
    TaskType,
)
from memory_bank.session.pieces import (
    PieceDraft,
    PieceDrafter,
    context_pieces,
    draft_serially,
    session_nodes,
)
from memory_bank.session.planning import enhanced_prompt, should_terminate, task_type_of
from memory_bank.session.views import (
    conflict_view,
    entry_view,
    graph_summary,
    node_detail,
)


@dataclass
class _Absorbed:
    """What an intercepted context did to the graph."""

    new_ids: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    resolved: list[ConflictView] = field(default_factory=list)
    related: int = 0

    def include(self, other: _Absorbed) -> None:
        """Add what another piece of the same context did."""
        self.new_ids += other.new_ids
        self.merged += other.merged
        self.conflicts += other.conflicts
        self.resolved += other.resolved
        self.related += other.related


class SessionService:
    def __init__(
        self,
        storage: GraphStorage,
        config: AppConfig | None = None,
        embedder: Embedder | None = None,
        agents: Callable[[Embedder], SessionAgents] | None = None,
        llm: LLM | None = None,
        draft_pieces: PieceDrafter | None = None,
    ) -> None:
        """`llm`: the process's LLM for the session's agents (None: offline); `agents` makes
        other agents over the embedder (tests); `draft_pieces` drafts an intercept's pieces
        elsewhere (default: here, with these agents)."""
        self.storage = storage
        self.config = config or AppConfig()
        self._embedder = embedder
        self._agents_factory = agents or (lambda e: RoleAgents(llm, e, self.config.memorize))
        self._agents: SessionAgents | None = None
        self.draft_pieces = draft_pieces or draft_serially(
            lambda: self.agents, lambda: self.embedder
        )
        # The session nodes' sentence vectors, kept across calls: each analysis reads its
        # candidates' (under the graph lock), and embedding them anew each time is most of it.
        self._sentences = SentenceVectors()
        # Loads the model once, however many callers (threads of the graph actor) ask at first.
        self._loading = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        with self._loading:
            if self._embedder is None:
                self._embedder = build_embedder(self.config.embedding)
            return self._embedder

    @property
    def agents(self) -> SessionAgents:
        if self._agents is None:
            embedder = self.embedder
            with self._loading:
                if self._agents is None:
                    self._agents = self._agents_factory(embedder)
        return self._agents

    def _engine(self) -> SessionEngine:
        state = self.storage.state
        return SessionEngine(
            state,
            self.agents,
            self.embedder,
            self.storage.memories,
            self.config.retrieval.top_k,
            self._sentences,
        )

    # --- sessions ---------------------------------------------------------------------------

    def open_session(self, task_goal: str) -> InsightDoc:
        if not task_goal.strip():
            raise SessionError("a session needs a task goal")
        check_question(self.config.limits, task_goal, "task goal")
        with self.storage.mutating() as state:
            session_id = "s-" + uuid.uuid4().hex[:16]
            doc = InsightDoc(doc_id=session_id, task_goal=task_goal.strip())
            doc = self._planned(self._engine(), doc)
            now = time.time()
            state.sessions[session_id] = SessionRecord(session_id, doc.model_dump(), now, now)
            state.changed_sessions.add(session_id)
        return doc

    def intercept(
        self,
        session_id: str,
        context: str,
        task_type: TaskType | None = None,
        attachments: Sequence[Attachment] = (),
        metadata: dict | None = None,
    ) -> InterceptResult:
        """Seed 001 §4.2 steps 13-15: the context becomes memory (or settles the pending
        conflicts, for a cross-validation), then the Insight Doc is planned anew. A long
        context becomes memory piece by piece (see the module docstring); the entry keeps it
        whole."""
        if not context.strip():
            raise SessionError("nothing to intercept: the context is empty")
        check_context(self.config.limits, context)
        check_files(self.config.limits, len(attachments), "attachments")
        record = self._open_record(session_id)
        doc = InsightDoc.model_validate(record.insight_doc)
        kind: TaskType = task_type or task_type_of(
            doc.pending_tasks[0] if doc.pending_tasks else None
        )
        if kind == "cross_validate" and record.pending_conflicts:
            with self.storage.mutating() as state:
                record = self._open_record(session_id)
                absorbed = _cross_validated(self._engine(), state, record, context, session_id)
        else:
            kind = "normal"
            absorbed = self._memorize(session_id, doc.task_goal, context)
        with self.storage.mutating() as state:
            record = self._open_record(session_id)
            engine = self._engine()
            entry = _entry(context, session_id, kind, doc, attachments, metadata)
            # Other callers went on between the pieces: keep what is still in the graph.
            new_ids = [i for i in dict.fromkeys(absorbed.new_ids) if i in state.graph.nodes]
            state.tree.add_entry(entry, dict.fromkeys(new_ids))
            found = [
                state.graph.conflicts[c] for c in absorbed.conflicts if c in state.graph.conflicts
            ]
            new_nodes = [node_info(state.graph.nodes[i]) for i in new_ids]
            doc = self._planned(
                engine,
                doc,
                new_nodes=new_nodes,
                conflict=_notice(found),
                intercepted=True,
                resolved_conflict=bool(absorbed.resolved),
            )
            record.insight_doc = doc.model_dump()
            record.pending_conflicts = [c.id for c in found]
            record.updated_at = time.time()
            state.changed_sessions.add(session_id)
        return InterceptResult(
            session_id=session_id,
            task_type=kind,
            new_nodes=new_nodes,
            merged=absorbed.merged,
            related=absorbed.related,
            conflicts=[conflict_view(c) for c in found],
            resolved=absorbed.resolved,
            entry_id=entry.entry_id,
            insight_doc=doc,
            done=should_terminate(doc),
        )

    def _memorize(self, session_id: str, task_goal: str, context: str) -> _Absorbed:
        """`context` as new session nodes: its pieces drafted without the graph lock, then
        each piece's nodes made and analysed under it (one checkpoint per piece)."""
        absorbed = _Absorbed()
        pieces = context_pieces(context, self.config.session.analysis_chars)
        for draft in self.draft_pieces(pieces, task_goal):
            with self.storage.mutating() as state:
                self._open_record(session_id)  # not closed meanwhile
                absorbed.include(_memorized(self._engine(), state, draft, session_id, task_goal))
        return absorbed

    def _planned(self, engine: SessionEngine, doc: InsightDoc, **request: Any) -> InsightDoc:
        """`doc` planned anew by the planning agent (`request`: the rest of its PlanRequest),
        told how much of the goal the graph already covers."""
        coverage, missing = engine.goal_coverage(doc.task_goal)
        plan = self.agents.plan(
            PlanRequest(insight_doc=doc, goal_coverage=coverage, missing_terms=missing, **request)
        )
        return InsightDoc(doc_id=doc.doc_id, **plan.model_dump())

    def insight_doc(self, session_id: str) -> InsightDoc:
        return InsightDoc.model_validate(self._record(session_id).insight_doc)

    def enhance_prompt(self, session_id: str) -> str:
        """Seed 002 §6.3: the Insight Doc and the memories retrieved for its pending task."""
        with self.storage.lock:
            doc = self.insight_doc(session_id)
            memories = self._engine().retrieve(doc.pending_tasks[0]) if doc.pending_tasks else []
            return enhanced_prompt(doc, [node_info(node) for node in memories])

    def export(self, session_id: str) -> SessionExport:
        with self.storage.lock:
            record = self._record(session_id)
            state = self.storage.state
            nodes = [n for n in state.graph.nodes.values() if n.session_id == session_id]
            node_ids = {n.id for n in nodes}
            entry_ids = list(
                dict.fromkeys(e for n in nodes for e in state.tree.node_to_entries.get(n.id, []))
            )
            return SessionExport(
                session_id=session_id,
                insight_doc=InsightDoc.model_validate(record.insight_doc),
                nodes=[self.node(n.id) for n in nodes],
                entries=[
                    entry_view(state.tree.entries[e]) for e in entry_ids if e in state.tree.entries
                ],
                merge_events=[
                    merge_event_row(m)
                    for m in state.tree.merge_events.values()
                    if any(i in node_ids for i in (m.new_node_id, *m.merged_node_ids))
                ],
                open=record.open,
            )

    def close(self, session_id: str) -> SessionExport:
        """Close a session; its memory stays in the graph for later questions."""
        with self.storage.mutating() as state:
            record = self._record(session_id)
            record.open = False
            record.updated_at = time.time()
            state.changed_sessions.add(session_id)
        return self.export(session_id)

    def _record(self, session_id: str) -> SessionRecord:
        record = self.storage.state.sessions.get(session_id)
        if record is None:
            raise SessionError(f"no session {session_id!r} in {self.storage.store}")
        return record

    def _open_record(self, session_id: str) -> SessionRecord:
        record = self._record(session_id)
        if not record.open:
            raise SessionError(f"session {session_id!r} is closed")
        return record

    # --- reading the graph ------------------------------------------------------------------

    def node(self, node_id: str) -> NodeDetail:
        with self.storage.lock:
            state = self.storage.state
            node = state.graph.nodes.get(node_id)
            if node is None:
                raise SessionError(f"no memory {node_id!r} in the graph of {self.storage.store}")
            return node_detail(state, node, self.deep_retrieval(node_id))

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        """The raw contexts behind a node: its interaction entries, or a memory's chunk."""
        with self.storage.lock:
            state = self.storage.state
            node = state.graph.nodes.get(node_id)
            if node is None:
                raise SessionError(f"no memory {node_id!r} in the graph of {self.storage.store}")
            entries = [entry_view(e) for e in state.tree.entries_for(node_id)]
            if node.kind == "memory":
                text = self.storage.memories.text(node_id)
                if text:
                    entries.insert(
                        0,
                        EntryView(
                            entry_id=node_id,
                            text=text,
                            timestamp=node.timestamp,
                            metadata={"source": node.source},
                        ),
                    )
            return entries

    def summary(self) -> GraphSummary:
        with self.storage.lock:
            return graph_summary(self.storage.state)


def _entry(
    context: str,
    session_id: str,
    kind: TaskType,
    doc: InsightDoc,
    attachments: Sequence[Attachment],
    metadata: dict | None,
) -> InteractionEntry:
    return InteractionEntry(
        entry_id="e-" + uuid.uuid4().hex[:16],
        text=context,
        timestamp=time.time(),
        metadata={
            "session_id": session_id,
            "task_type": kind,
            "task": doc.pending_tasks[0] if doc.pending_tasks else "",
            **(metadata or {}),
        },
        attachments=tuple(attachments),
    )


def _memorized(
    engine: SessionEngine,
    state: GraphState,
    draft: PieceDraft,
    session_id: str,
    task_goal: str | None = None,
) -> _Absorbed:
    """A piece's clusters as new session nodes, each analysed against the graph (and for the
    session's task goal)."""
    absorbed = _Absorbed()
    for node, cluster in zip(session_nodes(draft, session_id), draft.clusters, strict=True):
        state.graph.add_node(node)
        engine.views.remember(node.id, cluster.text, cluster.sentence_vectors)
        outcome = engine.analyse(node.id, session_id, task_goal=task_goal)
        absorbed.new_ids.append(outcome.node_id)
        absorbed.merged += outcome.merged
        absorbed.conflicts += outcome.conflicts
        absorbed.related += outcome.related
    return absorbed


def _cross_validated(
    engine: SessionEngine,
    state: GraphState,
    record: SessionRecord,
    context: str,
    session_id: str,
) -> _Absorbed:
    """The session's pending conflicts settled by a cross-validation result; the node that
    stands for the validated claims, analysed again when it is a session node."""
    settled, standing = engine.merger.resolve(record.pending_conflicts, context, session_id)
    absorbed = _Absorbed(resolved=[conflict_view(c) for c in settled])
    if standing is None:
        return absorbed
    absorbed.new_ids.append(standing)
    if state.graph.nodes[standing].kind == "session":
        outcome = engine.analyse(standing, session_id)
        absorbed.conflicts += outcome.conflicts
        absorbed.merged += outcome.merged
        absorbed.new_ids[-1] = outcome.node_id
    return absorbed


def _notice(conflicts: Sequence[Conflict]) -> ConflictNotice | None:
    if not conflicts:
        return None
    return ConflictNotice(
        conflicting_node_ids=list(dict.fromkeys(i for c in conflicts for i in (c.older, c.newer))),
        conflict_description="; ".join(c.description for c in conflicts),
    )
