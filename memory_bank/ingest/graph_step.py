"""The graph stage of a store commit: memory nodes for the added memories (analysed for
related, merged and conflicting memories), none for the removed ones; the graph's snapshot goes
into the new version."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.graph.batch import (
    AnalyzeCall,
    BatchOutcome,
    GraphCommit,
    MemoryInput,
    analyze_tasks,
    apply_verdicts,
    candidate_tasks,
    memory_node,
    run_tasks,
)
from memory_bank.graph.layers import GraphSnapshot, live_snapshot
from memory_bank.graph.node_views import NodeViews
from memory_bank.graph.storage import GraphStorage
from memory_bank.ingest.commit_change import Change
from memory_bank.schemas import Chunk
from memory_bank.store.snapshot import MemoryParts
from memory_bank.tasks import TaskMap, run_serially


class GraphStep(Protocol):
    """The Query Graph's part of a commit (`IngestGraphStep`, or on Ray the store's graph
    actor): called under the store lock with what the commit changes; returns the graph's
    snapshot for the new version and what changed."""

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphSnapshot, BatchOutcome]: ...

    def committed(self) -> None:
        """The version holding the snapshot is live (or the commit wrote nothing)."""


@dataclass(frozen=True)
class GraphUpdate:
    """The graph stage's result: the snapshot for the new version, and what changed."""

    snapshot: GraphSnapshot
    summary: dict[str, Any]  # CommitResult.graph


def graph_commit(change: Change, now: float) -> GraphCommit:
    """What `change` does to the graph: nodes for the added memories, as new as `now`; the
    removed documents' memories leave."""
    before = change.before
    return GraphCommit(
        added=memory_inputs(change.added, now),
        removed=[
            str(m.metadata["chunk_id"])
            for m in (before.parts.memories if before else [])
            if m.metadata.get("document_id") in change.removed
        ],
        chunk_ids_after={str(m.metadata["chunk_id"]) for m in change.parts.memories},
    )


def graph_stage(graph: GraphStep, commit: GraphCommit) -> GraphUpdate:
    """Run the graph's part of the commit (under the store lock)."""
    snapshot, outcome = graph.prepare_commit(commit)
    return GraphUpdate(
        snapshot=snapshot,
        summary={
            "nodes_added": outcome.nodes_added,
            "nodes_removed": outcome.nodes_removed,
            "pairs_analysed": outcome.pairs,
            "related": outcome.related,
            "merges": outcome.merges,
            "conflicts": len(outcome.conflicts),
            "checkpoint": snapshot.seq,
        },
    )


class IngestGraphStep:
    """The graph step of the commits of one store, on the graph's storage (shared with the
    store's sessions): memory nodes for the added memories, analysed in fanned-out tasks
    (`map_calls`) and applied here; `encode` embeds what the analysis and its updates need."""

    def __init__(
        self,
        storage: GraphStorage,
        config: AppConfig,
        encode: Callable[[list[str]], np.ndarray],
        map_calls: TaskMap = run_serially,
        analyze_call: AnalyzeCall = analyze_tasks,
    ) -> None:
        self.storage = storage
        self.top_k = config.retrieval.top_k
        self.encode = encode
        self.map_calls = map_calls
        self.analyze_call = analyze_call

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphSnapshot, BatchOutcome]:
        """Apply `commit` to the graph in two checkpoints (its nodes, then the verdicts of
        their analysis, which runs without the graph lock); returns the snapshot for the new
        version and what changed. The caller holds the store lock."""
        with self.storage.mutating() as state:
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
            memories = self.storage.memories
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
            views = NodeViews(graph, memories, self.encode)
            tasks = candidate_tasks(
                graph, fresh, views.view, self.top_k, prefetch=memories.prefetch
            )
            outcome.nodes_added = len(new_ids)
        # The analysis, the part that grows with the change, runs without the graph lock:
        # sessions go on meanwhile, and a verdict about a node they retired is dropped when
        # applied.
        results = run_tasks(tasks, self.map_calls, self.analyze_call)
        with self.storage.mutating() as state:
            apply_verdicts(
                state.graph, tasks, results, self.encode, time.time(), outcome, new_ids=new_ids
            )
        # After `mutating` checkpointed the commit's changes: the snapshot holds them.
        location = self.storage.location
        base = live_snapshot(location.live_directory())
        return GraphSnapshot(state.seq, base, location.graph_log_dir, self.storage.alpha), outcome

    def committed(self) -> None:
        self.storage.committed()


def memory_inputs(parts: MemoryParts, now: float) -> list[MemoryInput]:
    """The graph's view of committed memories. They are as new as the commit, in the order
    given (later documents are later sources); a conversation chunk is as new as its last turn
    with a readable timestamp."""
    chunks = {chunk.chunk_id: chunk for chunk in parts.chunks}
    titles = {doc.document_id: doc.title for doc in parts.documents}
    sentences: dict[str, dict[str, np.ndarray]] = {}
    for record, vector in zip(parts.sentences, parts.sentence_vectors, strict=True):
        sentences.setdefault(record.chunk_id, {})[record.text.strip()] = vector
    source = parts.sentence_source  # the other chunks' sentences, read when looked into
    inputs = []
    for position, (memory, vector) in enumerate(
        zip(parts.memories, parts.memory_vectors, strict=True)
    ):
        chunk_id = str(memory.metadata["chunk_id"])
        chunk = chunks.get(chunk_id)
        inputs.append(
            MemoryInput(
                chunk_id=chunk_id,
                summary=memory.memory,
                context=memory.context,
                keywords=list(memory.keywords),
                vector=np.asarray(vector, dtype=np.float32),
                source=str(memory.metadata.get("source", "")),
                title=titles.get(str(memory.metadata.get("document_id", ""))),
                text=chunk.text if chunk is not None else memory.memory,
                sentence_vectors=sentences.get(chunk_id)
                or (source.vectors(chunk_id) if source is not None else {}),
                timestamp=_turn_time(chunk) or now + position * 1e-6,
            )
        )
    return inputs


def _turn_time(chunk: Chunk | None) -> float | None:
    for stamp in reversed(chunk.timestamps if chunk is not None else []):
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None
