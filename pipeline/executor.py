"""The Ray executor of an ingest: Ray Data for chunk/embed/memorize, Ray tasks for reading files,
planning coarse taxonomy groups, composing README subtrees and embedding READMEs.

It only decides where work runs: every step calls the domain's stage functions
(`memory_bank.ingest.stages`, `pipeline.stages`), and the runner (`memory_bank.ingest.runner`)
does the rest, including the single atomic write from this driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import ray

from memory_bank.config import AppConfig, EmbeddingConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.progress import ProgressSink, StageTimer
from memory_bank.ingest.runner import IngestRunner
from memory_bank.ingest.stages import assemble_parts
from memory_bank.ingest.work import MemoryParts
from memory_bank.llm.roles import LLMBackend
from memory_bank.schemas import Chunk, Document, MemorizedChunk
from memory_bank.text.sources import FileOutcome, read_files_serially
from pipeline.runtime import ensure_ray
from pipeline.stages import EmbedChunks, chunk_batch, decode_encoding, memorize_batch

R = TypeVar("R")
FILES_PER_READ_TASK = 16


class RayExecutor:
    """Runs an ingest's work on Ray (a local instance or a cluster)."""

    def __init__(self, config: AppConfig) -> None:
        self.config = config

    def start(self, timer: StageTimer) -> None:
        with timer.stage("start ray"):
            ensure_ray(self.config.ray)

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        read = _read_files_task.options(num_cpus=self.config.ray.chunk.num_cpus)
        batches = [
            list(paths[start : start + FILES_PER_READ_TASK])
            for start in range(0, len(paths), FILES_PER_READ_TASK)
        ]
        return [
            outcome for batch in ray.get([read.remote(b) for b in batches]) for outcome in batch
        ]

    def memorize(
        self, documents: list[Document], first_index: int, timer: StageTimer, backend: LLMBackend
    ) -> MemoryParts:
        # The backend is made again from the config in each worker (see `memorize_batch`).
        with timer.stage("chunk"):
            chunks = self._chunk(documents)
        with timer.stage("embed+memorize", total=len(chunks)):
            added, busy = self._embed_and_memorize(chunks, first_index, timer.progress)
        for stage, seconds in busy.items():
            timer.add(f"{stage} busy", seconds)
        return added

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        task = ray.remote(function).options(num_cpus=self.config.ray.plan_task_cpus)
        return ray.get([task.remote(*arguments) for arguments in calls])

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        # A task rather than the driver: the driver never loads torch and the model (seconds and
        # a few hundred MB), and on a cluster the work goes where the CPUs are. The task pays
        # one model load per ingest; the embedding itself is ~2k READMEs per 10k chunks.
        task = _encode_texts_task.options(num_cpus=self.config.ray.embed.num_cpus)
        return ray.get(task.remote(texts, self.config.embedding))

    # --- Ray Data stages ----------------------------------------------------------------------

    def _chunk(self, documents: list[Document]) -> list[Chunk]:
        import ray.data

        stage = self.config.ray.chunk
        rows = [{"order": i, "document": doc.model_dump_json()} for i, doc in enumerate(documents)]
        blocks = _blocks(len(rows), stage.batch_size)
        chunked = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
            chunk_batch,
            fn_kwargs={"config": self.config.chunking},
            batch_size=stage.batch_size,
            num_cpus=stage.num_cpus,
            compute=ray.data.TaskPoolStrategy(size=min(stage.concurrency, blocks)),
        )
        ordered = [
            (int(row["order"]), Chunk.model_validate_json(row["chunk"]))
            for row in chunked.take_all()
        ]
        ordered.sort(key=lambda pair: (pair[0], pair[1].position))
        return [chunk for _, chunk in ordered]

    def _embed_and_memorize(
        self, chunks: list[Chunk], first_index: int, progress: ProgressSink
    ) -> tuple[MemoryParts, dict[str, float]]:
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
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            for row, index in enumerate(batch["index"]):
                memory = MemorizedChunk.model_validate_json(str(batch["memory"][row]))
                collected[int(index)] = (
                    memory,
                    batch["vector"][row],
                    batch["spans"][row],
                    batch["sentence_vectors"][row],
                )
            busy["embed"] += float(np.sum(batch["embed_s"]))
            busy["memorize"] += float(np.sum(batch["memorize_s"]))
            progress.advance("embed+memorize", len(batch["index"]))
        return _assemble_parts(chunks, first_index, collected), busy


def ray_runner(config: AppConfig) -> IngestRunner:
    """An ingest runner on Ray (`jobs.ingest`, `memory-bank ingest` without --local)."""
    return IngestRunner(config, RayExecutor(config))


@ray.remote
def _read_files_task(paths: list[Path]) -> list[FileOutcome]:
    return read_files_serially(paths)


@ray.remote
def _encode_texts_task(texts: list[str], config: EmbeddingConfig) -> np.ndarray:
    # Ray sets OMP_NUM_THREADS=1 in workers; like the embedding actors, use the task's cores.
    threads = config.num_threads or os.cpu_count() or 1
    return Embedder(config.model_copy(update={"num_threads": threads})).encode(texts)


def _blocks(rows: int, rows_per_block: int) -> int:
    return max(1, -(-rows // max(1, rows_per_block)))


def _assemble_parts(
    chunks: list[Chunk], first_index: int, collected: dict[int, tuple]
) -> MemoryParts:
    memories, encodings = [], []
    for offset in range(len(chunks)):
        memory, vector, spans, sentence_vectors = collected[first_index + offset]
        memories.append(memory)
        encodings.append(decode_encoding(vector, spans, sentence_vectors))
    return assemble_parts(chunks, encodings, memories)
