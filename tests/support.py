"""Helpers shared by test modules."""

from __future__ import annotations

import functools
import re
from pathlib import Path

from memory_bank.config import AppConfig
from memory_bank.graph.layers import GraphSnapshot, load_graph_state
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
    return Searcher(HybridSearch(StoreCorpus(reader), embedder, config))


def written_node_ids(snapshot: GraphSnapshot, version: Path) -> set[str]:
    """The node ids of a graph snapshot once written into `version` (a version being built)."""
    snapshot.write(version / ".bank")
    state = load_graph_state(version / ".bank" / "graph", version / "no checkpoints")
    return set(state.graph.nodes)


_PREVIOUSLY = re.compile(r"\s*\(previously [^()]*\)")


def stated_as_current(answer: str) -> str:
    """An answer without its "(previously Y, until DATE)" notes: what it states as current."""
    return _PREVIOUSLY.sub("", answer)
