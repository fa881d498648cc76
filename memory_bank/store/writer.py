"""`write_store`: check a whole ingest result, then write it as one new store (see builder.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from memory_bank.config import EMBEDDING_MODEL_NAME, AppConfig, TaxonomyConfig
from memory_bank.errors import StoreError
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.builder import StoreBuilder
from memory_bank.store.files import assign_chunk_paths, readme_relative_path, render_chunk_file
from memory_bank.store.tables import SentenceRecord, check_vectors

# Keys of .gam_meta.json that write_store computes; meta_extra supplies the rest.
_COMPUTED_META_KEYS = (
    "version",
    "store_version",
    "created_at",
    "updated_at",
    "total_documents",
    "total_chunks",
    "total_directories",
    "source_files",
)
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
    """The configuration-derived part of `.gam_meta.json` (pass as `write_store(meta_extra=)`)."""
    return {
        "model_used": "offline" if config.llm.backend == "offline" else config.llm.backend,
        "embedding_model": EMBEDDING_MODEL_NAME,
        "backend": config.llm.backend,
        "chunk_config": config.chunking.model_dump(),
    }


def write_store(
    store_dir: str | Path,
    *,
    documents: Sequence[Document],
    chunks: Sequence[Chunk],
    memories: Sequence[MemorizedChunk],
    memory_vectors: np.ndarray,
    sentences: Sequence[SentenceRecord],
    sentence_vectors: np.ndarray,
    tree: DirectoryNode,
    readmes: Mapping[str, str],
    meta_extra: Mapping[str, Any],
    taxonomy_config: TaxonomyConfig | None = None,
    readme_vectors: Mapping[str, np.ndarray] | None = None,
    chunk_paths: Mapping[int, str] | None = None,
    bank_json: Mapping[str, Any] | None = None,
    skip_if_unchanged: bool = False,
    reuse_files: Mapping[str, Path] | None = None,
    bank_files: Callable[[Path], None] | None = None,
) -> StoreStats:
    """Write a complete store and make it the live one at `store_dir` in one swap.

    Everything is checked first (raises StoreError listing every problem), the tree with
    `validate_taxonomy` against `taxonomy_config` (default: the default TaxonomyConfig); nothing
    on disk changes unless the whole store was written. `readmes` maps tree paths ("/", "/a/b")
    to text. `created_at` is carried over from the store being replaced.

    `readme_vectors` maps the same paths to each README's embedding (`Embedder.encode([text])`);
    they are stored in `.bank/readmes.parquet` so the query side need not embed every README
    when it opens the store. Without them that table is not written.

    `chunk_paths` (default: `assign_chunk_paths(tree, memories)`) lets a commit keep the file
    paths memories already had; `bank_json` adds JSON files under `.bank/` (name -> value). With
    `skip_if_unchanged`, a store whose content equals the live one is not written again (the
    returned stats say `written=False`): a scheduled rebuild of an unchanged store is a no-op.

    `reuse_files` maps store-relative paths of chunk files and READMEs to files of the live
    version that already hold exactly what would be written there (the caller knows: same
    memory, same path); they are hard-linked instead of rendered and written again.
    """
    problems = find_store_problems(
        documents=documents,
        chunks=chunks,
        memories=memories,
        sentences=sentences,
        tree=tree,
        readmes=readmes,
        taxonomy_config=taxonomy_config or TaxonomyConfig(),
    )
    problems += _meta_extra_problems(meta_extra)
    if readme_vectors is not None and set(readme_vectors) != set(readmes):
        unmatched = sorted(set(readme_vectors) ^ set(readmes))
        problems.append(f"README vectors and READMEs differ in directories: {unmatched[:5]}")
    if problems:
        raise StoreError("refusing to write an inconsistent store:\n- " + "\n- ".join(problems))
    memory_matrix = check_vectors(memory_vectors, len(memories), "memory vectors")
    sentence_matrix = check_vectors(sentence_vectors, len(sentences), "sentence vectors")

    if chunk_paths is None:
        chunk_paths = assign_chunk_paths(tree, memories)
    manifest_documents = {doc.document_id: doc.source for doc in documents}
    store_version = compute_store_version(
        manifest_documents,
        tree,
        memories,
        chunk_paths,
        readmes,
        memory_matrix,
        extra={"meta": dict(meta_extra), "bank": dict(bank_json or {})},
    )
    if skip_if_unchanged and _live_store_is(store_dir, store_version, meta_extra):
        return StoreStats(
            store_dir=str(store_dir),
            store_version=store_version,
            documents=len(documents),
            chunks=len(memories),
            directories=count_directories(tree),
            sentences=len(sentences),
            written=False,
        )
    with StoreBuilder(store_dir) as builder:
        reuse = reuse_files or {}
        for memory in memories:
            relative = chunk_paths[memory.index]
            if relative in reuse:
                builder.link_file(relative, reuse[relative])
            else:
                builder.write_file(relative, render_chunk_file(memory))
        for directory, text in readmes.items():
            relative = readme_relative_path(directory)
            if relative in reuse:
                builder.link_file(relative, reuse[relative])
            else:
                builder.write_file(relative, text)
        builder.write_tables(
            documents=documents,
            chunks=chunks,
            memories=memories,
            memory_vectors=memory_matrix,
            sentences=sentences,
            sentence_vectors=sentence_matrix,
            chunk_paths=chunk_paths,
        )
        if readme_vectors is not None:
            builder.write_readme_vectors(readmes, readme_vectors)
        builder.write_tree(tree)
        for name, value in (bank_json or {}).items():
            builder.write_bank_json(name, value)
        if bank_files is not None:
            bank_files(builder.build_dir / layout.BANK_DIR)
        builder.write_manifest(store_version, manifest_documents)
        builder.write_faiss(memory_matrix)
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
                    "total_chunks": len(memories),
                    "total_directories": count_directories(tree),
                    "source_files": sorted({doc.source for doc in documents}),
                    # The documented keys first, in the documented order, then any additions.
                    **{key: meta_extra[key] for key in REQUIRED_META_EXTRA},
                    **{k: v for k, v in meta_extra.items() if k not in REQUIRED_META_EXTRA},
                }
            )
            committed = builder.commit()
    return StoreStats(
        store_dir=str(committed),
        store_version=store_version,
        documents=len(documents),
        chunks=len(memories),
        directories=count_directories(tree),
        sentences=len(sentences),
    )


def _live_store_is(
    store_dir: str | Path, store_version: str, meta_extra: Mapping[str, Any]
) -> bool:
    """Whether the live store already is this content (version and configured meta alike)."""
    try:
        meta = json.loads((Path(store_dir) / layout.META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(meta, dict) or meta.get("store_version") != store_version:
        return False
    return all(meta.get(key) == value for key, value in meta_extra.items())


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
) -> list[str]:
    """Every inconsistency between the parts of a store (empty list = consistent)."""
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
    if sorted(memory_chunk_ids) != sorted(chunk_ids):
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


def _meta_extra_problems(meta_extra: Mapping[str, Any]) -> list[str]:
    problems = []
    missing = [key for key in REQUIRED_META_EXTRA if key not in meta_extra]
    if missing:
        problems.append(f"meta_extra lacks {missing} (see meta_extra_from_config)")
    overridden = [key for key in _COMPUTED_META_KEYS if key in meta_extra]
    if overridden:
        problems.append(f"meta_extra may not set computed keys {overridden}")
    return problems
