"""The ingest pipeline on Ray: Ray Data for read/chunk/embed/memorize, Ray tasks for planning
and READMEs, a single writer (this driver) for the atomic store swap."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import ray

from memory_bank.config import EmbeddingConfig
from memory_bank.errors import SourceError
from memory_bank.index.embedding import Embedder
from memory_bank.ingest import IngestRunner, StageTimer, assemble_parts
from memory_bank.ingest_work import MemoryParts
from memory_bank.progress import ProgressSink
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.text.sources import SourceLoad, discover_files, document_from_text
from pipeline.planning import compose_readmes_distributed, plan_tree_distributed
from pipeline.runtime import ensure_ray
from pipeline.stages import EmbedChunks, chunk_batch, decode_encoding, memorize_batch, read_batch


class RayIngest(IngestRunner):
    """Runs an ingest on Ray (local or a cluster) and writes the store from the driver."""

    def start(self, timer: StageTimer) -> None:
        with timer.stage("start ray"):
            ensure_ray(self.config.ray)

    def read(self, files: Sequence[str | Path], text: str | None) -> SourceLoad:
        documents, skipped = self._read(files, text)
        return SourceLoad(documents=documents, skipped=skipped)

    def memorize(self, documents: list[Document], first_index: int, timer: StageTimer) -> MemoryParts:
        with timer.stage("chunk"):
            chunks = self._chunk(documents)
        with timer.stage("embed+memorize", total=len(chunks)):
            added, busy = self._embed_and_memorize(chunks, first_index, timer.progress)
        for stage, seconds in busy.items():
            timer.add(f"{stage} busy", seconds)
        return added

    def plan(self, memories: Sequence[MemorizedChunk], vectors: np.ndarray) -> DirectoryNode:
        return plan_tree_distributed(
            memories, vectors, self.config.taxonomy, self.config.ray.plan_task_cpus
        )

    def readmes(
        self, tree: DirectoryNode, memories: Sequence[MemorizedChunk], chunk_paths: dict[int, str]
    ) -> dict[str, str]:
        return compose_readmes_distributed(
            tree, memories, chunk_paths, self.config.taxonomy, self.config.ray.plan_task_cpus
        )

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        # A task rather than the driver: the driver never loads torch and the model (seconds and
        # a few hundred MB), and on a cluster the work goes where the CPUs are. The task pays
        # one model load per ingest; the embedding itself is ~2k READMEs per 10k chunks.
        task = _encode_texts_task.options(num_cpus=self.config.ray.embed.num_cpus)
        return ray.get(task.remote(texts, self.config.embedding))

    # --- stages -------------------------------------------------------------------------------

    def _read(self, files: Sequence[str | Path], text: str | None) -> tuple[list[Document], list[str]]:
        import ray.data

        documents: list[Document] = []
        skipped: list[str] = []
        paths: list[Path] = []
        for given in files:
            try:
                paths.extend(discover_files([given]))
            except SourceError as exc:
                skipped.append(str(exc))
        if paths:
            rows = [{"order": i, "path": str(path)} for i, path in enumerate(paths)]
            read = ray.data.from_items(rows, override_num_blocks=_blocks(len(rows), 8)).map_batches(
                read_batch, batch_size=8, num_cpus=self.config.ray.chunk.num_cpus
            )
            for row in sorted(read.take_all(), key=lambda r: r["order"]):
                if row["error"]:
                    skipped.append(row["error"])
                else:
                    documents.append(Document.model_validate_json(row["document"]))
        raw = document_from_text(text) if text else None
        if raw is not None:
            documents.append(raw)
        unique: dict[str, Document] = {}
        for doc in documents:
            unique.setdefault(doc.document_id, doc)
        return list(unique.values()), skipped

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
            (int(row["order"]), Chunk.model_validate_json(row["chunk"])) for row in chunked.take_all()
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
                fn_kwargs={"config": self.config.memorize},
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
                    memory, batch["vector"][row], batch["spans"][row], batch["sentence_vectors"][row]
                )
            busy["embed"] += float(np.sum(batch["embed_s"]))
            busy["memorize"] += float(np.sum(batch["memorize_s"]))
            progress.advance("embed+memorize", len(batch["index"]))
        return _assemble_parts(chunks, first_index, collected), busy


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
