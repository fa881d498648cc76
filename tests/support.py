"""Helpers shared by test modules."""

from __future__ import annotations

import functools

from memory_bank.config import AppConfig
from memory_bank.index.corpus import StoreCorpus
from memory_bank.index.embedding import Embedder
from memory_bank.index.hybrid import HybridSearch
from memory_bank.index.search import Searcher


@functools.cache
def shared_embedder() -> Embedder:
    """One embedding model per test process, however many modules use it."""
    embedder = Embedder(AppConfig().embedding)
    embedder.encode(["warm up"])
    return embedder


def open_search(reader, embedder=None, config=None) -> Searcher:
    """A Searcher over an opened store, as the query service builds one."""
    return Searcher(HybridSearch(StoreCorpus(reader, embedder), embedder, config))
