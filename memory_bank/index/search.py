"""`Searcher`: one entry point for the four search modes over an opened store.

bm25, vector and hybrid come from `hybrid.HybridSearch`; tree is RAPTOR's collapsed tree
(`collapsed_tree`), chunks and directory READMEs ranked together. `descend` is not a mode but a
probe of the tree itself: the leaves a beam reaches by reading READMEs alone (`descent`).

A chunk hit carries the raw chunk text, not its memory (an extract of part of a long chunk):
within the same token budget the reader finds the answer string and the gold turns more often
(docs/benchmarks.md, "Measurements behind the code").
"""

from __future__ import annotations

import threading
from typing import Literal, get_args

from memory_bank.errors import ToolError
from memory_bank.index.bm25 import top_positive
from memory_bank.index.collapsed_tree import collapsed_tree_search
from memory_bank.index.descent import descend
from memory_bank.index.hybrid import CANDIDATE_POOL, HybridSearch
from memory_bank.index.scope import ResolvedScope, SearchScope, resolve_scope
from memory_bank.schemas import SearchHit

SearchMode = Literal["bm25", "vector", "hybrid", "tree"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
# Resolved search scopes kept per opened store.
SCOPE_CACHE_SIZE = 32


class Searcher:
    """Search one store in any mode (see the module docstring)."""

    def __init__(self, hybrid: HybridSearch) -> None:
        self.hybrid = hybrid
        self.corpus = hybrid.corpus
        self._scopes: dict[SearchScope, ResolvedScope] = {}
        self._lock = threading.Lock()

    @property
    def has_embedder(self) -> bool:
        return self.hybrid.has_embedder

    def search(
        self,
        query: str,
        top_k: int | None = None,
        mode: str = "hybrid",
        scope: SearchScope | None = None,
    ) -> list[SearchHit]:
        """The best `top_k` hits for `query`, best first, from the part of the store `scope`
        names (`scope.py`; default the whole store). Blank queries and empty stores: []."""
        if mode not in SEARCH_MODES:
            raise ToolError(
                f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}"
            )
        k = self.hybrid.config.top_k if top_k is None else top_k
        if k < 1:
            raise ToolError(f"top_k must be at least 1, got {k}")
        if not query.strip() or self.corpus.num_chunks == 0:
            return []
        within = self.resolve(scope)
        hit = self.corpus.chunk_hit
        if mode == "bm25":
            scores = self.hybrid.bm25_scores(query)
            scores = scores if within is None else within.bm25_scores(scores)
            return [hit(i, s) for i, s in top_positive(scores, k)]
        query_vector = self.hybrid.encode_query(query)
        if mode == "vector":
            return [hit(i, s) for i, s in self.hybrid.vector_candidates(query_vector, k, within)]
        pool = max(CANDIDATE_POOL, k)
        if mode == "hybrid":
            ranked = self.hybrid.hybrid_candidates(query, query_vector, pool, scope=within)
            return [hit(i, s) for i, s in ranked[:k]]
        return collapsed_tree_search(self.hybrid, query, query_vector, k, pool=pool, scope=within)

    def resolve(self, scope: SearchScope | None) -> ResolvedScope | None:
        """`scope` resolved against this store (None for the whole store); the last few
        resolved scopes are kept, as one conversation asks of the same document again."""
        if scope is None or scope.is_whole_store:
            return None
        with self._lock:
            resolved = self._scopes.pop(scope, None)
        if resolved is None:
            resolved = resolve_scope(self.corpus, scope)
        with self._lock:
            self._scopes[scope] = resolved  # most recently used last
            while len(self._scopes) > SCOPE_CACHE_SIZE:
                del self._scopes[next(iter(self._scopes))]
        return resolved

    def descend(self, query: str, beam_width: int) -> list[SearchHit]:
        """Every memory of the leaves a README-only descent with `beam_width` reaches
        (`descent.descend`), best hybrid score first. Blank queries and empty stores: []."""
        if beam_width < 1:
            raise ToolError(f"beam_width must be at least 1, got {beam_width}")
        if not query.strip() or self.corpus.num_chunks == 0:
            return []
        query_vector = self.hybrid.encode_query(query)
        leaves = descend(
            self.corpus.tree(),
            self.corpus.directories(),
            query,
            query_vector,
            self.hybrid.config.alpha,
            beam_width,
        )
        members = sorted({index for leaf in leaves for index in leaf.chunk_indices})
        scores = self.hybrid.hybrid_scores(self.hybrid.bm25_scores(query), query_vector, members)
        order = sorted(range(len(members)), key=lambda j: (-scores[j], members[j]))
        return [self.corpus.chunk_hit(members[j], float(scores[j])) for j in order]
