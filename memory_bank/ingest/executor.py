"""Where the work of an ingest runs: the `Executor` protocol and the in-process executor.

The runner (`runner.py`) decides *what* an ingest does; an executor decides *where*: reading
files, chunking + embedding + memorizing documents, fanning out independent planning and README
calls, embedding short texts, and committing to the store. `LocalExecutor` does all of it in
this process (commits serialized across processes by the store's lock); the Ray executor
(`pipeline/executor.py`) runs the same stage functions as Ray Data stages and tasks, and
commits through the store's writer actor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.graph.storage import GraphStorage
from memory_bank.index.embedders import build_embedder
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.commit import CommitRequest, StoreCommitter
from memory_bank.ingest.graph_step import GraphStep, IngestGraphStep
from memory_bank.ingest.progress import StageTimer
from memory_bank.ingest.stages import memorize_encoded, stream_chunks
from memory_bank.llm.seam import LLM
from memory_bank.schemas import Chunk, CommitResult, Document
from memory_bank.store.snapshot import MemoryParts
from memory_bank.tasks import run_serially
from memory_bank.text.sources import FileOutcome, read_files_serially

R = TypeVar("R")
# Receives each batch of finished documents as soon as it is memorized (the ingest journal).
BatchSink = Callable[[MemoryParts], object]


class Executor(Protocol):
    """The places an ingest's work can run; see the module docstring."""

    def start(self, timer: StageTimer) -> None:
        """Acquire what the executor needs before any work (e.g. a Ray connection)."""

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        """Each file read into a document (or skipped, with why), in the given order."""

    def memorize(
        self,
        documents: list[Document],
        first_index: int,
        timer: StageTimer,
        llm: LLM | None,
        on_batch: BatchSink,
        done_chunks: frozenset[str] = frozenset(),
    ) -> None:
        """Chunk, embed and memorize `documents` (the split and memorize roles; usage recorded
        elsewhere is added to `llm`'s ledger); memory indices start at `first_index`.
        `on_batch` gets parts as they finish, about `store.journal_tokens` chunk tokens at a
        time (`MemoryParts.partial_documents` names the documents a part holds only some
        chunks of), and keeps them: nothing is kept here. Chunks in `done_chunks` (journaled
        by an earlier run) are not made again."""

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        """Independent calls (planning groups, README subtrees); results in call order."""

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Embed short passages (READMEs) like `Embedder.encode_passages`: (len(texts), 384)
        float32."""

    def commit(self, store: Path, request: CommitRequest, llm: LLM | None) -> CommitResult:
        """Apply `request` to the store, serialized with every other writer of it (the roles
        of an in-process commit ask `llm`)."""


class LocalExecutor:
    """Runs every stage in this process, one after the other."""

    def __init__(
        self,
        config: AppConfig,
        embedder: Embedder | None = None,
        graph: Callable[[Path], GraphStep] | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder or build_embedder(config.embedding)
        self._committers: dict[Path, StoreCommitter] = {}
        # The store's graph step (MemoryBank passes one on the graph its sessions use).
        self._graph = graph or (
            lambda store: IngestGraphStep(
                GraphStorage(store, config.retrieval.alpha), config, self.embedder.encode
            )
        )

    def start(self, timer: StageTimer) -> None:
        pass

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        return read_files_serially(paths)

    def memorize(
        self,
        documents: list[Document],
        first_index: int,
        timer: StageTimer,
        llm: LLM | None,
        on_batch: BatchSink,
        done_chunks: frozenset[str] = frozenset(),
    ) -> None:
        """Streamed: documents are chunked as they go (a huge one window by window) and their
        chunks embedded and memorized `store.journal_tokens` at a time, even inside a
        document; each batch goes to `on_batch` and to the progress display as soon as it is
        made, so the work in flight stays one batch, whatever the size of a file."""
        made = first_index
        with timer.stage("embed+memorize"):
            for batch, partial in self._batches(documents, llm, done_chunks, timer):
                started = time.perf_counter()
                encodings = self.embedder.encode_chunks([chunk.text for chunk in batch])
                timer.add("embed busy", time.perf_counter() - started)
                started = time.perf_counter()
                part = memorize_encoded(batch, encodings, made, self.config.memorize, llm)
                timer.add("memorize busy", time.perf_counter() - started)
                part.partial_documents = partial
                on_batch(part)
                made += len(part.memories)
                timer.progress.advance("embed+memorize", len(batch))

    def _batches(
        self,
        documents: list[Document],
        llm: LLM | None,
        done_chunks: frozenset[str],
        timer: StageTimer,
    ) -> Iterator[tuple[list[Chunk], set[str]]]:
        """Batches of about `store.journal_tokens` chunk tokens, cut anywhere, each with the
        documents it leaves unfinished; chunks in `done_chunks` are passed over."""
        stream = stream_chunks(documents, self.config.chunking, llm)
        batch: list[Chunk] = []
        tokens = 0
        ended: set[str] = set()
        while True:
            started = time.perf_counter()
            item = next(stream, None)
            timer.add("chunk", time.perf_counter() - started)
            if item is None:
                break
            chunk, last = item
            if last:
                ended.add(chunk.document_id)
            if chunk.chunk_id in done_chunks:
                continue
            batch.append(chunk)
            tokens += chunk.token_count
            if tokens >= self.config.store.journal_tokens:
                yield batch, {c.document_id for c in batch} - ended
                batch, tokens = [], 0
        if batch:
            yield batch, set()

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        return run_serially(function, calls)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode_passages(texts)

    def commit(self, store: Path, request: CommitRequest, llm: LLM | None) -> CommitResult:
        key = Path(store).expanduser().absolute()
        committer = self._committers.get(key)
        if committer is None or committer.llm is not llm:
            committer = StoreCommitter(
                key, self.config, llm, self.encode_texts, self.map, graph=self._graph(key)
            )
            self._committers[key] = committer
        return committer.commit(request)
