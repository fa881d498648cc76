"""Helpers shared by test modules."""

from __future__ import annotations

import functools

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder


@functools.cache
def shared_embedder() -> Embedder:
    """One embedding model per test process, however many modules use it."""
    embedder = Embedder(AppConfig().embedding)
    embedder.encode(["warm up"])
    return embedder
