"""The ingest stages as plain typed functions, and an in-process runner that chains them.

The Ray pipeline (`pipeline/ingest.py`) calls the very same functions from its stages; the local
runner exists for tests, small inputs and debugging (`memory-bank ingest --local`).

Stages: read sources -> chunk -> embed (chunk + sentence vectors in one pass) -> memorize ->
plan the taxonomy -> compose READMEs bottom-up -> write the store in one atomic swap.
An ingest into an existing store keeps the stored memories and embeddings, skips documents
whose content hash is already stored (see `ingest_work`) and places the new memories into the
stored tree (`taxonomy.placement`); a large add, a new store and a rebuild plan the tree anew.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from memory_bank.agents.memorize import memorize_offline
from memory_bank.agents.readme import ReadmeFileEntry, compose_readme
from memory_bank.config import AppConfig, ChunkConfig, MemorizeConfig, TaxonomyConfig
from memory_bank.errors import NothingToIngestError
from memory_bank.index.embedding import ChunkEncoding, Embedder
from memory_bank.ingest_work import MemoryParts, memory_recipe, plan_work, stored_readme_vectors
from memory_bank.progress import NullProgress, ProgressSink
from memory_bank.schemas import Chunk, DirectoryNode, Document, IngestSummary, MemorizedChunk
from memory_bank.store.files import assign_chunk_paths
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import SentenceRecord
from memory_bank.store.writer import meta_extra_from_config, write_store
from memory_bank.taxonomy import TaxonomyItem, flat_fallback, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.placement import place_memories, should_place
from memory_bank.text.chunking import chunk_document
from memory_bank.text.sources import SourceLoad, document_from_text, load_sources


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


def require_something(loaded: SourceLoad, files_given: bool) -> None:
    """Raise only when files were given and not one of them could be read."""
    if files_given and not loaded.documents and loaded.skipped:
        reasons = "\n  ".join(loaded.skipped)
        raise NothingToIngestError(f"nothing could be ingested:\n  {reasons}")


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
        replan: bool = False,
    ) -> IngestSummary:
        """Add `files` and `text` to the store. With `replan` (a rebuild), the whole tree is
        planned anew from the stored memories and vectors even when nothing new is given."""
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
        parts, fresh = work.kept, work.documents
        if fresh or (replan and parts.memories):
            stored = len(parts.memories)
            if fresh:
                added = self.memorize(fresh, stored, timer)
                added.documents = fresh
                parts.extend(added)
                summary.chunks = len(added.chunks)
            with timer.stage("plan"):
                if replan:
                    tree = self.plan(parts.memories, parts.memory_vectors)
                else:
                    tree, summary.placed = self.tree_for(store, parts, stored)
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
        summary.stage_seconds = timer.seconds
        summary.total_seconds = time.perf_counter() - started
        return summary

    def tree_for(self, store: Path, parts: MemoryParts, stored: int) -> tuple[DirectoryNode, bool]:
        """The tree after adding `parts.memories[stored:]`: placed into the stored tree when the
        add is small next to it (paths stay stable), else planned anew. True when placed."""
        added = len(parts.memories) - stored
        if should_place(stored, added):
            placed = place_memories(
                StoreReader(store).tree(),
                taxonomy_items(parts.memories),
                parts.memory_vectors,
                range(stored, stored + added),
                self.config.taxonomy,
            )
            if placed is not None and not validate_taxonomy(placed, len(parts.memories), self.config.taxonomy):
                return placed, True
        return self.plan(parts.memories, parts.memory_vectors), False

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
