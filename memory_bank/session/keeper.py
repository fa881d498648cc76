"""`GraphKeeper`: the one holder of a store's Query Graph, Interaction Tree and sessions.

A plain in-process session uses it directly; on Ray it is the body of the store's named graph
actor (`actors/graph.py`), so Serve replicas, jobs and ingests share one graph.

Persistence, and why it keeps every acknowledged change without breaking readers:
- A store version is immutable once published (readers hold it; files are hard-linked into
  later versions). So the graph lives in two places: a *snapshot* in each version's
  `.bank/graph/` (written by the commit that made the version, numbered with the last
  checkpoint it holds) and *checkpoints* in the store's graph log `.<store>.graph/`, beside
  the versions: one per batch of changes (an intercept, an ingest's graph step), written
  aside, fsynced and renamed into place before the call that made it returns.
- The graph is the live snapshot plus every checkpoint numbered above it, applied in order.
  Checkpoint numbers are contiguous: a loader that finds a gap (a commit deleted checkpoints
  its new snapshot holds) loads again from the new version.
- Every change happens under the graph lock (`.<store>.graph.lock`, an flock) with the keeper
  reloaded first if the log moved on (another process wrote): one writer at a time, across
  processes, and each starts from the latest graph. A commit takes the store lock first and
  the graph lock inside it; intercepts take only the graph lock; nothing takes them in the
  other order, so they cannot deadlock, and an intercept never waits for an ingest's
  chunking or embedding (only for its graph step).
- A commit's graph step (`prepare_commit`) is itself a checkpoint, then its snapshot goes into
  the new version; checkpoints the snapshot holds are deleted after the version is published.
  If the commit fails after its checkpoint, the nodes of memories that never reached the store
  are pruned by the next commit (it knows every chunk id the store will hold).
- A failed mutation drops the in-memory state: the next call reloads what is on disk.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.errors import SessionError, StoreError
from memory_bank.graph.batch import (
    AnalyzeTask,
    BatchOutcome,
    GraphCommit,
    analyze_tasks,
    apply_verdicts,
    candidate_tasks,
    memory_node,
    run_tasks,
)
from memory_bank.graph.model import Attachment, InteractionEntry, SessionRecord
from memory_bank.graph.persist import (
    GRAPH_DIR,
    GraphRecords,
    GraphState,
    all_records,
    checkpoints,
    load_graph_state,
    read_seq,
    take_changes,
    write_checkpoint,
)
from memory_bank.index.embedding import Embedder
from memory_bank.limits import check_context, check_files, check_question
from memory_bank.llm import backend_for
from memory_bank.session.agents import BackendAgents, SessionAgents
from memory_bank.session.engine import SessionEngine, node_info
from memory_bank.session.memory_source import MemorySource
from memory_bank.session.models import (
    ConflictNotice,
    EntryView,
    GraphSummary,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    PlanRequest,
    SessionExport,
    TaskType,
)
from memory_bank.session.planning import enhanced_prompt, should_terminate, task_type_of
from memory_bank.session.views import conflict_view, entry_view, node_detail
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation
from memory_bank.tasks import TaskMap, run_serially

LOAD_ATTEMPTS = 5


class GraphKeeper:
    def __init__(
        self,
        store: str | Path,
        config: AppConfig | None = None,
        embedder: Embedder | None = None,
        agents: Callable[[Embedder], SessionAgents] | None = None,
        map_calls: TaskMap = run_serially,
        analyze_call: Callable[[Sequence[AnalyzeTask]], list] = analyze_tasks,
        encode_texts: Callable[[list[str]], np.ndarray] | None = None,
    ) -> None:
        """`encode_texts`: how a commit's graph step re-embeds the nodes it updates (default:
        this keeper's embedder; on Ray a task, so the actor need not load the model)."""
        self.store = Path(store)
        self.location = StoreLocation(store)
        self.config = config or AppConfig()
        self._embedder = embedder
        self._agents_factory = agents or (
            lambda e: BackendAgents(backend_for(self.config.llm), e, self.config.memorize)
        )
        self._agents: SessionAgents | None = None
        self.map_calls = map_calls
        self.analyze_call = analyze_call
        self._encode_texts = encode_texts
        self._state: GraphState | None = None
        self._version: str | None = None
        self._memories = MemorySource(None)
        self._lock = threading.RLock()

    # --- plumbing ---------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        with self._lock:  # loaded once, however many callers ask at first
            if self._embedder is None:
                self._embedder = Embedder(self.config.embedding)
            return self._embedder

    @property
    def agents(self) -> SessionAgents:
        if self._agents is None:
            self._agents = self._agents_factory(self.embedder)
        return self._agents

    def _engine(self) -> SessionEngine:
        return SessionEngine(
            self.state, self.agents, self.embedder, self._memories, self.config.retrieval.top_k
        )

    @property
    def state(self) -> GraphState:
        with self._lock:
            if self._state is None or self._moved_on():
                self._load()
            assert self._state is not None
            return self._state

    def _disk_head(self) -> tuple[str | None, int]:
        live = self.location.live_directory()
        snapshot = read_seq(live / layout.BANK_DIR / GRAPH_DIR) if live is not None else 0
        found = checkpoints(self.location.graph_log_dir, after=snapshot)
        return layout.live_store_version(self.store), found[-1][0] if found else snapshot

    def _moved_on(self) -> bool:
        """Whether another writer checkpointed since (then reload); a new store version with
        the same graph only needs its memories read anew."""
        assert self._state is not None
        version, head = self._disk_head()
        if version != self._version:
            self._memories = MemorySource(self.location.live_directory())
            self._version = version
        return head != self._state.seq

    def _load(self) -> None:
        for _ in range(LOAD_ATTEMPTS):
            version = layout.live_store_version(self.store)
            live = self.location.live_directory()
            snapshot = live / layout.BANK_DIR / GRAPH_DIR if live is not None else None
            state = load_graph_state(
                snapshot, self.location.graph_log_dir, self.config.retrieval.alpha
            )
            if layout.live_store_version(self.store) == version and _contiguous(
                state, snapshot, self.location.graph_log_dir
            ):
                break
        else:
            raise StoreError(f"the graph of {self.store} kept changing while it was loaded")
        self._state, self._version = state, version
        self._memories = MemorySource(live if version is not None else None)

    @contextmanager
    def _mutating(self) -> Iterator[GraphState]:
        """One batch of changes: under the graph lock, on the latest graph, checkpointed
        before this returns (see the module docstring)."""
        with self._lock, self.location.graph_lock():
            state = self.state
            try:
                yield state
                records = take_changes(state)
                if records:
                    seq = max(state.seq, self._disk_head()[1]) + 1
                    write_checkpoint(self.location.graph_log_dir, records, seq)
                    state.seq = seq
            except BaseException:
                self._state = None  # half-applied changes are dropped; disk has the truth
                raise

    # --- sessions ---------------------------------------------------------------------------

    def open_session(self, task_goal: str) -> InsightDoc:
        if not task_goal.strip():
            raise SessionError("a session needs a task goal")
        check_question(self.config.limits, task_goal, "task goal")
        with self._mutating() as state:
            engine = self._engine()
            session_id = "s-" + uuid.uuid4().hex[:16]
            doc = InsightDoc(doc_id=session_id, task_goal=task_goal.strip())
            coverage, missing = engine.goal_coverage(doc.task_goal)
            plan = self.agents.plan(
                PlanRequest(insight_doc=doc, goal_coverage=coverage, missing_terms=missing)
            )
            doc = InsightDoc(doc_id=session_id, **plan.model_dump())
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
        conflicts, for a cross-validation), then the Insight Doc is planned anew.

        A long context is taken in pieces of at most `session.analysis_chars`, each classified
        and structured without the lock and analysed under it on its own, so the cost is
        linear in the length and another caller waits for one piece at most, never for the
        whole context."""
        if not context.strip():
            raise SessionError("nothing to intercept: the context is empty")
        check_context(self.config.limits, context)
        check_files(self.config.limits, len(attachments), "attachments")
        record = self._open_record(session_id)
        doc = InsightDoc.model_validate(record.insight_doc)
        kind: TaskType = task_type or task_type_of(
            doc.pending_tasks[0] if doc.pending_tasks else None
        )
        validating = kind == "cross_validate" and bool(record.pending_conflicts)
        kind = kind if validating else "normal"
        found = _Found()
        if validating:
            self._settle(session_id, record.pending_conflicts, context, found)
        else:
            for piece in context_pieces(context, self.config.session.analysis_chars):
                drafts = self.agents.classify(piece, doc.task_goal)
                summaries = [self.agents.structure(draft) for draft in drafts]
                self._remember(session_id, drafts, summaries, found)
        return self._plan_after(session_id, doc, kind, context, attachments, metadata, found)

    def _settle(self, session_id: str, pending: list[str], context: str, found: _Found) -> None:
        """A cross-validation: the context settles the session's pending conflicts."""
        with self._mutating() as state:
            engine = self._engine()
            settled, standing = engine.resolve(pending, context, session_id)
            found.resolved = [conflict_view(c) for c in settled]
            if standing is None:
                return
            found.new_ids.append(standing)
            if state.graph.nodes[standing].kind != "session":
                return
            outcome = engine.analyse(standing, session_id)
            found.conflicts += outcome.conflicts
            found.merged += outcome.merged
            found.new_ids[-1] = outcome.node_id

    def _remember(self, session_id: str, drafts: list, summaries: list[str], found: _Found) -> None:
        """One piece of a context: its nodes made and analysed (under the lock, bounded)."""
        with self._mutating() as state:
            self._open_record(session_id)
            engine = self._engine()
            for node in engine.make_nodes(drafts, summaries, session_id):
                state.graph.add_node(node)
                outcome = engine.analyse(node.id, session_id)
                found.new_ids.append(outcome.node_id)
                found.merged += outcome.merged
                found.conflicts += outcome.conflicts
                found.related += outcome.related

    def _plan_after(
        self,
        session_id: str,
        doc: InsightDoc,
        kind: TaskType,
        context: str,
        attachments: Sequence[Attachment],
        metadata: dict | None,
        found: _Found,
    ) -> InterceptResult:
        """The raw context kept as an entry of the Interaction Tree, the Insight Doc planned
        anew with what was found."""
        with self._mutating() as state:
            record = self._open_record(session_id)
            engine = self._engine()
            entry = InteractionEntry(
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
            new_ids = [i for i in dict.fromkeys(found.new_ids) if i in state.graph.nodes]
            state.tree.add_entry(entry, dict.fromkeys(new_ids))
            conflicts = [
                state.graph.conflicts[c] for c in found.conflicts if c in state.graph.conflicts
            ]
            notice = (
                ConflictNotice(
                    conflicting_node_ids=list(
                        dict.fromkeys(i for c in conflicts for i in (c.older, c.newer))
                    ),
                    conflict_description="; ".join(c.description for c in conflicts),
                )
                if conflicts
                else None
            )
            coverage, missing = engine.goal_coverage(doc.task_goal)
            new_nodes = [node_info(state.graph.nodes[i]) for i in new_ids]
            plan = self.agents.plan(
                PlanRequest(
                    insight_doc=doc,
                    new_nodes=new_nodes,
                    conflict=notice,
                    intercepted=True,
                    resolved_conflict=bool(found.resolved),
                    goal_coverage=coverage,
                    missing_terms=missing,
                )
            )
            doc = InsightDoc(doc_id=session_id, **plan.model_dump())
            record.insight_doc = doc.model_dump()
            record.pending_conflicts = [c.id for c in conflicts]
            record.updated_at = time.time()
            state.changed_sessions.add(session_id)
        return InterceptResult(
            session_id=session_id,
            task_type=kind,
            new_nodes=new_nodes,
            merged=found.merged,
            related=found.related,
            conflicts=[conflict_view(c) for c in conflicts],
            resolved=found.resolved,
            entry_id=entry.entry_id,
            insight_doc=doc,
            done=should_terminate(doc),
        )

    def insight_doc(self, session_id: str) -> InsightDoc:
        return InsightDoc.model_validate(self._record(session_id).insight_doc)

    def enhance_prompt(self, session_id: str) -> str:
        """Seed 002 §6.3: the Insight Doc and the memories retrieved for its pending task."""
        with self._lock:
            doc = self.insight_doc(session_id)
            memories = self._engine().retrieve(doc.pending_tasks[0]) if doc.pending_tasks else []
            return enhanced_prompt(doc, [node_info(node) for node in memories])

    def export(self, session_id: str) -> SessionExport:
        with self._lock:
            record = self._record(session_id)
            state = self.state
            nodes = [n for n in state.graph.nodes.values() if n.session_id == session_id]
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
                    {
                        "event_id": m.event_id,
                        "merged_node_ids": list(m.merged_node_ids),
                        "new_node_id": m.new_node_id,
                        "timestamp": m.timestamp,
                        "description": m.description,
                        "trigger": m.trigger,
                    }
                    for m in state.tree.merge_events.values()
                    if any(i in {n.id for n in nodes} for i in (m.new_node_id, *m.merged_node_ids))
                ],
                open=record.open,
            )

    def close(self, session_id: str) -> SessionExport:
        """Close a session; its memory stays in the graph for later questions."""
        with self._mutating() as state:
            record = self._record(session_id)
            record.open = False
            record.updated_at = time.time()
            state.changed_sessions.add(session_id)
        return self.export(session_id)

    def _record(self, session_id: str) -> SessionRecord:
        record = self.state.sessions.get(session_id)
        if record is None:
            raise SessionError(f"no session {session_id!r} in {self.store}")
        return record

    def _open_record(self, session_id: str) -> SessionRecord:
        record = self._record(session_id)
        if not record.open:
            raise SessionError(f"session {session_id!r} is closed")
        return record

    # --- reading the graph ------------------------------------------------------------------

    def node(self, node_id: str) -> NodeDetail:
        with self._lock:
            state = self.state
            node = state.graph.nodes.get(node_id)
            if node is None:
                raise SessionError(f"no memory {node_id!r} in the graph of {self.store}")
            return node_detail(state, node, self.deep_retrieval(node_id))

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        """The raw contexts behind a node: its interaction entries, or a memory's chunk."""
        with self._lock:
            state = self.state
            node = state.graph.nodes.get(node_id)
            if node is None:
                raise SessionError(f"no memory {node_id!r} in the graph of {self.store}")
            entries = [entry_view(e) for e in state.tree.entries_for(node_id)]
            if node.kind == "memory":
                text = self._memories.text(node_id)
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
        with self._lock:
            state = self.state
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

    # --- commits ----------------------------------------------------------------------------

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphRecords, int, BatchOutcome]:
        """A store commit's graph step: memory nodes for the added memories, analysed in
        fanned-out tasks and applied here; returns the snapshot for the new version, the
        checkpoint it holds, and what changed. The caller holds the store lock."""
        with self._mutating() as state:
            outcome = BatchOutcome()
            graph = state.graph
            for chunk_id in commit.removed:
                if chunk_id in graph.nodes:
                    graph.delete_node(chunk_id)
                    outcome.nodes_removed += 1
            keep = commit.chunk_ids_after
            for node in [
                n for n in graph.nodes.values() if n.kind == "memory" and n.id not in keep
            ]:
                graph.delete_node(node.id)
            memories = self._memories
            for item in commit.added:
                memories.extra_texts[item.chunk_id] = item.text
                memories.extra_titles[item.chunk_id] = item.title or ""
                memories.extra_sentences[item.chunk_id] = item.sentence_vectors
            fresh = [
                memory_node(
                    item.chunk_id,
                    item.summary,
                    item.context,
                    item.keywords,
                    item.vector,
                    item.timestamp,
                    item.source,
                )
                for item in commit.added
                if item.chunk_id not in graph.nodes
            ]
            new_ids = [node.id for node in fresh]
            engine = self._engine()
            tasks = candidate_tasks(graph, fresh, engine.view, self.config.retrieval.top_k)
            outcome.nodes_added = len(new_ids)
        # The analysis, the part that grows with the add, runs without the lock: sessions go
        # on meanwhile, and a verdict about a node they retired is dropped when applied.
        results = run_tasks(tasks, self.map_calls, self.analyze_call)
        with self._mutating() as state:
            apply_verdicts(
                state.graph,
                tasks,
                results,
                self._encode_texts or self.embedder.encode,
                time.time(),
                outcome,
                new_ids=new_ids,
            )
        return all_records(state), state.seq, outcome

    def committed(self) -> None:
        """After a commit: the memories are read from the new version from now on."""
        with self._lock:
            self._memories = MemorySource(self.location.live_directory())
            self._version = layout.live_store_version(self.store)


@dataclass
class _Found:
    """What an intercept found, piece by piece."""

    new_ids: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    resolved: list = field(default_factory=list)
    related: int = 0


def context_pieces(context: str, max_chars: int) -> list[str]:
    """`context` in consecutive pieces of at most `max_chars`, cut between paragraphs (else
    between lines, else anywhere): each is analysed on its own."""
    pieces: list[str] = []
    rest = context
    while len(rest) > max_chars:
        window = rest[:max_chars]
        cut = window.rfind("\n\n")
        if cut <= 0:
            cut = window.rfind("\n")
        if cut <= 0:
            cut = max_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return [piece for piece in pieces if piece.strip()]


def _contiguous(state: GraphState, snapshot: Path | None, log_dir: Path) -> bool:
    start = read_seq(snapshot) if snapshot is not None and snapshot.is_dir() else 0
    numbers = [seq for seq, _ in checkpoints(log_dir, after=start)]
    return numbers == list(range(start + 1, start + 1 + len(numbers))) and (
        not numbers or numbers[-1] == state.seq
    )
