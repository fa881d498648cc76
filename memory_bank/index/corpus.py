"""`StoreCorpus`: what search and navigation read from one opened store, loaded once.

Per memory (row i = memory index i): chunk id, document id, source, chunk file path, memory text
and raw chunk text; the BM25 index (persisted, `bm25.py`), the faiss index, the stored sentences
with their vectors, the title-link graph (`links.py`) and, per directory, the README vector,
terms, subtree members and how many of them hold each README term. Everything loads lazily and
is kept for the reader's lifetime.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import faiss
import numpy as np

from memory_bank.errors import StoreError
from memory_bank.index.bm25 import BM25_RECIPE, LazyBm25Index
from memory_bank.index.links import LinkGraph, title_index_from_store
from memory_bank.schemas import DirectoryNode, SearchHit
from memory_bank.store.files import readme_relative_path
from memory_bank.store.layout import BANK_DIR
from memory_bank.taxonomy.summary import index_text, subtree_mean_vectors
from memory_bank.text.lexicon import search_tokens

if TYPE_CHECKING:
    from memory_bank.store.reader import StoreReader


@contextmanager
def faiss_threads(count: int) -> Iterator[None]:
    """faiss on `count` OpenMP threads for the block, the previous setting restored after."""
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


class StoreCorpus:
    """The memories, indexes and directories of one opened store (see the module docstring)."""

    def __init__(self, reader: StoreReader) -> None:
        self.reader = reader
        self.bm25 = LazyBm25Index(
            reader.root / BANK_DIR, reader.store_version, self._bm25_documents, BM25_RECIPE
        )
        memories = reader.memories()
        self.num_chunks = memories.num_rows
        self.chunk_ids: list[str] = memories.column("chunk_id").to_pylist()
        self.document_ids: list[str] = memories.column("document_id").to_pylist()
        self.sources: list[str] = memories.column("source").to_pylist()
        self.paths: list[str] = memories.column("path").to_pylist()
        self._memory_texts: list[str] = memories.column("memory").to_pylist()
        self._index_of_path = {path: index for index, path in enumerate(self.paths)}
        self._lock = threading.Lock()
        self._directories: DirectoryIndex | None = None
        self._sentences: SentenceTable | None = None
        self._chunk_texts: list[str] | None = None
        self._links: LinkGraph | None = None

    @property
    def store_version(self) -> str:
        return self.reader.store_version

    def memory_vectors(self) -> np.ndarray:
        return self.reader.memory_vectors()

    def faiss_index(self) -> faiss.Index:
        return self.reader.faiss_index()

    def tree(self) -> DirectoryNode:
        return self.reader.tree()

    def directories(self) -> DirectoryIndex:
        """README vectors and subtree members of every directory below the root (built once)."""
        with self._lock:
            if self._directories is None:
                self._directories = self._build_directory_index()
            return self._directories

    def readme_text(self, directory: str) -> str:
        return self.reader.path(readme_relative_path(directory)).read_text(encoding="utf-8")

    def chunk_path(self, index: int) -> str:
        return self.paths[index]

    def chunk_text(self, index: int) -> str:
        """The raw text of memory `index`'s chunk (the memory is an extract of it)."""
        with self._lock:
            if self._chunk_texts is None:
                self._chunk_texts = _texts_by_memory(self.reader, self.chunk_ids)
        return self._chunk_texts[index]

    def link_graph(self) -> LinkGraph:
        """Which documents each chunk names by title (built once; chunk links found on demand)."""
        with self._lock:
            if self._links is None:
                titles = title_index_from_store(self.reader)
                self._links = LinkGraph(titles, self.document_ids, self.chunk_text)
            return self._links

    def chunk_sentences(self, index: int) -> tuple[list[str], np.ndarray]:
        """The stored sentences of memory `index`'s chunk, in order, with their vectors."""
        with self._lock:
            if self._sentences is None:
                self._sentences = SentenceTable(self.reader, self.num_chunks)
        return self._sentences.of(index)

    def index_of_path(self, chunk_path: str) -> int | None:
        """Memory index of a store-relative chunk file path, None for any other file."""
        return self._index_of_path.get(chunk_path)

    def warm_up(self) -> None:
        """Load every index now (BM25, faiss, README vectors, sentences, title links)."""
        self.bm25.get()
        if self.num_chunks:
            self.faiss_index()
            self.chunk_sentences(0)
        self.directories()
        self.link_graph()

    def chunk_hit(self, index: int, score: float) -> SearchHit:
        return SearchHit(
            chunk_path=self.paths[index],
            chunk_id=self.chunk_ids[index],
            source=self.sources[index],
            document_id=self.document_ids[index],
            score=round(float(score), 6),
            text=self.chunk_text(index),
        )

    def readme_hit(self, directory: str, score: float) -> SearchHit:
        """A README as a hit: `chunk_id` is its directory ("/a/b"), `source` its file, `text` its
        heading and summary (`readme_summary`); no document."""
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
        terms = [frozenset(search_tokens(text)) for text in texts]

        def count_term_holders() -> list[dict[str, int]]:
            memories = self.reader.memories()
            words = [
                frozenset(search_tokens(index_text(title, keywords, memory)))
                for title, keywords, memory in zip(
                    memories.column("title").to_pylist(),
                    memories.column("keywords").to_pylist(),
                    self._memory_texts,
                    strict=True,
                )
            ]
            holders = _term_holders(tree, words, dict(zip(paths, terms, strict=True)))
            return [holders[path] for path in paths]

        return DirectoryIndex(paths, vectors, subtree_chunks, terms, count_term_holders)

    def _stored_readmes(self, paths: list[str]) -> tuple[list[str], np.ndarray]:
        """README texts and vectors of `paths`: from `.bank/readmes.parquet`, written at ingest;
        a store written before that table existed gets its vectors as a commit makes them, from
        its memory vectors (`subtree_mean_vectors`)."""
        table = self.reader.readmes()
        if table is not None:
            directories = table.column("directory").to_pylist()
            row_of = {directory: row for row, directory in enumerate(directories)}
            missing = [path for path in paths if path not in row_of]
            if missing:
                raise StoreError(
                    f"store {self.reader.root}: readmes.parquet lacks directories {missing[:5]}"
                )
            rows = [row_of[path] for path in paths]
            all_texts = table.column("text").to_pylist()
            return [all_texts[row] for row in rows], self.reader.readme_vectors()[rows]
        vectors = subtree_mean_vectors(self.reader.tree(), self.memory_vectors())
        texts = [self.readme_text(path) for path in paths]
        return texts, np.stack([vectors[path] for path in paths])


class DirectoryIndex:
    """Every directory below the root: path, README vector and terms, memories of its subtree,
    and how many of them hold each README term."""

    def __init__(
        self,
        paths: list[str],
        vectors: np.ndarray,
        subtree_chunks: list[list[int]],
        readme_terms: list[frozenset[str]],
        count_term_holders: Callable[[], list[dict[str, int]]] | None = None,
    ) -> None:
        """`count_term_holders()` gives `term_holders` on first use (only the descent reads
        them, and counting reads every memory: a cost a store opened for other searches should
        not pay); None: every term held by one memory."""
        self.paths = paths
        self.vectors = vectors  # row j = README vector of paths[j]
        self.subtree_chunks = subtree_chunks
        self.readme_terms = readme_terms
        self._count_term_holders = count_term_holders or (lambda: [{} for _ in paths])
        self.position = {path: j for j, path in enumerate(paths)}
        # faiss rather than numpy for ranking: single-threaded and steady (OpenBLAS gemv is not).
        self._faiss_index = faiss.IndexFlatIP(vectors.shape[1] if len(paths) else 1)
        if len(paths):
            self._faiss_index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    @functools.cached_property
    def term_holders(self) -> list[dict[str, int]]:
        """Per directory j: README term of paths[j] -> the memories of its subtree whose index
        text (`taxonomy.summary.index_text`) holds it. Counted twice at worst when two threads
        ask first at once, never wrong."""
        return self._count_term_holders()

    def closest(
        self, query_vector: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """Positions and cosines of the `k` READMEs closest to the query, best first; with
        `allowed` (bool per position), only those (exact cosines: a scope holds few)."""
        if not self.paths:
            return []
        if allowed is not None:
            positions = np.flatnonzero(allowed)
            cosines = self.vectors[positions] @ query_vector
            order = np.lexsort((positions, -cosines))[:k]
            return [(int(positions[j]), float(cosines[j])) for j in order]
        with faiss_threads(1):
            scores, positions = self._faiss_index.search(
                query_vector.reshape(1, -1), min(k, len(self.paths))
            )
        return [
            (int(j), float(score))
            for j, score in zip(positions[0], scores[0], strict=True)
            if j >= 0
        ]


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


def readme_summary(text: str) -> str:
    """A README's heading and its opening paragraph: the summary (or, in a README without one,
    the description), not what follows it (what the directory holds, key terms, contents)."""
    lines = text.strip().splitlines()
    heading = lines[0] if lines and lines[0].startswith("# ") else ""
    body = "\n".join(lines[1:] if heading else lines).strip()
    opening = body.split("\n\n", 1)[0].strip() if not body.startswith("## ") else ""
    summary = "\n\n".join(part for part in (heading, opening) if part)
    return summary or text.strip()


def _texts_by_memory(reader: StoreReader, chunk_ids: list[str]) -> list[str]:
    """The raw text of each memory's chunk, in memory-index order."""
    chunks = reader.chunks()
    text_of = dict(
        zip(chunks.column("chunk_id").to_pylist(), chunks.column("text").to_pylist(), strict=True)
    )
    return [text_of.get(chunk_id, "") for chunk_id in chunk_ids]


def _term_holders(
    tree: DirectoryNode, words: list[frozenset[str]], readme_terms: dict[str, frozenset[str]]
) -> dict[str, dict[str, int]]:
    """Per directory below the root, its README terms (`readme_terms[path]`) -> how many memories
    of its subtree hold each (`words[index]`: memory index's words). Counted once per store
    open, leaves up, so a query never reads a memory; only a directory's children's counts are
    kept whole while it is counted."""
    found: dict[str, dict[str, int]] = {}

    def visit(node: DirectoryNode) -> Counter[str]:
        counts: Counter[str] = Counter()
        for index in node.chunk_indices:
            counts.update(words[index])
        for child in node.children:
            counts.update(visit(child))
        kept = readme_terms.get(node.path)
        if kept is not None:
            found[node.path] = {term: counts[term] for term in kept if counts[term]}
        return counts

    visit(tree)
    return found


def _subtree_indices(node: DirectoryNode) -> list[int]:
    return sorted(index for descendant in node.iter_nodes() for index in descendant.chunk_indices)
