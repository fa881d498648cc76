"""Hybrid search over one store: BM25 + cosine, with title links followed.

- bm25: bm25s over each memory's title, keywords, memory text and raw chunk text. The raw text
  matters: an extractive memory leaves out words a question uses, and all four joined find the
  gold passage most often.
- vector: cosine through the store's faiss index (vectors are L2-normalized).
- hybrid: alpha * bm25 / max_bm25 + (1 - alpha) * cosine over the union of the top candidates of
  both. Dividing by the query's best BM25 score (rather than min-max over the candidates) keeps
  "no query term" at exactly 0 and gives the best lexical match 1, so the two parts share a
  0..1 scale without inventing a spread among weak candidates. Both scores are exact for every
  candidate: the BM25 array covers all documents, the cosines are recomputed from the vectors.
  The mix beats either part alone; alpha 0.3 and 0.5 are close.
  Then title links are followed (`links.py`): documents named by the query or by the best hits
  are lifted in (a large gain on multi-hop questions over titled documents, nothing elsewhere).
  Measured and left out, for no gain on all three development sets: min-max BM25 over the
  candidates (the same ranking), cosine divided by the query's best or min-maxed over its top
  50, and mixing each chunk's cosine half and half with its best sentence's. The figures of
  these choices are in docs/benchmarks.md ("Measurements behind the code").

Every query costs one embedding, one sparse BM25 pass and one faiss scan, plus a title scan of
the three best hits; nothing loops over all documents in Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ConfigError
from memory_bank.index.bm25 import top_positive
from memory_bank.index.corpus import StoreCorpus, faiss_threads
from memory_bank.index.embedding import TextEncoder
from memory_bank.index.links import follow_links
from memory_bank.index.scope import ResolvedScope
from memory_bank.index.vector_cache import TextVectorCache

# Candidates taken from each side before hybrid re-scoring.
CANDIDATE_POOL = 50
# Query vectors kept per search: a repeated query (a retry, a popular question, search and ask
# of the same text) skips the model, which is most of a query's cost.
QUERY_CACHE_SIZE = 256


class HybridSearch:
    """BM25, vector and hybrid scoring over one `StoreCorpus`."""

    def __init__(
        self,
        corpus: StoreCorpus,
        embedder: TextEncoder | None,
        config: RetrievalConfig | None = None,
    ) -> None:
        self.corpus = corpus
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self._query_vectors = (
            TextVectorCache(embedder.encode, QUERY_CACHE_SIZE) if embedder is not None else None
        )

    @property
    def has_embedder(self) -> bool:
        return self.embedder is not None

    def encode_query(self, query: str) -> np.ndarray:
        """The query's vector (read-only; the last QUERY_CACHE_SIZE distinct queries are cached)."""
        return self._query_cache().vector(query)

    def encode_queries(self, queries: Sequence[str]) -> None:
        """Embed the uncached ones of `queries` in one forward pass and cache them, so the
        `encode_query` of each that follows skips the model. A server calls this for the
        questions that arrived together: one pass for many short questions costs a fraction of
        one pass each."""
        self._query_cache().encode_many(queries)

    def _query_cache(self) -> TextVectorCache:
        if self._query_vectors is None:
            raise ConfigError("this search needs an embedding model; give HybridSearch an Embedder")
        return self._query_vectors

    def bm25_scores(self, query: str) -> np.ndarray:
        """BM25 score of every memory for `query` (row i = memory index i)."""
        return self.corpus.bm25.get().scores(query)

    def vector_candidates(
        self, query_vector: np.ndarray, k: int, scope: ResolvedScope | None = None
    ) -> list[tuple[int, float]]:
        """The `k` memories closest to `query_vector` by cosine, best first (within `scope`)."""
        total = self.corpus.num_chunks
        if total == 0:
            return []
        if scope is not None:
            # Exact cosines of the scope's members: a scope is a few documents or a folder,
            # and a filtered faiss scan of the whole store could return fewer than k of them.
            members = scope.members
            cosines = self.cosines(query_vector, members)
            order = np.lexsort((members, -cosines))[:k]
            return [(int(members[j]), float(cosines[j])) for j in order]
        # One query at a time: OpenMP threads cost more to wake than they save.
        with faiss_threads(1):
            distances, ids = self.corpus.faiss_index().search(
                query_vector.reshape(1, -1), min(k, total)
            )
        return [(int(i), float(d)) for i, d in zip(ids[0], distances[0], strict=True) if i >= 0]

    def cosines(self, query_vector: np.ndarray, indices: Sequence[int]) -> np.ndarray:
        """Exact cosine of the query to the given memories."""
        if not len(indices):
            return np.zeros(0, dtype=np.float32)
        return self.corpus.memory_vectors()[np.asarray(indices)] @ query_vector

    def hybrid_scores(
        self, bm25_scores: np.ndarray, query_vector: np.ndarray, indices: Sequence[int]
    ) -> np.ndarray:
        """alpha * normalized BM25 + (1 - alpha) * cosine for the given memories."""
        alpha = self.config.alpha
        best_bm25 = float(bm25_scores.max(initial=0.0))
        chosen = np.asarray(indices, dtype=np.int64)
        lexical = bm25_scores[chosen] / best_bm25 if best_bm25 > 0 else 0.0
        return alpha * lexical + (1.0 - alpha) * self.cosines(query_vector, indices)

    def hybrid_candidates(
        self,
        query: str,
        query_vector: np.ndarray,
        pool: int = CANDIDATE_POOL,
        bm25_scores: np.ndarray | None = None,
        links: bool = True,
        scope: ResolvedScope | None = None,
    ) -> list[tuple[int, float]]:
        """Top `pool` BM25 and top `pool` vector candidates, re-scored by `hybrid_scores`, best
        first; with `links`, documents named by the query or the best hits are lifted in
        (`links.follow_links`). Pass `bm25_scores` when the caller already has them. With a
        `scope`, only its memories are candidates (`scope.py`)."""
        if bm25_scores is None:
            bm25_scores = self.bm25_scores(query)
        if scope is not None:
            bm25_scores = scope.bm25_scores(bm25_scores)
        candidates = sorted(
            {i for i, _ in top_positive(bm25_scores, pool)}
            | {i for i, _ in self.vector_candidates(query_vector, pool, scope)}
        )
        scores = self.hybrid_scores(bm25_scores, query_vector, candidates)
        order = sorted(range(len(candidates)), key=lambda j: (-scores[j], candidates[j]))
        ranked = [(candidates[j], float(scores[j])) for j in order]
        if not links:
            return ranked

        def own_scores(indices: Sequence[int]) -> np.ndarray:
            return self.hybrid_scores(bm25_scores, query_vector, indices)

        linked = follow_links(ranked, query, self.corpus.link_graph(), own_scores)
        if scope is None:
            return linked
        return [(index, score) for index, score in linked if scope.contains(index)]

    def warm_up(self) -> None:
        """Load every index and the embedding model now, not on the first query."""
        self.corpus.warm_up()
        if self.embedder is not None:
            self.embedder.encode(["warm up"])  # loads the model and runs its first, slow pass
