"""A committed store version as the committer works with it: memories, vectors, tree, READMEs,
the reorganization log and the LLM ledger, read from the live store in one piece."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memory_bank.ingest.work import MemoryParts, load_memories, load_parts
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
from memory_bank.store.files import readme_relative_path
from memory_bank.store.reader import StoreReader

REORGANIZATIONS_FILE = "reorganizations.json"
LEDGER_FILE = "llm_ledger.json"  # every LLM request made for this store, summed per role


@dataclass
class StoreState:
    """One committed version of a store, as the committer works with it.

    `documents` names every stored document (id -> source). For a store with segments,
    `parts` holds only the memories and their vectors: the documents', chunks' and sentences'
    rows stay in the store, and a commit lends them to the next version (`write_store`'s
    `stored_documents`) rather than reading them."""

    version: str
    parts: MemoryParts
    documents: dict[str, str]
    tree: DirectoryNode
    chunk_paths: dict[int, str]
    readmes: dict[str, str]
    readme_vectors: dict[str, np.ndarray]  # README text -> vector
    meta: dict[str, Any]
    reorganizations: list[dict[str, Any]]
    ledger: dict[str, Any] = field(default_factory=dict)
    rows_lent: bool = False  # True: `parts` holds the memories only (see above)


def load_state(store: Path) -> StoreState | None:
    """The live store as a `StoreState`, or None when there is no store yet."""
    if not layout.is_store(store):
        return None
    reader = StoreReader(Path(store).resolve())  # one version, even if a commit follows
    memories = reader.memories()
    readmes: dict[str, str] = {}
    vectors: dict[str, np.ndarray] = {}
    table = reader.readmes()
    if table is not None:
        texts = table.column("text").to_pylist()
        readmes = dict(zip(table.column("directory").to_pylist(), texts, strict=True))
        vectors = dict(zip(texts, reader.readme_vectors(), strict=True))
    tree = reader.tree()
    for node in tree.iter_nodes():  # a store written without readmes.parquet
        if node.path not in readmes:
            readme = reader.root / readme_relative_path(node.path)
            readmes[node.path] = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    log = reader.root / layout.BANK_DIR / REORGANIZATIONS_FILE
    ledger = reader.root / layout.BANK_DIR / LEDGER_FILE
    documents = {str(k): str(v) for k, v in dict(reader.manifest.get("documents", {})).items()}
    return StoreState(
        version=reader.store_version,
        parts=load_memories(reader) if reader.segmented else load_parts(reader),
        documents=documents,
        tree=tree,
        chunk_paths=dict(
            zip(
                memories.column("index").to_pylist(),
                memories.column("path").to_pylist(),
                strict=True,
            )
        ),
        readmes=readmes,
        readme_vectors=vectors,
        meta=dict(reader.meta),
        reorganizations=json.loads(log.read_text(encoding="utf-8")) if log.is_file() else [],
        ledger=json.loads(ledger.read_text(encoding="utf-8")) if ledger.is_file() else {},
        rows_lent=reader.segmented,
    )
