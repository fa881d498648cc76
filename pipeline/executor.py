"""The Ray executor of an ingest: Ray Data for chunk/embed/memorize, Ray tasks for reading files,
planning coarse taxonomy groups, composing README subtrees and embedding READMEs.

It only decides where work runs: every step calls the domain's stage functions
(`memory_bank.ingest.stages`, `pipeline.stages`), and the runner (`memory_bank.ingest.runner`)
does the rest, including the single atomic write from this driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import ray

from actors.runtime import encode_on_task, ensure_ray, map_on_tasks, worker_llm
from actors.writer import commit_through_writer
from memory_bank.config import AppConfig
from memory_bank.ingest.commit import CommitRequest
from memory_bank.ingest.executor import BatchSink
from memory_bank.ingest.progress import ProgressSink, StageTimer
from memory_bank.ingest.runner import IngestRunner
from memory_bank.ingest.stages import assemble_parts, chunk_documents
from memory_bank.llm.ledger import add_usage
from memory_bank.llm.seam import LLM
from memory_bank.schemas import Chunk, CommitResult, Document, MemorizedChunk
from memory_bank.store.snapshot import MemoryParts
from memory_bank.text.sources import FileOutcome, read_files_serially
from pipeline.stages import EmbedChunks, chunk_batch, decode_encoding, memorize_batch

R = TypeVar("R")
FILES_PER_READ_TASK = 16


class RayExecutor:
    """Runs an ingest's work on Ray (a local instance or a cluster)."""

    def __init__(self, config: AppConfig) -> None:
        self.config = config

    def start(self, timer: StageTimer) -> None:
        with timer.stage("start ray"):
            ensure_ray(self.config.ray, self.config.llm)

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        # The driver lists the inputs, so it can read them; tasks pay off only where parsing
        # (large inputs, PDFs) outweighs starting workers that import the readers. Spread:
        # reading is I/O on storage every node reaches, not the driver's node's work.
        if _total_bytes(paths) < self.config.ray.read_in_tasks_from_bytes:
            return read_files_serially(paths)
        read = _read_files_task.options(
            num_cpus=self.config.ray.chunk.num_cpus, scheduling_strategy="SPREAD"
        )
        batches = [
            list(paths[start : start + FILES_PER_READ_TASK])
            for start in range(0, len(paths), FILES_PER_READ_TASK)
        ]
        return [
            outcome for batch in ray.get([read.remote(b) for b in batches]) for outcome in batch
        ]

    def memorize(
        self,
        documents: list[Document],
        first_index: int,
        timer: StageTimer,
        llm: LLM | None,
        on_batch: BatchSink,
        done_chunks: frozenset[str] = frozenset(),
    ) -> None:
        # Each worker opens its own LLM from the config (see `memorize_batch`); their usage is
        # added to `llm`'s ledger.
        with timer.stage("chunk"):
            chunks = [c for c in self._chunk(documents, llm) if c.chunk_id not in done_chunks]
        with timer.stage("embed+memorize", total=len(chunks)):
            busy = self._embed_and_memorize(chunks, first_index, timer.progress, on_batch, llm)
        for stage, seconds in busy.items():
            timer.add(f"{stage} busy", seconds)

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        return map_on_tasks(function, calls, self.config.ray.plan_task_cpus)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        # A task rather than the driver: the driver never loads torch and the model (seconds and
        # a few hundred MB), and on a cluster the work goes where the CPUs are. The task pays
        # one model load per ingest; the embedding itself is ~2k READMEs per 10k chunks.
        return encode_on_task(texts, self.config.embedding, self.config.ray.embed.num_cpus)

    # --- Ray Data stages ----------------------------------------------------------------------

    def _chunk(self, documents: list[Document], llm: LLM | None) -> list[Chunk]:
        # Like reading: chunking a small input costs the driver far less than tasks cost to
        # start their workers, and the chunks come back here anyway.
        if _text_bytes(documents) < self.config.ray.read_in_tasks_from_bytes:
            return chunk_documents(documents, self.config.chunking, llm)
        import ray.data

        stage = self.config.ray.chunk
        rows = [{"order": i, "document": doc.model_dump_json()} for i, doc in enumerate(documents)]
        blocks = _blocks(len(rows), stage.batch_size)
        chunked = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
            chunk_batch,
            fn_kwargs={"config": self.config.chunking, "llm": self.config.llm},
            batch_size=stage.batch_size,
            num_cpus=stage.num_cpus,
            compute=ray.data.TaskPoolStrategy(size=min(stage.concurrency, blocks)),
        )
        rows = chunked.take_all()
        for row in rows:
            if row["llm_usage"]:
                add_usage(llm, json.loads(str(row["llm_usage"])))
        ordered = [(int(row["order"]), Chunk.model_validate_json(row["chunk"])) for row in rows]
        ordered.sort(key=lambda pair: (pair[0], pair[1].position))
        return [chunk for _, chunk in ordered]

    def commit(self, store: Path, request: CommitRequest, llm: LLM | None) -> CommitResult:
        # One named actor per store serializes the commits of every driver on the cluster; it
        # asks its own LLM.
        return commit_through_writer(store, request, self.config)

    def _embed_and_memorize(
        self,
        chunks: list[Chunk],
        first_index: int,
        progress: ProgressSink,
        on_batch: BatchSink,
        llm: LLM | None,
    ) -> dict[str, float]:
        """Embed and memorize `chunks` on Ray Data; finished documents go to `on_batch` as
        they complete and leave the driver; returns the stages' busy seconds."""
        import ray.data

        embed, memorize = self.config.ray.embed, self.config.ray.memorize
        rows = [
            {"index": first_index + i, "chunk": chunk.model_dump_json()}
            for i, chunk in enumerate(chunks)
        ]
        # Blocks of one embedding batch each, so results stream back as they are computed; no
        # more actors (each loads the model) or tasks than there are batches for them.
        embed_blocks = _blocks(len(rows), embed.batch_size)
        memorize_batches = _blocks(len(rows), memorize.batch_size)
        dataset = (
            ray.data.from_items(rows, override_num_blocks=embed_blocks)
            .map_batches(
                EmbedChunks,
                fn_constructor_kwargs={"config": self.config.embedding},
                batch_size=embed.batch_size,
                num_cpus=embed.num_cpus,
                compute=ray.data.ActorPoolStrategy(size=min(embed.concurrency, embed_blocks)),
            )
            .map_batches(
                memorize_batch,
                fn_kwargs={"config": self.config.memorize, "llm": self.config.llm},
                batch_size=memorize.batch_size,
                num_cpus=memorize.num_cpus,
                compute=ray.data.TaskPoolStrategy(size=min(memorize.concurrency, memorize_batches)),
            )
        )
        collected: dict[int, tuple[MemorizedChunk, np.ndarray, bytes, bytes]] = {}
        busy = {"embed": 0.0, "memorize": 0.0}
        finished = _FinishedDocuments(chunks, first_index, self.config.store.journal_tokens)
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            for row, index in enumerate(batch["index"]):
                memory = MemorizedChunk.model_validate_json(str(batch["memory"][row]))
                collected[int(index)] = (
                    memory,
                    batch["vector"][row],
                    batch["spans"][row],
                    batch["sentence_vectors"][row],
                )
                finished.arrived(int(index))
            for ready in finished.take(final=False):
                on_batch(_journaled_rows(chunks, first_index, ready, collected))
            busy["embed"] += float(np.sum(batch["embed_s"]))
            busy["memorize"] += float(np.sum(batch["memorize_s"]))
            for usage in batch["llm_usage"]:
                if usage:
                    add_usage(llm, json.loads(str(usage)))
            progress.advance("embed+memorize", len(batch["index"]))
        for ready in finished.take(final=True):
            on_batch(_journaled_rows(chunks, first_index, ready, collected))
        return busy


def ray_runner(config: AppConfig) -> IngestRunner:
    """An ingest runner on Ray (`jobs.ingest`, `memory-bank ingest` without --local)."""
    return IngestRunner(config, RayExecutor(config), worker_llm(config.llm))


@ray.remote
def _read_files_task(paths: list[Path]) -> list[FileOutcome]:
    return read_files_serially(paths)


def _total_bytes(paths: Sequence[Path]) -> int:
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
        except OSError:
            pass  # unreadable: reported as skipped by the read itself
    return total


def _text_bytes(documents: Sequence[Document]) -> int:
    return sum(len(document.text.encode("utf-8")) for document in documents)


def _blocks(rows: int, rows_per_block: int) -> int:
    return max(1, -(-rows // max(1, rows_per_block)))


def _journaled_rows(
    chunks: list[Chunk], first_index: int, offsets: Sequence[int], collected: dict[int, tuple]
) -> MemoryParts:
    """The parts of the chunks at `offsets`, taken out of `collected` (the sink keeps them)."""
    memories, encodings = [], []
    for offset in offsets:
        memory, vector, spans, sentence_vectors = collected.pop(first_index + offset)
        memories.append(memory)
        encodings.append(decode_encoding(vector, spans, sentence_vectors))
    return assemble_parts([chunks[offset] for offset in offsets], encodings, memories)


class _FinishedDocuments:
    """Which documents have all their chunks memorized, handed out in journal-sized groups."""

    def __init__(self, chunks: list[Chunk], first_index: int, tokens_per_batch: int) -> None:
        self.first_index = first_index
        self.tokens_per_batch = tokens_per_batch
        self.offsets: dict[str, list[int]] = {}
        for offset, chunk in enumerate(chunks):
            self.offsets.setdefault(chunk.document_id, []).append(offset)
        self.document_of = [chunk.document_id for chunk in chunks]
        self.tokens_of = [chunk.token_count for chunk in chunks]
        self.missing = {doc: len(offsets) for doc, offsets in self.offsets.items()}
        self.ready: list[str] = []

    def arrived(self, index: int) -> None:
        document = self.document_of[index - self.first_index]
        self.missing[document] -= 1
        if self.missing[document] == 0:
            self.ready.append(document)

    def take(self, final: bool) -> list[list[int]]:
        """Offsets of finished documents: one group once they reach the batch size (all that
        are left when `final`)."""
        offsets = [offset for doc in self.ready for offset in self.offsets[doc]]
        tokens = sum(self.tokens_of[offset] for offset in offsets)
        if not offsets or (tokens < self.tokens_per_batch and not final):
            return []
        self.ready = []
        return [offsets]
