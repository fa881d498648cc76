"""Where the work of an ingest runs: the `Executor` protocol and the in-process executor.

The runner (`runner.py`) decides *what* an ingest does; an executor decides *where*: reading
files, chunking + embedding + memorizing documents, fanning out independent planning and README
calls, and embedding short texts. `LocalExecutor` does all of it in this process; the Ray
executor (`pipeline/executor.py`) runs the same stage functions as Ray Data stages and tasks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.progress import StageTimer
from memory_bank.ingest.stages import chunk_documents, memorize_encoded
from memory_bank.ingest.work import MemoryParts
from memory_bank.llm.roles import LLMBackend
from memory_bank.schemas import Document
from memory_bank.tasks import run_serially
from memory_bank.text.sources import FileOutcome, read_files_serially

R = TypeVar("R")


class Executor(Protocol):
    """The places an ingest's work can run; see the module docstring."""

    def start(self, timer: StageTimer) -> None:
        """Acquire what the executor needs before any work (e.g. a Ray connection)."""

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        """Each file read into a document (or skipped, with why), in the given order."""

    def memorize(
        self, documents: list[Document], first_index: int, timer: StageTimer, backend: LLMBackend
    ) -> MemoryParts:
        """Chunk, embed and memorize `documents` (memorize: the backend's role); memory indices
        start at `first_index`."""

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        """Independent calls (planning groups, README subtrees); results in call order."""

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Embed short texts (READMEs) like `Embedder.encode`: (len(texts), 384) float32."""


class LocalExecutor:
    """Runs every stage in this process, one after the other."""

    def __init__(self, config: AppConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        self.embedder = embedder or Embedder(config.embedding)

    def start(self, timer: StageTimer) -> None:
        pass

    def read_files(self, paths: Sequence[Path]) -> list[FileOutcome]:
        return read_files_serially(paths)

    def memorize(
        self, documents: list[Document], first_index: int, timer: StageTimer, backend: LLMBackend
    ) -> MemoryParts:
        with timer.stage("chunk"):
            chunks = chunk_documents(documents, self.config.chunking)
        with timer.stage("embed", total=len(chunks)):
            encodings = self.embedder.encode_chunks([chunk.text for chunk in chunks])
        with timer.stage("memorize", total=len(chunks)):
            return memorize_encoded(chunks, encodings, first_index, self.config.memorize, backend)

    def map(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
        return run_serially(function, calls)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)
