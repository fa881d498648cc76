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
  Then title links are followed (memory_bank.index.links): documents named by the query or by
  the best hits are lifted in (HotpotQA-100 R@5 0.815 -> 0.93, other corpora unchanged).
  Measured and left out, for no gain on all three dev sets (HotpotQA, FairytaleQA, QMSum):
  min-max BM25 over the candidates (the same ranking), cosine divided by the query's best
  (R@5 -1.0 / 0 / +2.2) or min-maxed over its top 50 (-0.5 / -1.0 / +1.1), and mixing each
  chunk's cosine half and half with its best sentence's (+0.5 / +0.2 / -0.2).
- tree: chunks (scored as in hybrid) and directory READMEs ranked together, RAPTOR's collapsed
  tree; a README that makes the cut brings its subtree's best chunks along
  (memory_bank.index.collapsed_tree).

A chunk hit carries the raw chunk text, not its memory (an extract of 30-50% of a long chunk):
within the same token budget the reader finds the answer string more often (FairytaleQA val
AR@2k 0.62 -> 0.80, HotpotQA-100 0.96 -> 0.97) and, on QMSum, twice the gold turns (ER@2k 0.10
-> 0.16). FairytaleQA's section-level evidence recall drops (ER@1k 0.94 -> 0.91) because fewer,
longer passages fit a budget.

Every query costs one embedding, one sparse BM25 pass and one faiss scan, plus a title scan of
the three best hits; nothing loops over all documents in Python.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, get_args

import faiss
import numpy as np

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ConfigError, StoreError, ToolError
from memory_bank.index.bm25 import LazyBm25Index, tokenize, top_positive
from memory_bank.index.collapsed_tree import collapsed_tree_search, readme_summary
from memory_bank.index.links import LinkGraph, follow_links, title_index_from_store
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
# Query vectors kept per retriever: a repeated query (a retry, a popular question, search and
# ask of the same text) skips the model, which is most of a query's cost.
QUERY_CACHE_SIZE = 256


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
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_lock = threading.Lock()
        self._directories: DirectoryIndex | None = None
        self._sentences: SentenceTable | None = None
        self._chunk_texts: list[str] | None = None
        self._links: LinkGraph | None = None

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
        return collapsed_tree_search(self, query, query_vector, k, pool=max(CANDIDATE_POOL, k))

    # --- building blocks (also used by the navigation agent) -----------------------------------

    def encode_query(self, query: str) -> np.ndarray:
        """The query's vector (read-only; the last QUERY_CACHE_SIZE distinct queries are cached)."""
        if self.embedder is None:
            raise ConfigError("this search needs an embedding model; create the Retriever with an Embedder")
        with self._query_lock:
            cached = self._query_vectors.get(query)
            if cached is not None:
                self._query_vectors.move_to_end(query)
                return cached
        vector = np.array(self.embedder.encode([query])[0], dtype=np.float32)
        vector.setflags(write=False)  # shared by every caller of the same query
        with self._query_lock:
            self._query_vectors[query] = vector
            if len(self._query_vectors) > QUERY_CACHE_SIZE:
                self._query_vectors.popitem(last=False)
        return vector

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
        links: bool = True,
    ) -> list[tuple[int, float]]:
        """Top `pool` BM25 and top `pool` vector candidates, re-scored by `hybrid_scores`, best
        first; with `links`, documents named by the query or the best hits are lifted in
        (memory_bank.index.links). Pass `bm25_scores` when the caller already has them."""
        if bm25_scores is None:
            bm25_scores = self.bm25_scores(query)
        candidates = sorted(
            {i for i, _ in top_positive(bm25_scores, pool)}
            | {i for i, _ in self.vector_candidates(query_vector, pool)}
        )
        scores = self.hybrid_scores(bm25_scores, query_vector, candidates)
        order = sorted(range(len(candidates)), key=lambda j: (-scores[j], candidates[j]))
        ranked = [(candidates[j], float(scores[j])) for j in order]
        if not links:
            return ranked
        return follow_links(
            ranked, query, self.link_graph(), lambda indices: self.hybrid_scores(bm25_scores, query_vector, indices)
        )

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

    def chunk_text(self, index: int) -> str:
        """The raw text of memory `index`'s chunk (the memory is an extract of it)."""
        with self._lock:
            if self._chunk_texts is None:
                self._chunk_texts = _texts_by_memory(self.reader, self._chunk_ids)
        return self._chunk_texts[index]

    def link_graph(self) -> LinkGraph:
        """Which documents each chunk names by title (built once; chunk links found on demand)."""
        with self._lock:
            if self._links is None:
                self._links = LinkGraph(title_index_from_store(self.reader), self._document_ids, self.chunk_text)
            return self._links

    def chunk_sentences(self, index: int) -> tuple[list[str], np.ndarray]:
        """The stored sentences of memory `index`'s chunk, in order, with their vectors."""
        with self._lock:
            if self._sentences is None:
                self._sentences = SentenceTable(self.reader, self.num_chunks)
        return self._sentences.of(index)

    def warm_up(self) -> None:
        """Load every index now (BM25, faiss, README vectors, sentences) and the embedding
        model, not on the first query."""
        self.bm25.get()
        if self.num_chunks:
            self._faiss()
            self.chunk_sentences(0)
        if self.embedder is not None:
            self.embedder.encode(["warm up"])  # loads the model and runs its first, slow pass
        if self.embedder is not None or self.reader.readmes() is not None:
            self.directories()
        self.link_graph()

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
            text=self.chunk_text(index),
        )

    def readme_hit(self, directory: str, score: float) -> SearchHit:
        """A README as a hit: `chunk_id` is its directory ("/a/b"), `source` its file, `text` its
        heading and description (collapsed_tree.readme_summary); no document."""
        readme_path = readme_relative_path(directory)
        return SearchHit(
            chunk_path=readme_path,
            chunk_id=directory,
            source=readme_path,
            document_id="",
            score=round(float(score), 6),
            text=readme_summary(self.readme_text(directory)),
            kind="readme",
        )

    # --- internals --------------------------------------------------------------------------

    def _faiss(self) -> faiss.Index:
        # One query at a time: OpenMP threads cost more to wake than they save (7 vs 16 ms at 100k).
        faiss.omp_set_num_threads(1)
        return self.reader.faiss_index()

    def _bm25_documents(self) -> list[str]:
        memories = self.reader.memories()
        return [
            "\n".join([title.replace("_", " "), " ".join(keywords), memory, self.chunk_text(index)])
            for index, (title, keywords, memory) in enumerate(
                zip(
                    memories.column("title").to_pylist(),
                    memories.column("keywords").to_pylist(),
                    self._memory_texts,
                    strict=True,
                )
            )
        ]

    def _build_directory_index(self) -> DirectoryIndex:
        tree = self.reader.tree()
        nodes = [node for node in tree.iter_nodes() if node.path != "/"]
        paths = [node.path for node in nodes]
        subtree_chunks = [_subtree_indices(node) for node in nodes]
        if not nodes:
            return DirectoryIndex(paths, np.zeros((0, 0), dtype=np.float32), subtree_chunks, [])
        texts, vectors = self._stored_readmes(paths)
        return DirectoryIndex(paths, vectors, subtree_chunks, [frozenset(tokenize(text)) for text in texts])

    def _stored_readmes(self, paths: list[str]) -> tuple[list[str], np.ndarray]:
        """README texts and vectors of `paths`: from `.bank/readmes.parquet`, written at ingest;
        a store written before that table existed gets its READMEs embedded here (minutes at 10k
        chunks, once per opened store)."""
        table = self.reader.readmes()
        if table is not None:
            row_of = {directory: row for row, directory in enumerate(table.column("directory").to_pylist())}
            missing = [path for path in paths if path not in row_of]
            if missing:
                raise StoreError(f"store {self.reader.root}: readmes.parquet lacks directories {missing[:5]}")
            rows = [row_of[path] for path in paths]
            all_texts = table.column("text").to_pylist()
            return [all_texts[row] for row in rows], self.reader.readme_vectors()[rows]
        if self.embedder is None:
            raise ConfigError("tree search needs an embedding model; create the Retriever with an Embedder")
        texts = [self.readme_text(path) for path in paths]
        return texts, np.asarray(self.embedder.encode(texts), dtype=np.float32)


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


def _texts_by_memory(reader: StoreReader, chunk_ids: list[str]) -> list[str]:
    """The raw text of each memory's chunk, in memory-index order."""
    chunks = reader.chunks()
    text_of = dict(zip(chunks.column("chunk_id").to_pylist(), chunks.column("text").to_pylist(), strict=True))
    return [text_of.get(chunk_id, "") for chunk_id in chunk_ids]


def _subtree_indices(node: DirectoryNode) -> list[int]:
    return sorted(index for descendant in node.iter_nodes() for index in descendant.chunk_indices)
