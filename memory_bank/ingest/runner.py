"""`IngestRunner`: one ingest (or rebuild) of a store, from sources to the atomic write.

An ingest into an existing store keeps the stored memories and embeddings, skips documents whose
content hash is already stored (`work.plan_work`) and places the new memories into the stored
tree (`taxonomy.placement`); a large add, a new store and a rebuild plan the tree anew. Where the
work runs is the executor's business (`executor.py`); the steps and their order are the same
for every executor, so the in-process and the Ray ingest produce the same store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.executor import Executor, LocalExecutor
from memory_bank.ingest.progress import NullProgress, ProgressSink, StageTimer
from memory_bank.ingest.stages import (
    compose_readmes,
    embed_readmes,
    finish_store,
    plan_tree,
    read_inputs,
    require_something,
    taxonomy_items,
)
from memory_bank.ingest.work import MemoryParts, plan_work, stored_readme_vectors
from memory_bank.llm import backend_for
from memory_bank.llm.roles import PlaceRequest
from memory_bank.schemas import DirectoryNode, IngestSummary
from memory_bank.store.files import assign_chunk_paths
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy import validate_taxonomy
from memory_bank.taxonomy.placement import should_place

# Makes the executor an ingest runs on; `MemoryBank` and the CLI take one of these.
ExecutorFactory = Callable[[AppConfig], Executor]


class IngestRunner:
    """Adds sources to a store, or re-plans it, with the given executor."""

    def __init__(self, config: AppConfig, executor: Executor) -> None:
        self.config = config
        self.executor = executor
        self.backend = backend_for(config.llm)

    def run(
        self,
        store: Path,
        files: Sequence[str | Path] | None = None,
        text: str | None = None,
        progress: ProgressSink | None = None,
        replan: bool = False,
    ) -> IngestSummary:
        """Add `files` and `text` to the store. With `replan` (a rebuild), the whole tree is
        planned anew from the stored memories and vectors even when nothing new is given."""
        timer = StageTimer(progress or NullProgress())
        started = time.perf_counter()
        self.executor.start(timer)
        with timer.stage("read"):
            loaded = read_inputs(files or [], text, read_files=self.executor.read_files)
            require_something(loaded, bool(files))
            work = plan_work(loaded, store, self.config)
        summary = IngestSummary(
            store=str(store),
            documents=work.new,
            chunks=0,
            directories=0,
            skipped=list(loaded.skipped),
            unchanged_documents=work.unchanged,
            rebuilt_documents=work.rebuilt,
        )
        parts, fresh = work.kept, work.documents
        if fresh or (replan and parts.memories):
            stored = len(parts.memories)
            if fresh:
                added = self.executor.memorize(fresh, stored, timer, self.backend)
                added.documents = fresh
                parts.extend(added)
                summary.chunks = len(added.chunks)
            with timer.stage("plan"):
                if replan:
                    tree = self._plan(parts)
                else:
                    tree, summary.placed = self._tree_for(store, parts, stored)
            with timer.stage("readme"):
                chunk_paths = assign_chunk_paths(tree, parts.memories)
                readmes = compose_readmes(
                    tree,
                    parts.memories,
                    chunk_paths,
                    self.config.taxonomy,
                    self.backend,
                    self.executor.map,
                )
            with timer.stage("embed readmes", total=len(readmes)):
                # Embedded here, once, so the query side does not embed them when it opens.
                known = {} if work.rebuilt else stored_readme_vectors(store)
                readme_vectors = embed_readmes(readmes, known, self.executor.encode_texts)
            with timer.stage("write"):
                summary.directories = finish_store(
                    store, parts, tree, readmes, readme_vectors, self.config
                )
        summary.stage_seconds = timer.seconds
        summary.total_seconds = time.perf_counter() - started
        return summary

    def _plan(self, parts: MemoryParts) -> DirectoryNode:
        return plan_tree(
            parts.memories,
            parts.memory_vectors,
            self.config.taxonomy,
            self.backend,
            self.executor.map,
        )

    def _tree_for(self, store: Path, parts: MemoryParts, stored: int) -> tuple[DirectoryNode, bool]:
        """The tree after adding `parts.memories[stored:]`: placed into the stored tree when the
        add is small next to it (paths stay stable), else planned anew. True when placed."""
        added = len(parts.memories) - stored
        if should_place(stored, added):
            request = PlaceRequest(
                tree=StoreReader(store).tree(),
                items=taxonomy_items(parts.memories),
                vectors=parts.memory_vectors,
                new_indices=list(range(stored, stored + added)),
                config=self.config.taxonomy,
            )
            placed = self.backend.place(request).tree
            if placed is not None and not validate_taxonomy(
                placed, len(parts.memories), self.config.taxonomy
            ):
                return placed, True
        return self._plan(parts), False


def local_runner(config: AppConfig, embedder: Embedder | None = None) -> IngestRunner:
    """An in-process runner (tests, small inputs, `memory-bank ingest --local`)."""
    return IngestRunner(config, LocalExecutor(config, embedder))
