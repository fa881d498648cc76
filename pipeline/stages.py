"""Ray Data stage adapters: batches (dicts of numpy arrays) in, domain calls, batches out.

Rows carry pydantic models as JSON strings and variable-length vectors as raw float32 bytes,
which every Ray Data block format moves without surprises. Each stage also records the seconds
it spent per row (`<stage>_s`), so the driver can report per-stage busy time for a streaming run.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from actors.runtime import worker_llm
from memory_bank.config import (
    ChunkConfig,
    EmbeddingConfig,
    LLMConfig,
    MemorizeConfig,
    usable_cores,
)
from memory_bank.index.embedders import build_embedder
from memory_bank.index.embedding import EMBEDDING_DIM, ChunkEncoding
from memory_bank.ingest.stages import chunk_documents
from memory_bank.llm.ledger import take_usage
from memory_bank.memorize.role import MemorizeRequest, memorize
from memory_bank.schemas import Chunk, Document
from memory_bank.text.sentences import Span

Batch = dict[str, Any]


def _strings(column: Any) -> list[str]:
    return [str(value) for value in column]


def chunk_batch(batch: Batch, config: ChunkConfig, llm: LLMConfig) -> Batch:
    """Documents -> chunks; output rows keep the document's order for a deterministic merge.
    Overlong sections are split where the split role says, asked once for the batch."""
    started = time.perf_counter()
    model = worker_llm(llm)
    documents = [Document.model_validate_json(text) for text in _strings(batch["document"])]
    # Document ids are content hashes, distinct within an ingest.
    order_of = {
        doc.document_id: int(order) for doc, order in zip(documents, batch["order"], strict=True)
    }
    orders, chunks = [], []
    for chunk in chunk_documents(documents, config, model):
        orders.append(order_of[chunk.document_id])
        chunks.append(chunk.model_dump_json())
    usages = [""] * len(chunks)
    if model is not None and chunks:  # no chunks: no section to split, no request
        usages[0] = take_usage(model).model_dump_json()
    return {
        "order": np.array(orders, dtype=np.int64),
        "chunk": np.array(chunks, dtype=object),
        "chunk_s": _per_row(started, len(chunks)),
        # The batch's LLM usage (split role), on its first row (the driver sums them).
        "llm_usage": np.array(usages, dtype=object),
    }


class EmbedChunks:
    """Actor-pool stage: loads the model once per actor, embeds chunks in batches."""

    def __init__(self, config: EmbeddingConfig) -> None:
        # Ray sets OMP_NUM_THREADS in workers to their CPUs; the model is the hot path and may
        # use every core this actor may run on (`usable_cores`), no more.
        threads = config.num_threads or usable_cores()
        self.embedder = build_embedder(config.model_copy(update={"num_threads": threads}))
        self.embedder.load()  # now, not inside the first batch

    def __call__(self, batch: Batch) -> Batch:
        started = time.perf_counter()
        chunks = [Chunk.model_validate_json(text) for text in _strings(batch["chunk"])]
        encodings = self.embedder.encode_chunks([chunk.text for chunk in chunks])
        return {
            "index": np.asarray(batch["index"]),
            "chunk": np.asarray(batch["chunk"], dtype=object),
            "vector": np.stack([encoding.vector for encoding in encodings]),
            "spans": np.array(
                [np.asarray(e.sentence_spans, dtype=np.int64).tobytes() for e in encodings],
                dtype=object,
            ),
            "sentence_vectors": np.array(
                [e.sentence_vectors.astype(np.float32).tobytes() for e in encodings], dtype=object
            ),
            "embed_s": _per_row(started, len(chunks)),
        }


def decode_encoding(vector: np.ndarray, spans: bytes, sentence_vectors: bytes) -> ChunkEncoding:
    span_array = np.frombuffer(spans, dtype=np.int64).reshape(-1, 2)
    return ChunkEncoding(
        vector=np.asarray(vector, dtype=np.float32),
        sentence_spans=[Span(int(start), int(end)) for start, end in span_array],
        sentence_vectors=np.frombuffer(sentence_vectors, dtype=np.float32).reshape(
            -1, EMBEDDING_DIM
        ),
    )


def memorize_batch(batch: Batch, config: MemorizeConfig, llm: LLMConfig) -> Batch:
    """Embedded chunks -> memories (JSON) from the memorize role, vectors passed on.

    Rows are memorized in runs of consecutive memory indices (a batch may join blocks that are
    not adjacent), one role request per run, so a model can take several chunks per call.
    """
    started = time.perf_counter()
    model = worker_llm(llm)
    indices = [int(index) for index in batch["index"]]
    chunks = [Chunk.model_validate_json(text) for text in _strings(batch["chunk"])]
    encodings = [
        decode_encoding(vector, spans, sentence_vectors)
        for vector, spans, sentence_vectors in zip(
            batch["vector"], batch["spans"], batch["sentence_vectors"], strict=True
        )
    ]
    memory_of: dict[int, str] = {}
    for run in _consecutive_runs(indices):
        request = MemorizeRequest(
            chunks=[chunks[row] for row in run],
            first_index=indices[run[0]],
            config=config,
            encodings=[encodings[row] for row in run],
        )
        for memory in memorize(request, model):
            memory_of[memory.index] = memory.model_dump_json()
    memories = [memory_of[index] for index in indices]
    return {
        "index": np.asarray(batch["index"]),
        "chunk": np.asarray(batch["chunk"], dtype=object),
        "memory": np.array(memories, dtype=object),
        "vector": np.asarray(batch["vector"], dtype=np.float32),
        "spans": np.asarray(batch["spans"], dtype=object),
        "sentence_vectors": np.asarray(batch["sentence_vectors"], dtype=object),
        "embed_s": np.asarray(batch["embed_s"], dtype=np.float64),
        "memorize_s": _per_row(started, len(memories)),
        # The batch's LLM usage, on its first row (the driver sums them).
        "llm_usage": np.array(
            [take_usage(model).model_dump_json()] + [""] * (len(memories) - 1), dtype=object
        ),
    }


def _consecutive_runs(indices: list[int]) -> list[list[int]]:
    """Row numbers grouped into runs whose memory indices follow one another."""
    order = sorted(range(len(indices)), key=indices.__getitem__)
    runs: list[list[int]] = []
    for row in order:
        if runs and indices[row] == indices[runs[-1][-1]] + 1:
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


def _per_row(started: float, rows: int) -> np.ndarray:
    return np.full(rows, (time.perf_counter() - started) / max(rows, 1), dtype=np.float64)
