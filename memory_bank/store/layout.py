"""File names of the store layout (docs/architecture.md, "Store layout")."""

from __future__ import annotations

import json
from pathlib import Path

META_FILE = ".gam_meta.json"
META_VERSION = "1.0"
BANK_DIR = ".bank"
MANIFEST_FILE = f"{BANK_DIR}/manifest.json"
MANIFEST_SCHEMA_VERSION = 1
DOCUMENTS_FILE = f"{BANK_DIR}/documents.parquet"
CHUNKS_FILE = f"{BANK_DIR}/chunks.parquet"
MEMORIES_FILE = f"{BANK_DIR}/memories.parquet"
SENTENCES_FILE = f"{BANK_DIR}/sentences.parquet"
TREE_FILE = f"{BANK_DIR}/tree.json"
FAISS_FILE = f"{BANK_DIR}/vectors.faiss"
# Optional: stores written before it existed lack it, and the query side then embeds the READMEs.
READMES_FILE = f"{BANK_DIR}/readmes.parquet"
BM25_DIR = f"{BANK_DIR}/bm25"
ROOT_README = "README.md"
# The tables of a store as segments (memory_bank/store/segments.py): the manifest under .bank/.
TABLES_FILE = f"{BANK_DIR}/tables.json"

# Everything a committed store always has; anything less is an incomplete store.
REQUIRED_FILES = (META_FILE, ROOT_README, MANIFEST_FILE, TREE_FILE, TABLES_FILE)
# A store written before segments has its tables as whole files and a faiss index instead.
WHOLE_TABLE_FILES = (DOCUMENTS_FILE, CHUNKS_FILE, MEMORIES_FILE, SENTENCES_FILE, FAISS_FILE)


def missing_store_files(store_dir: Path) -> list[str]:
    """The required store files that `store_dir` lacks (all of them if it does not exist)."""
    missing = [name for name in REQUIRED_FILES if not (store_dir / name).is_file()]
    if TABLES_FILE in missing and any((store_dir / name).is_file() for name in WHOLE_TABLE_FILES):
        missing.remove(TABLES_FILE)
        missing += [name for name in WHOLE_TABLE_FILES if not (store_dir / name).is_file()]
    return missing


def has_whole_tables(store_dir: Path) -> bool:
    """A store written before segments (its tables whole, its faiss index one file)."""
    return not (store_dir / TABLES_FILE).is_file()


def is_store(store_dir: str | Path) -> bool:
    """True when `store_dir` holds a complete committed store."""
    return not missing_store_files(Path(store_dir))


def looks_like_store(directory: Path) -> bool:
    """True when `directory` holds a store, even a damaged one (so replacing it is safe)."""
    return (directory / META_FILE).is_file() or (directory / BANK_DIR).is_dir()


def live_store_version(store_dir: str | Path) -> str | None:
    """The store_version in the live store's meta file; None without a readable one."""
    try:
        meta = json.loads((Path(store_dir) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta.get("store_version") if isinstance(meta, dict) else None
