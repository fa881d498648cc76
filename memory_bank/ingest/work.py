"""What an ingest starts from: which documents need processing, judged from the store.

An ingest keeps the stored documents, memories and vectors and processes only documents whose
content hash is new, unless the store was made with another *memory recipe* (chunking, memorize
or embedding settings, or a new version of those stages): then every stored document is processed
again, from documents.parquet when it is not given again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from memory_bank.config import (
    EMBEDDING_MODEL_NAME,
    LOCAL_EMBEDDER,
    AppConfig,
    embedder_identity,
)
from memory_bank.index.embedders import check_store_embedder
from memory_bank.schemas import Document
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import documents_from_table
from memory_bank.text.inputs import SourceLoad

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
        # Keyed as before the model stopped being a setting, so existing stores keep their recipe.
        "embedding": {
            "model_name": EMBEDDING_MODEL_NAME,
            "window_tokens": config.embedding.window_tokens,
        },
    }
    identity = embedder_identity(config.embedding)
    if identity != LOCAL_EMBEDDER:  # stores of the packaged model keep the recipe they had
        recipe["embedder"] = identity.as_meta()
    if config.llm.backend != "offline":  # offline stores keep the recipe they always had
        recipe["memorizer"] = f"{config.llm.backend}:{config.llm.build_model or config.llm.model}"
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()[:16]


@dataclass
class IngestWork:
    """What an ingest has to process, judged from the store as it was when the ingest began
    (the commit re-checks against the store as it is then; see `commit.py`)."""

    documents: list[Document]  # to chunk, embed and memorize
    new: int  # given documents the store did not hold
    unchanged: int  # given documents already stored and current
    rebuilt: int  # stored documents processed again (another memory recipe)
    replace_all: bool = False  # the documents are the whole store, made anew
    base_version: str | None = None  # the store version this was judged from


def plan_work(
    loaded: SourceLoad, store: Path, config: AppConfig, reembed: bool = False
) -> IngestWork:
    """Which documents need processing: the given ones the store lacks, or, when the store was
    made with another memory recipe (or before recipes were recorded), every stored document
    too (from documents.parquet when not given again). A store made by another embedder is
    refused (`check_store_embedder`) unless `reembed` asks to move it to the configured one."""
    if not is_store(store):
        return IngestWork(list(loaded.documents), len(loaded.documents), 0, 0)
    reader = StoreReader(Path(store).resolve())
    if not reembed:
        check_store_embedder(reader.meta, config.embedding)
    # The ids only: the documents' text is read when every document is processed again.
    stored_ids = set(reader.rows("documents", ["document_id"]).column("document_id").to_pylist())
    fresh = [doc for doc in loaded.documents if doc.document_id not in stored_ids]
    unchanged = len(loaded.documents) - len(fresh)
    if reader.meta.get("memory_recipe") == memory_recipe(config) or not stored_ids:
        return IngestWork(fresh, len(fresh), unchanged, 0, base_version=reader.store_version)
    # Only a rebuild needs the stored documents themselves (their text, turns, metadata).
    stored = documents_from_table(reader.documents())
    given = {doc.document_id: doc for doc in loaded.documents}
    everything = list(given.values()) + [doc for doc in stored if doc.document_id not in given]
    return IngestWork(
        everything,
        new=len(fresh),
        unchanged=0,
        rebuilt=len(stored),
        replace_all=True,
        base_version=reader.store_version,
    )
