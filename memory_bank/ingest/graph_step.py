"""The graph stage of a store commit: memory nodes for the added memories (analysed for
related, merged and conflicting memories), none for the removed ones; the graph's snapshot goes
into the new version."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from memory_bank.graph.batch import BatchOutcome, GraphCommit, MemoryInput
from memory_bank.graph.persist import GraphSnapshot
from memory_bank.ingest.commit_change import Change
from memory_bank.schemas import Chunk
from memory_bank.store.snapshot import MemoryParts


class GraphStep(Protocol):
    """The Query Graph's part of a commit (`session.keeper.GraphKeeper`, or on Ray the store's
    graph actor): called under the store lock with what the commit changes; returns the graph's
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


def memory_inputs(parts: MemoryParts, now: float) -> list[MemoryInput]:
    """The graph's view of committed memories. They are as new as the commit, in the order
    given (later documents are later sources); a conversation chunk is as new as its last turn
    with a readable timestamp."""
    chunks = {chunk.chunk_id: chunk for chunk in parts.chunks}
    titles = {doc.document_id: doc.title for doc in parts.documents}
    sentences: dict[str, dict[str, np.ndarray]] = {}
    for record, vector in zip(parts.sentences, parts.sentence_vectors, strict=True):
        sentences.setdefault(record.chunk_id, {})[record.text.strip()] = vector
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
                sentence_vectors=sentences.get(chunk_id, {}),
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
