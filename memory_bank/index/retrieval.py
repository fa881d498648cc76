"""Search over a store: BM25, vector, hybrid and collapsed-tree (RAPTOR) retrieval.

- bm25: bm25s over each memory's title, keywords, memory text and raw chunk text. The raw text
  matters: on FairytaleQA (926 questions, story sections as chunks, offline memories) the memory
  alone finds the gold section at R@1/R@5 0.45/0.72, title+keywords+memory 0.51/0.77, the raw
  chunk 0.64/0.88, all four joined 0.65/0.89.
- vector: cosine through the store's faiss IndexFlatIP (vectors are L2-normalized).
- hybrid: alpha * bm25 / max_bm25 + (1 - alpha) * cosine over the union of the top candidates of
  both. Dividing by the query's best BM25 score (rather than min-max over the candidates) keeps
  "no query term" at exactly 0 and gives the best lexical match 1, so the two parts share a
  0..1 scale without inventing a spread among weak candidates. Both scores are exact for every
  candidate: the BM25 array covers all documents, the cosines are recomputed from the vectors.
  Same data: vector alone 0.41/0.80, alpha 0.3 0.65/0.91, alpha 0.5 0.66/0.91, BM25 0.65/0.89.
- tree: chunks and directory READMEs ranked together by cosine (RAPTOR's collapsed tree); a
  README that makes the cut also pulls in its subtree's best chunks.

Every query costs one embedding, one sparse BM25 pass and one faiss scan; nothing loops over
all documents in Python.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, get_args

import faiss
import numpy as np

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ConfigError, ToolError
from memory_bank.index.bm25 import LazyBm25Index, tokenize, top_positive
from memory_bank.schemas import DirectoryNode, SearchHit
from memory_bank.store.files import readme_relative_path
from memory_bank.store.layout import BANK_DIR

if TYPE_CHECKING:
    from memory_bank.store.reader import StoreReader

SearchMode = Literal["bm25", "vector", "hybrid", "tree"]
SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)

# What each memory's BM25 document is made of; part of the persisted index's stamp.
BM25_RECIPE = "title+keywords+memory+chunk"
# Candidates taken from each side before hybrid re-scoring.
CANDIDATE_POOL = 50
# Chunks a README hit pulls in from its subtree in tree mode.
README_EXPANSION = 2


class TextEncoder(Protocol):
    """What retrieval needs from the embedding model (memory_bank.index.embedding.Embedder)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


class Retriever:
    """Search one opened store. Indexes load lazily and are kept for the reader's lifetime."""

    def __init__(
        self,
        reader: StoreReader,
        embedder: TextEncoder | None,
        config: RetrievalConfig | None = None,
    ) -> None:
        self.reader = reader
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self.bm25 = LazyBm25Index(
            reader.root / BANK_DIR, reader.store_version, self._bm25_documents, BM25_RECIPE
        )
        memories = reader.memories()
        self.num_chunks = memories.num_rows
        self._chunk_ids: list[str] = memories.column("chunk_id").to_pylist()
        self._document_ids: list[str] = memories.column("document_id").to_pylist()
        self._sources: list[str] = memories.column("source").to_pylist()
        self._paths: list[str] = memories.column("path").to_pylist()
        self._memory_texts: list[str] = memories.column("memory").to_pylist()
        self._index_of_path = {path: index for index, path in enumerate(self._paths)}
        self._lock = threading.Lock()
        self._directories: DirectoryIndex | None = None
        self._sentences: SentenceTable | None = None

    @property
    def has_embedder(self) -> bool:
        return self.embedder is not None

    @property
    def store_version(self) -> str:
        return self.reader.store_version

    # --- public search ----------------------------------------------------------------------

    def search(self, query: str, top_k: int | None = None, mode: str = "hybrid") -> list[SearchHit]:
        """The best `top_k` hits for `query`, best first. Blank queries and empty stores: []."""
        if mode not in SEARCH_MODES:
            raise ToolError(f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}")
        k = self.config.top_k if top_k is None else top_k
        if k < 1:
            raise ToolError(f"top_k must be at least 1, got {k}")
        if not query.strip() or self.num_chunks == 0:
            return []
        if mode == "bm25":
            return [self.chunk_hit(i, s) for i, s in top_positive(self.bm25_scores(query), k)]
        query_vector = self.encode_query(query)
        if mode == "vector":
            return [self.chunk_hit(i, s) for i, s in self.vector_candidates(query_vector, k)]
        if mode == "hybrid":
            ranked = self.hybrid_candidates(query, query_vector, pool=max(CANDIDATE_POOL, k))[:k]
            return [self.chunk_hit(i, s) for i, s in ranked]
        return self.tree_search(query_vector, k)

    # --- building blocks (also used by the navigation agent) -----------------------------------

    def encode_query(self, query: str) -> np.ndarray:
        if self.embedder is None:
            raise ConfigError("this search needs an embedding model; create the Retriever with an Embedder")
        return np.asarray(self.embedder.encode([query])[0], dtype=np.float32)

    def bm25_scores(self, query: str) -> np.ndarray:
        """BM25 score of every memory for `query` (row i = memory index i)."""
        return self.bm25.get().scores(query)

    def vector_candidates(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """The `k` memories closest to `query_vector` by cosine, best first."""
        if self.num_chunks == 0:
            return []
        distances, ids = self._faiss().search(query_vector.reshape(1, -1), min(k, self.num_chunks))
        return [(int(i), float(d)) for i, d in zip(ids[0], distances[0], strict=True) if i >= 0]

    def cosines(self, query_vector: np.ndarray, indices: Sequence[int]) -> np.ndarray:
        """Exact cosine of the query to the given memories."""
        if not len(indices):
            return np.zeros(0, dtype=np.float32)
        return self.reader.memory_vectors()[np.asarray(indices)] @ query_vector

    def hybrid_scores(
        self, bm25_scores: np.ndarray, query_vector: np.ndarray, indices: Sequence[int]
    ) -> np.ndarray:
        """alpha * normalized BM25 + (1 - alpha) * cosine for the given memories."""
        alpha = self.config.alpha
        best_bm25 = float(bm25_scores.max(initial=0.0))
        lexical = bm25_scores[np.asarray(indices, dtype=np.int64)] / best_bm25 if best_bm25 > 0 else 0.0
        return alpha * lexical + (1.0 - alpha) * self.cosines(query_vector, indices)

    def hybrid_candidates(
        self,
        query: str,
        query_vector: np.ndarray,
        pool: int = CANDIDATE_POOL,
        bm25_scores: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """Top `pool` BM25 and top `pool` vector candidates, re-scored by `hybrid_scores`, best
        first. Pass `bm25_scores` when the caller already has them for this query."""
        if bm25_scores is None:
            bm25_scores = self.bm25_scores(query)
        candidates = sorted(
            {i for i, _ in top_positive(bm25_scores, pool)}
            | {i for i, _ in self.vector_candidates(query_vector, pool)}
        )
        scores = self.hybrid_scores(bm25_scores, query_vector, candidates)
        order = sorted(range(len(candidates)), key=lambda j: (-scores[j], candidates[j]))
        return [(candidates[j], float(scores[j])) for j in order]

    def tree_search(self, query_vector: np.ndarray, k: int) -> list[SearchHit]:
        """Collapsed-tree retrieval: chunks and READMEs ranked together by cosine.

        Walking down that ranking, a README hit is taken together with its subtree's best
        chunks, until `k` hits are chosen; they are returned best first.
        """
        directories = self.directories()
        nodes = [("chunk", index, score) for index, score in self.vector_candidates(query_vector, k)]
        nodes += [("readme", position, score) for position, score in directories.closest(query_vector, k)]
        nodes.sort(key=lambda node: (-node[2], node[0], node[1]))
        chosen: list[SearchHit] = []
        taken: set[int] = set()
        for kind, key, score in nodes:
            if len(chosen) >= k:
                break
            if kind == "chunk":
                if key not in taken:
                    taken.add(key)
                    chosen.append(self.chunk_hit(key, score))
                continue
            chosen.append(self.readme_hit(directories.paths[key], score))
            subtree = [i for i in directories.subtree_chunks[key] if i not in taken]
            cosines = self.cosines(query_vector, subtree)
            for position in np.argsort(-cosines, kind="stable")[:README_EXPANSION]:
                if len(chosen) >= k:
                    break
                taken.add(subtree[position])
                chosen.append(self.chunk_hit(subtree[position], cosines[position]))
        return sorted(chosen, key=lambda hit: -hit.score)

    # --- the directory tree -----------------------------------------------------------------

    def directories(self) -> DirectoryIndex:
        """README vectors and subtree members of every directory below the root (built once)."""
        with self._lock:
            if self._directories is None:
                self._directories = self._build_directory_index()
            return self._directories

    def readme_text(self, directory: str) -> str:
        return self.reader.path(readme_relative_path(directory)).read_text(encoding="utf-8")

    def chunk_path(self, index: int) -> str:
        return self._paths[index]

    def chunk_sentences(self, index: int) -> tuple[list[str], np.ndarray]:
        """The stored sentences of memory `index`'s chunk, in order, with their vectors."""
        with self._lock:
            if self._sentences is None:
                self._sentences = SentenceTable(self.reader, self.num_chunks)
        return self._sentences.of(index)

    def warm_up(self) -> None:
        """Load every index now (BM25, faiss, README vectors, sentences), not on the first query."""
        self.bm25.get()
        if self.num_chunks:
            self._faiss()
            self.chunk_sentences(0)
        if self.embedder is not None:
            self.directories()

    def index_of_path(self, chunk_path: str) -> int | None:
        """Memory index of a store-relative chunk file path, None for any other file."""
        return self._index_of_path.get(chunk_path)

    def chunk_hit(self, index: int, score: float) -> SearchHit:
        return SearchHit(
            chunk_path=self._paths[index],
            chunk_id=self._chunk_ids[index],
            source=self._sources[index],
            document_id=self._document_ids[index],
            score=round(float(score), 6),
            text=self._memory_texts[index],
        )

    def readme_hit(self, directory: str, score: float) -> SearchHit:
        """A README as a hit: `chunk_id` is its directory ("/a/b"), `source` its file; no document."""
        readme_path = readme_relative_path(directory)
        return SearchHit(
            chunk_path=readme_path,
            chunk_id=directory,
            source=readme_path,
            document_id="",
            score=round(float(score), 6),
            text=self.readme_text(directory),
            kind="readme",
        )

    # --- internals --------------------------------------------------------------------------

    def _faiss(self) -> faiss.Index:
        # One query at a time: OpenMP threads cost more to wake than they save (7 vs 16 ms at 100k).
        faiss.omp_set_num_threads(1)
        return self.reader.faiss_index()

    def _bm25_documents(self) -> list[str]:
        memories = self.reader.memories()
        chunks = self.reader.chunks()
        chunk_text = dict(
            zip(chunks.column("chunk_id").to_pylist(), chunks.column("text").to_pylist(), strict=True)
        )
        return [
            "\n".join([title.replace("_", " "), " ".join(keywords), memory, chunk_text.get(chunk_id, "")])
            for title, keywords, memory, chunk_id in zip(
                memories.column("title").to_pylist(),
                memories.column("keywords").to_pylist(),
                self._memory_texts,
                self._chunk_ids,
                strict=True,
            )
        ]

    def _build_directory_index(self) -> DirectoryIndex:
        tree = self.reader.tree()
        nodes = [node for node in tree.iter_nodes() if node.path != "/"]
        paths = [node.path for node in nodes]
        subtree_chunks = [_subtree_indices(node) for node in nodes]
        if not nodes:
            return DirectoryIndex(paths, np.zeros((0, 0), dtype=np.float32), subtree_chunks, [])
        if self.embedder is None:
            raise ConfigError("tree search needs an embedding model; create the Retriever with an Embedder")
        texts = [self.readme_text(path) for path in paths]
        vectors = np.asarray(self.embedder.encode(texts), dtype=np.float32)
        return DirectoryIndex(paths, vectors, subtree_chunks, [frozenset(tokenize(text)) for text in texts])


class DirectoryIndex:
    """Every directory below the root: path, README vector and terms, memories of its subtree."""

    def __init__(
        self,
        paths: list[str],
        vectors: np.ndarray,
        subtree_chunks: list[list[int]],
        readme_terms: list[frozenset[str]],
    ) -> None:
        self.paths = paths
        self.vectors = vectors  # row j = README vector of paths[j]
        self.subtree_chunks = subtree_chunks
        self.readme_terms = readme_terms
        self.position = {path: j for j, path in enumerate(paths)}
        # faiss rather than numpy for ranking: single-threaded and steady (OpenBLAS gemv is not).
        self._faiss_index = faiss.IndexFlatIP(vectors.shape[1] if len(paths) else 1)
        if len(paths):
            self._faiss_index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def closest(self, query_vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Positions and cosines of the `k` READMEs closest to the query, best first."""
        if not self.paths:
            return []
        scores, positions = self._faiss_index.search(query_vector.reshape(1, -1), min(k, len(self.paths)))
        return [(int(j), float(score)) for j, score in zip(positions[0], scores[0], strict=True) if j >= 0]


class SentenceTable:
    """The stored sentences of every chunk, grouped by memory index, with their vectors."""

    def __init__(self, reader: StoreReader, num_chunks: int) -> None:
        table = reader.sentences()
        memory_index = table.column("index").to_numpy()
        self._rows = np.lexsort((table.column("sentence").to_numpy(), memory_index))
        self._starts = np.searchsorted(memory_index[self._rows], np.arange(num_chunks + 1))
        self._texts: list[str] = table.column("text").to_pylist()
        self._vectors = reader.sentence_vectors()

    def of(self, index: int) -> tuple[list[str], np.ndarray]:
        rows = self._rows[self._starts[index] : self._starts[index + 1]]
        return [self._texts[row] for row in rows], self._vectors[rows]


def _subtree_indices(node: DirectoryNode) -> list[int]:
    return sorted(index for descendant in node.iter_nodes() for index in descendant.chunk_indices)
