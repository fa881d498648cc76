"""`write_store`: check a store snapshot whole, then write it as the store's new version in one
switch (see builder.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from memory_bank.config import AppConfig, TaxonomyConfig, embedder_identity
from memory_bank.errors import StoreError
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.builder import StoreBuilder
from memory_bank.store.files import assign_chunk_paths, readme_relative_path, render_chunk_file
from memory_bank.store.location import StoreLocation
from memory_bank.store.segments import SegmentHook
from memory_bank.store.snapshot import COMPUTED_META_KEYS, MemoryParts, StoreSnapshot
from memory_bank.store.tables import SentenceRecord, check_vectors

REQUIRED_META_EXTRA = ("model_used", "embedding_model", "backend", "chunk_config")


class StoreStats(BaseModel):
    """What `write_store` wrote."""

    store_dir: str
    store_version: str
    documents: int
    chunks: int
    directories: int  # below the root
    sentences: int
    written: bool = True  # False when the content equalled the live store (skip_if_unchanged)


def meta_extra_from_config(config: AppConfig) -> dict[str, Any]:
    """The configuration-derived part of `.gam_meta.json` (the start of a snapshot's `meta`)."""
    return {
        "model_used": "offline" if config.llm.backend == "offline" else config.llm.backend,
        "embedding_model": embedder_identity(config.embedding).model,
        "embedder": embedder_identity(config.embedding).as_meta(),
        "backend": config.llm.backend,
        "chunk_config": config.chunking.model_dump(),
    }


def write_store(
    store_dir: str | Path,
    snapshot: StoreSnapshot,
    *,
    taxonomy_config: TaxonomyConfig | None = None,
    skip_if_unchanged: bool = False,
    reuse_files: Mapping[str, Path] | None = None,
    compact: bool = False,
    attachments: SegmentHook | None = None,
) -> StoreStats:
    """Write `snapshot` and make it the live version at `store_dir` in one swap.

    Everything is checked first (raises StoreError listing every problem), the tree with
    `validate_taxonomy` against `taxonomy_config` (default: the default TaxonomyConfig); nothing
    on disk changes unless the whole version was written. `created_at` is carried over from the
    version being replaced. With `skip_if_unchanged`, a snapshot whose content equals the live
    version is not written again (`written=False`): a rebuild of an unchanged store is a no-op.

    `reuse_files` maps store-relative paths of chunk files and READMEs to live files that hold
    exactly what would be written there (same memory, same path): they are hard-linked.

    The tables are written as segments (segments.py): only the rows the live version lacks,
    with tombstones for the rows it has and this one does not; the rest is linked. `compact`
    (a rebuild) folds every table into one segment, and a change of the memory recipe writes
    them anew (the same chunk may then hold another memory). `attachments`: the caller's files
    beside each segment written (the graph's sentence facts). A snapshot with
    `stored_documents` takes those documents' rows from the live version, which must have
    segments and the same memory recipe.
    """
    parts = checked_parts(snapshot, taxonomy_config or TaxonomyConfig())
    chunk_paths = snapshot.chunk_paths
    if chunk_paths is None:
        chunk_paths = assign_chunk_paths(snapshot.tree, parts.memories)
    manifest_documents = snapshot.documents()
    store_version = compute_store_version(
        manifest_documents,
        snapshot.tree,
        parts.memories,
        chunk_paths,
        snapshot.readmes,
        parts.memory_vectors,
        extra={"meta": dict(snapshot.meta), "bank": dict(snapshot.bank_json)},
    )
    stats = StoreStats(
        store_dir=str(store_dir),
        store_version=store_version,
        documents=len(manifest_documents),
        chunks=len(parts.memories),
        directories=count_directories(snapshot.tree),
        sentences=len(parts.sentences),
    )
    if skip_if_unchanged and _live_store_is(store_dir, store_version, snapshot.meta):
        return stats.model_copy(update={"written": False})
    with StoreBuilder(store_dir) as builder:
        _write_files(builder, snapshot, chunk_paths, reuse_files or {})
        with builder.locked():  # the base must stay the version this is written against
            base = _appendable_base(builder.location, snapshot.meta)
            if snapshot.stored_documents is not None and base is None:
                raise StoreError(
                    f"{store_dir}: the live version cannot lend its rows (it has no segments, "
                    "or another memory recipe): give every document's rows"
                )
            sentences = builder.write_tables(
                parts,
                chunk_paths,
                base=base,
                compact=compact,
                document_ids=set(manifest_documents),
                readmes=snapshot.readmes,
                readme_vectors=snapshot.readme_vectors,
                attachments=attachments,
            )
        builder.write_tree(snapshot.tree)
        for name, value in snapshot.bank_json.items():
            builder.write_bank_json(name, value)
        if snapshot.graph is not None:
            snapshot.graph.write(builder.build_dir / layout.BANK_DIR)
        builder.write_manifest(store_version, manifest_documents)
        committed = _publish(builder, snapshot, store_version)
    return stats.model_copy(update={"store_dir": str(committed), "sentences": sentences})


def checked_parts(snapshot: StoreSnapshot, taxonomy_config: TaxonomyConfig) -> MemoryParts:
    """The parts of `snapshot`, vectors as C-contiguous float32 matrices, once every part was
    found consistent (else StoreError listing every problem)."""
    parts = snapshot.parts
    problems = find_store_problems(
        documents=parts.documents,
        chunks=parts.chunks,
        memories=parts.memories,
        sentences=parts.sentences,
        tree=snapshot.tree,
        readmes=snapshot.readmes,
        taxonomy_config=taxonomy_config,
        stored_documents=snapshot.stored_documents,
    )
    problems += _meta_problems(snapshot.meta)
    vectors = snapshot.readme_vectors
    if vectors is not None and set(vectors) != set(snapshot.readmes):
        unmatched = sorted(set(vectors) ^ set(snapshot.readmes))
        problems.append(f"README vectors and READMEs differ in directories: {unmatched[:5]}")
    if problems:
        raise StoreError("refusing to write an inconsistent store:\n- " + "\n- ".join(problems))
    return replace(
        parts,
        memory_vectors=check_vectors(parts.memory_vectors, len(parts.memories), "memory vectors"),
        sentence_vectors=check_vectors(
            parts.sentence_vectors, len(parts.sentences), "sentence vectors"
        ),
    )


def _write_files(
    builder: StoreBuilder,
    snapshot: StoreSnapshot,
    chunk_paths: Mapping[int, str],
    reuse: Mapping[str, Path],
) -> None:
    """The Markdown tree: a file per memory and a README per directory, linked from the live
    version where `reuse` names an unchanged one."""
    for memory in snapshot.parts.memories:
        relative = chunk_paths[memory.index]
        if relative in reuse:
            builder.link_file(relative, reuse[relative])
        else:
            builder.write_file(relative, render_chunk_file(memory))
    for directory, text in snapshot.readmes.items():
        relative = readme_relative_path(directory)
        if relative in reuse:
            builder.link_file(relative, reuse[relative])
        else:
            builder.write_file(relative, text)


def _publish(builder: StoreBuilder, snapshot: StoreSnapshot, store_version: str) -> Path:
    """Write the meta file and publish the build, under the store's lock (the meta carries
    `created_at` over from the version it replaces)."""
    parts, meta, documents = snapshot.parts, snapshot.meta, snapshot.documents()
    with builder.locked():
        previous = builder.previous_meta() or {}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        builder.write_meta(
            {
                "version": layout.META_VERSION,
                "store_version": store_version,
                "created_at": previous.get("created_at") or now,
                "updated_at": now,
                "total_documents": len(documents),
                "total_chunks": len(parts.memories),
                "total_directories": count_directories(snapshot.tree),
                "source_files": sorted(set(documents.values())),
                # The documented keys first, in the documented order, then any additions.
                **{key: meta[key] for key in REQUIRED_META_EXTRA},
                **{k: v for k, v in meta.items() if k not in REQUIRED_META_EXTRA},
            }
        )
        return builder.commit()


def _appendable_base(location: StoreLocation, meta: Mapping[str, Any]) -> Path | None:
    """The live version, when the new one can be written as changes to its tables: it has
    segments and the same memory recipe (a chunk id then means the same chunk and memory)."""
    live = location.live_directory()
    if live is None or layout.has_whole_tables(live):
        return None
    try:
        live_meta = json.loads((live / layout.META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(live_meta, dict) or live_meta.get("memory_recipe") != meta.get(
        "memory_recipe"
    ):
        return None
    return live


def _live_store_is(store_dir: str | Path, store_version: str, meta: Mapping[str, Any]) -> bool:
    """Whether the live store already is this content (version and configured meta alike)."""
    try:
        live = json.loads((Path(store_dir) / layout.META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(live, dict) or live.get("store_version") != store_version:
        return False
    return all(live.get(key) == value for key, value in meta.items())


def count_directories(tree: DirectoryNode) -> int:
    """Directories below the root (the root itself is the store directory, not counted)."""
    return sum(1 for _ in tree.iter_nodes()) - 1


def compute_store_version(
    manifest_documents: Mapping[str, str],
    tree: DirectoryNode,
    memories: Sequence[MemorizedChunk],
    chunk_paths: Mapping[int, str],
    readmes: Mapping[str, str],
    memory_vectors: np.ndarray,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """A content hash of the store: same content, same version; any change, a new one.

    Covers the manifest and the tree, and also the memories, READMEs and vectors, because
    indexes derived on the query side (BM25 over memories and READMEs) are cached by version.
    """
    digest = hashlib.sha256()
    content = {
        "schema_version": layout.MANIFEST_SCHEMA_VERSION,
        "documents": dict(sorted(manifest_documents.items())),
        "tree": tree.model_dump(mode="json"),
        "memories": [
            [
                m.index,
                m.metadata.get("chunk_id"),
                m.title,
                m.memory,
                m.tldr,
                m.keywords,
                m.context,
                chunk_paths.get(m.index),
            ]
            for m in sorted(memories, key=lambda memory: memory.index)
        ],
        "readmes": dict(sorted(readmes.items())),
        "extra": extra or {},
    }
    digest.update(json.dumps(content, sort_keys=True, ensure_ascii=False).encode("utf-8"))
    digest.update(np.ascontiguousarray(memory_vectors, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def find_store_problems(
    *,
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    memories: Sequence[MemorizedChunk],
    sentences: Sequence[SentenceRecord],
    tree: DirectoryNode,
    readmes: Mapping[str, str],
    taxonomy_config: TaxonomyConfig,
    stored_documents: Mapping[str, str] | None = None,
) -> list[str]:
    """Every inconsistency between the parts of a store (empty list = consistent). With
    `stored_documents` (kept documents of the live version, not given), `documents`, `chunks`
    and `sentences` are only the new rows, and what is checked of the kept ones is that the
    memories name them."""
    # Imported here: the taxonomy package pulls in scikit-learn (seconds), which readers and
    # the file helpers of this package do not need.
    from memory_bank.taxonomy import validate_taxonomy

    problems = [
        f"tree: {problem}" for problem in validate_taxonomy(tree, len(memories), taxonomy_config)
    ]
    indices = [memory.index for memory in memories]
    if sorted(indices) != list(range(len(memories))):
        problems.append("memory indices must be exactly 0..n-1, each once")

    document_ids = [doc.document_id for doc in documents]
    if len(set(document_ids)) != len(document_ids):
        problems.append("duplicate document_id in documents")
    kept = stored_documents or {}
    if set(document_ids) & set(kept):
        problems.append("new documents that the store already holds")
    chunk_ids = [chunk.chunk_id for chunk in chunks]
    if len(set(chunk_ids)) != len(chunk_ids):
        problems.append("duplicate chunk_id in chunks")
    orphans = sorted({chunk.document_id for chunk in chunks} - set(document_ids))
    if orphans:
        problems.append(f"chunks refer to unknown documents: {orphans[:5]}")

    memory_chunk_ids = [str(memory.metadata.get("chunk_id", "")) for memory in memories]
    for key in ("chunk_id", "document_id", "source"):
        lacking = [memory.index for memory in memories if not memory.metadata.get(key)]
        if lacking:
            problems.append(f"memories lack metadata[{key!r}]: {lacking[:5]}")
    new_documents = set(document_ids)
    unknown = sorted(
        {str(m.metadata.get("document_id")) for m in memories} - new_documents - set(kept)
    )
    if unknown:
        problems.append(f"memories of unknown documents: {unknown[:5]}")
    given_chunk_ids = [
        chunk_id
        for chunk_id, memory in zip(memory_chunk_ids, memories, strict=True)
        if memory.metadata.get("document_id") in new_documents
    ]
    if sorted(given_chunk_ids) != sorted(chunk_ids):
        problems.append("memories and chunks must match one to one (by chunk_id)")

    chunk_id_of = dict(zip(indices, memory_chunk_ids, strict=True))
    bad_sentences = [
        position
        for position, sentence in enumerate(sentences)
        if chunk_id_of.get(sentence.index) != sentence.chunk_id
        or not 0 <= sentence.start_char <= sentence.end_char
    ]
    if bad_sentences:
        problems.append(
            f"sentences with a wrong memory index, chunk_id or span: {bad_sentences[:5]}"
        )

    return problems + _readme_problems(tree, readmes)


def _readme_problems(tree: DirectoryNode, readmes: Mapping[str, str]) -> list[str]:
    """Every directory has a README with text, and every README a directory."""
    problems = []
    directories = {node.path for node in tree.iter_nodes()}
    missing_readmes = sorted(directories - set(readmes))
    if missing_readmes:
        problems.append(f"directories without a README: {missing_readmes[:5]}")
    unknown_readmes = sorted(set(readmes) - directories)
    if unknown_readmes:
        problems.append(f"READMEs for directories not in the tree: {unknown_readmes[:5]}")
    blank = sorted(path for path, text in readmes.items() if not text.strip())
    if blank:
        problems.append(f"blank READMEs: {blank[:5]}")
    return problems


def _meta_problems(meta: Mapping[str, Any]) -> list[str]:
    problems = []
    missing = [key for key in REQUIRED_META_EXTRA if key not in meta]
    if missing:
        problems.append(f"meta lacks {missing} (see meta_extra_from_config)")
    overridden = [key for key in COMPUTED_META_KEYS if key in meta]
    if overridden:
        problems.append(f"meta may not set computed keys {overridden}")
    return problems
