"""The on-disk memory store: Markdown tree for people and agents, `.bank/` tables as the truth.

Layout: docs/architecture.md ("Store layout"). A version is a `StoreSnapshot`: write one with
`write_store` (or `StoreBuilder` for finer control), read with `StoreReader` (or whole, with
`load_snapshot`).
"""

from memory_bank.store.atomic import atomic_write_bytes, atomic_write_text, safe_join
from memory_bank.store.builder import StoreBuilder, store_lock
from memory_bank.store.files import (
    assign_chunk_paths,
    is_valid_name,
    parse_chunk_file,
    render_chunk_file,
    sanitize_name,
)
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.snapshot import MemoryParts, StoreSnapshot, load_snapshot
from memory_bank.store.tables import EMBEDDING_DIM, SentenceRecord
from memory_bank.store.writer import StoreStats, meta_extra_from_config, write_store

__all__ = [
    "EMBEDDING_DIM",
    "MemoryParts",
    "SentenceRecord",
    "StoreBuilder",
    "StoreReader",
    "StoreSnapshot",
    "StoreStats",
    "assign_chunk_paths",
    "atomic_write_bytes",
    "atomic_write_text",
    "is_store",
    "is_valid_name",
    "load_snapshot",
    "meta_extra_from_config",
    "parse_chunk_file",
    "render_chunk_file",
    "safe_join",
    "sanitize_name",
    "store_lock",
    "write_store",
]
