"""The Query Graph's part of a store commit: what the committer hands the graph's writer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

import numpy as np

from memory_bank.graph.batch import BatchOutcome, GraphCommit, MemoryInput
from memory_bank.ingest.work import MemoryParts
from memory_bank.schemas import Chunk


class GraphStep(Protocol):
    """The Query Graph's part of a commit (`session.keeper.GraphKeeper`, or on Ray the store's
    graph actor): called under the store lock with what the commit changes, which it
    checkpoints; returns the last checkpoint the new version's graph snapshot holds."""

    def prepare_commit(self, commit: GraphCommit) -> tuple[int, BatchOutcome]: ...

    def committed(self) -> None:
        """The version holding the snapshot is live (or the commit wrote nothing)."""


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
