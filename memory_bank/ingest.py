"""The ingest stages as plain typed functions, and an in-process runner that chains them.

The Ray pipeline (`pipeline/ingest.py`) calls the very same functions from its stages; the local
runner exists for tests, small inputs and debugging (`memory-bank ingest --local`).

Stages: read sources -> chunk -> embed (chunk + sentence vectors in one pass) -> memorize ->
plan the taxonomy -> compose READMEs bottom-up -> write the store in one atomic swap.
An ingest into an existing store keeps the stored memories and embeddings, skips documents
whose content hash is already stored, and re-plans the tree over old and new memories. A store
made with another *memory recipe* (chunking, memorize or embedding settings, or a new version of
those stages) is rebuilt instead: every stored document is processed again from documents.parquet.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory_bank.agents.memorize import memorize_offline
from memory_bank.agents.readme import ReadmeFileEntry, compose_readme
from memory_bank.config import AppConfig, ChunkConfig, MemorizeConfig, TaxonomyConfig
from memory_bank.errors import NothingToIngestError
from memory_bank.index.embedding import EMBEDDING_DIM, ChunkEncoding, Embedder
from memory_bank.progress import NullProgress, ProgressSink
from memory_bank.schemas import Chunk, DirectoryNode, Document, IngestSummary, MemorizedChunk
from memory_bank.store.files import assign_chunk_paths
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import (
    SentenceRecord,
    chunks_from_table,
    documents_from_table,
    memories_from_table,
    sentences_from_table,
)
from memory_bank.store.writer import meta_extra_from_config, write_store
from memory_bank.taxonomy import TaxonomyItem, flat_fallback, plan_taxonomy, validate_taxonomy
from memory_bank.text.chunking import chunk_document
from memory_bank.text.sources import SourceLoad, document_from_text, load_sources


@dataclass
class MemoryParts:
    """Everything a store holds about a set of documents, in memory-index order."""

    documents: list[Document] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    memories: list[MemorizedChunk] = field(default_factory=list)
    memory_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())
    sentences: list[SentenceRecord] = field(default_factory=list)
    sentence_vectors: np.ndarray = field(default_factory=lambda: _empty_vectors())

    def extend(self, other: MemoryParts) -> None:
        self.documents.extend(other.documents)
        self.chunks.extend(other.chunks)
        self.memories.extend(other.memories)
        self.memory_vectors = np.concatenate([self.memory_vectors, other.memory_vectors])
        self.sentences.extend(other.sentences)
        self.sentence_vectors = np.concatenate([self.sentence_vectors, other.sentence_vectors])


def _empty_vectors() -> np.ndarray:
    return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)


# --- stage functions ------------------------------------------------------------------------


def read_inputs(files: Iterable[str | Path] | None, text: str | None) -> SourceLoad:
    """Load every given file/directory and the raw text; bad files are skipped, not raised."""
    loaded = load_sources(list(files or []))
    raw = document_from_text(text) if text else None
    if raw is not None and all(doc.document_id != raw.document_id for doc in loaded.documents):
        loaded.documents.append(raw)
    return loaded


def chunk_documents(documents: Sequence[Document], config: ChunkConfig) -> list[Chunk]:
    return [chunk for doc in documents for chunk in chunk_document(doc, config)]


def memorize_encoded(
    chunks: Sequence[Chunk],
    encodings: Sequence[ChunkEncoding],
    first_index: int,
    config: MemorizeConfig,
) -> MemoryParts:
    """Memorize embedded chunks; memory indices start at `first_index`, in chunk order."""
    memories = [
        memorize_offline(chunk, encoding, first_index + offset, config)
        for offset, (chunk, encoding) in enumerate(zip(chunks, encodings, strict=True))
    ]
    return assemble_parts(chunks, encodings, memories)


def assemble_parts(
    chunks: Sequence[Chunk], encodings: Sequence[ChunkEncoding], memories: Sequence[MemorizedChunk]
) -> MemoryParts:
    """Gather memorized chunks, their vectors and their sentence records, in the given order."""
    parts = MemoryParts(chunks=list(chunks), memories=list(memories))
    for chunk, encoding, memory in zip(chunks, encodings, memories, strict=True):
        for number, span in enumerate(encoding.sentence_spans):
            parts.sentences.append(
                SentenceRecord(
                    chunk_id=chunk.chunk_id,
                    index=memory.index,
                    sentence=number,
                    start_char=span.start,
                    end_char=span.end,
                    text=chunk.text[span.start : span.end],
                )
            )
    if encodings:
        parts.memory_vectors = np.stack([e.vector for e in encodings]).astype(np.float32)
        parts.sentence_vectors = np.concatenate([e.sentence_vectors for e in encodings]).astype(
            np.float32
        )
    return parts


def taxonomy_items(memories: Sequence[MemorizedChunk]) -> list[TaxonomyItem]:
    return [TaxonomyItem.from_memory(memory) for memory in memories]


def plan_tree(
    memories: Sequence[MemorizedChunk], vectors: np.ndarray, config: TaxonomyConfig
) -> DirectoryNode:
    """Plan the whole tree in this process; falls back to a flat plan if validation fails."""
    tree = plan_taxonomy(taxonomy_items(memories), vectors, config)
    return ensure_valid_tree(tree, [memory.index for memory in memories], config)


def ensure_valid_tree(
    tree: DirectoryNode, indices: Sequence[int], config: TaxonomyConfig
) -> DirectoryNode:
    if validate_taxonomy(tree, len(indices), config):
        return flat_fallback(indices, config)
    return tree


def compose_readmes(
    node: DirectoryNode, memories: Sequence[MemorizedChunk], chunk_paths: dict[int, str]
) -> dict[str, str]:
    """README text for `node` and every directory below it (tree path -> text)."""
    by_index = {memory.index: memory for memory in memories}
    readmes: dict[str, str] = {}
    for directory in node.iter_nodes():
        files = [
            ReadmeFileEntry(
                name=chunk_paths[i].rsplit("/", 1)[-1], title=by_index[i].title, tldr=by_index[i].tldr
            )
            for i in directory.chunk_indices
        ]
        readmes[directory.path] = compose_readme(directory, directory.children, files)
    return readmes


# --- existing store -------------------------------------------------------------------------


def load_existing(store: Path) -> MemoryParts:
    """What a committed store already holds (empty parts when there is no store yet)."""
    if not is_store(store):
        return MemoryParts()
    reader = StoreReader(store)
    return MemoryParts(
        documents=documents_from_table(reader.documents()),
        chunks=chunks_from_table(reader.chunks()),
        memories=memories_from_table(reader.memories()),
        memory_vectors=reader.memory_vectors(),
        sentences=sentences_from_table(reader.sentences()),
        sentence_vectors=reader.sentence_vectors(),
    )


def new_documents(loaded: SourceLoad, existing: MemoryParts) -> tuple[list[Document], int]:
    """Documents not stored yet, and how many given documents were already stored."""
    known = {doc.document_id for doc in existing.documents}
    fresh = [doc for doc in loaded.documents if doc.document_id not in known]
    return fresh, len(loaded.documents) - len(fresh)


def require_something(loaded: SourceLoad, files_given: bool) -> None:
    """Raise only when files were given and not one of them could be read."""
    if files_given and not loaded.documents and loaded.skipped:
        reasons = "\n  ".join(loaded.skipped)
        raise NothingToIngestError(f"nothing could be ingested:\n  {reasons}")


def stored_readme_vectors(store: Path) -> dict[str, np.ndarray]:
    """README text -> vector in the live store (empty without a store or its readmes table)."""
    if not is_store(store):
        return {}
    reader = StoreReader(store)
    table = reader.readmes()
    if table is None:
        return {}
    return dict(zip(table.column("text").to_pylist(), reader.readme_vectors(), strict=True))


def embed_readmes(
    readmes: Mapping[str, str],
    known: Mapping[str, np.ndarray],
    encode: Callable[[list[str]], np.ndarray],
) -> dict[str, np.ndarray]:
    """The vector of every README (tree path -> vector), as `Embedder.encode` gives it.

    Texts found in `known` (text -> vector, e.g. `stored_readme_vectors`) are not embedded
    again: a re-ingest that leaves most of the tree alone embeds only the READMEs that changed.
    """
    fresh = sorted({text for text in readmes.values() if text not in known})
    vectors = dict(known)
    if fresh:
        vectors.update(zip(fresh, np.asarray(encode(fresh), dtype=np.float32), strict=True))
    return {directory: vectors[text] for directory, text in readmes.items()}


# Bump when a change to chunking, memorize or the embedding of chunks changes what a document
# becomes, so that stores made before it are rebuilt on their next ingest.
MEMORY_RECIPE_VERSION = 2  # 2: chunks keep a lead-in line with the list it announces


def memory_recipe(config: AppConfig) -> str:
    """A fingerprint of everything that decides a document's chunks, memories and vectors."""
    recipe = {
        "version": MEMORY_RECIPE_VERSION,
        "chunking": config.chunking.model_dump(mode="json"),
        "memorize": config.memorize.model_dump(mode="json"),
        # Not precision or threads: they change vectors by rounding only.
        "embedding": config.embedding.model_dump(mode="json", include={"model_name", "window_tokens"}),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()[:16]


@dataclass
class IngestWork:
    """What an ingest does with the store it adds to."""

    kept: MemoryParts  # stored documents, memories and vectors kept as they are
    documents: list[Document]  # to chunk, embed and memorize
    new: int  # given documents the store did not hold
    unchanged: int  # given documents already stored and current
    rebuilt: int  # stored documents processed again (another memory recipe)


def plan_work(loaded: SourceLoad, store: Path, config: AppConfig) -> IngestWork:
    existing = load_existing(store)
    outdated = outdated_documents(store, existing, config)
    if outdated:  # rebuild: nothing stored is kept, every document is processed again
        existing = MemoryParts()
    fresh, unchanged = new_documents(loaded, existing)
    stored = {doc.document_id for doc in outdated}
    new = sum(doc.document_id not in stored for doc in fresh)
    given = {doc.document_id for doc in fresh}  # a given copy beats the stored one
    fresh += [doc for doc in outdated if doc.document_id not in given]
    return IngestWork(existing, fresh, new, unchanged, len(outdated))


def outdated_documents(store: Path, existing: MemoryParts, config: AppConfig) -> list[Document]:
    """The stored documents, when the store was made with another memory recipe (or before
    recipes were recorded); none when its memories are current."""
    if not existing.documents:
        return []
    if StoreReader(store).meta.get("memory_recipe") == memory_recipe(config):
        return []
    return list(existing.documents)


def finish_store(
    store: Path,
    parts: MemoryParts,
    tree: DirectoryNode,
    readmes: dict[str, str],
    readme_vectors: Mapping[str, np.ndarray],
    config: AppConfig,
) -> int:
    """Write the store atomically; returns the number of directories below the root."""
    stats = write_store(
        store,
        documents=parts.documents,
        chunks=parts.chunks,
        memories=parts.memories,
        memory_vectors=parts.memory_vectors,
        sentences=parts.sentences,
        sentence_vectors=parts.sentence_vectors,
        tree=tree,
        readmes=readmes,
        readme_vectors=readme_vectors,
        meta_extra={**meta_extra_from_config(config), "memory_recipe": memory_recipe(config)},
    )
    return stats.directories


# --- runners --------------------------------------------------------------------------------


class IngestRunner:
    """The ingest skeleton shared by the in-process and the Ray runner.

    Subclasses supply how sources are read, how chunks become memories, and how the tree and its
    READMEs are planned; reading the existing store, the summary and the single atomic write are
    common.
    """

    def __init__(self, config: AppConfig) -> None:
        self.config = config

    def run(
        self,
        store: Path,
        files: Sequence[str | Path] | None = None,
        text: str | None = None,
        progress: ProgressSink | None = None,
    ) -> IngestSummary:
        timer = StageTimer(progress or NullProgress())
        started = time.perf_counter()
        self.start(timer)
        with timer.stage("read"):
            loaded = self.read(files or [], text)
            require_something(loaded, bool(files))
            work = plan_work(loaded, store, self.config)
        summary = IngestSummary(
            store=str(store), documents=work.new, chunks=0, directories=0,
            skipped=list(loaded.skipped), unchanged_documents=work.unchanged,
            rebuilt_documents=work.rebuilt,
        )
        existing, fresh = work.kept, work.documents
        if fresh:
            added = self.memorize(fresh, len(existing.memories), timer)
            added.documents = fresh
            parts = existing
            parts.extend(added)
            with timer.stage("plan"):
                tree = self.plan(parts.memories, parts.memory_vectors)
            with timer.stage("readme"):
                readmes = self.readmes(tree, parts.memories, assign_chunk_paths(tree, parts.memories))
            with timer.stage("embed readmes", total=len(readmes)):
                # Embedded here, once, so the query side does not embed them when it opens.
                known = {} if work.rebuilt else stored_readme_vectors(store)
                readme_vectors = embed_readmes(readmes, known, self.encode_texts)
            with timer.stage("write"):
                summary.directories = finish_store(
                    store, parts, tree, readmes, readme_vectors, self.config
                )
            summary.chunks = len(added.chunks)
        summary.stage_seconds = timer.seconds
        summary.total_seconds = time.perf_counter() - started
        return summary

    # --- hooks --------------------------------------------------------------------------------

    def start(self, timer: StageTimer) -> None:
        """Acquire what the runner needs before reading (e.g. a Ray connection)."""

    def read(self, files: Sequence[str | Path], text: str | None) -> SourceLoad:
        return read_inputs(files, text)

    def memorize(self, documents: list[Document], first_index: int, timer: StageTimer) -> MemoryParts:
        raise NotImplementedError

    def plan(self, memories: Sequence[MemorizedChunk], vectors: np.ndarray) -> DirectoryNode:
        return plan_tree(memories, vectors, self.config.taxonomy)

    def readmes(
        self, tree: DirectoryNode, memories: Sequence[MemorizedChunk], chunk_paths: dict[int, str]
    ) -> dict[str, str]:
        return compose_readmes(tree, memories, chunk_paths)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        """Embed short texts (READMEs) like `Embedder.encode`: (len(texts), 384) float32."""
        raise NotImplementedError


class LocalIngest(IngestRunner):
    """Runs every stage in this process, one after the other."""

    def __init__(self, config: AppConfig, embedder: Embedder | None = None) -> None:
        super().__init__(config)
        self.embedder = embedder or Embedder(config.embedding)

    def memorize(self, documents: list[Document], first_index: int, timer: StageTimer) -> MemoryParts:
        with timer.stage("chunk"):
            chunks = chunk_documents(documents, self.config.chunking)
        with timer.stage("embed", total=len(chunks)):
            encodings = self.embedder.encode_chunks([chunk.text for chunk in chunks])
        with timer.stage("memorize", total=len(chunks)):
            return memorize_encoded(chunks, encodings, first_index, self.config.memorize)

    def encode_texts(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)


class StageTimer:
    """Times stages and reports them to a progress sink."""

    def __init__(self, progress: ProgressSink) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        """Record time measured elsewhere (e.g. busy seconds summed over Ray workers)."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def stage(self, name: str, total: int | None = None):
        return _TimedStage(self, name, total)


class _TimedStage:
    def __init__(self, timer: StageTimer, name: str, total: int | None) -> None:
        self.timer, self.name, self.total = timer, name, total

    def __enter__(self) -> None:
        self.started = time.perf_counter()
        self.timer.progress.start(self.name, self.total)

    def __exit__(self, exc_type, *rest) -> None:
        elapsed = time.perf_counter() - self.started
        self.timer.seconds[self.name] = self.timer.seconds.get(self.name, 0.0) + elapsed
        if exc_type is None:
            if self.total:
                self.timer.progress.advance(self.name, self.total)
            self.timer.progress.finish(self.name, f"{elapsed:.1f}s")
