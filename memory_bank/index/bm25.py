"""BM25 over the store's memories: tokenizer, a bm25s index, and its lazy on-disk cache.

Documents and queries are indexed as Snowball stems of `search_tokens` (PyStemmer, the stemmer
bm25s takes), so "studies" finds "studied" and "studying": stems raised recall on every
development set, BM25 alone most. Indexing each word and, when different, its stem as well was
worse than stems alone: it lengthens documents with inflected words and counts an exact match
twice (docs/benchmarks.md, "Measurements behind the code").

bm25s keeps the BM25 weights as a sparse term x document matrix, so scoring a query costs a few
sparse-row sums instead of a Python loop over every document (rank-bm25), which stays fast on
stores of 100k chunks. Its `save` writes plain `.npy` arrays (allow_pickle=False) and
JSON, never pickle.

The index is persisted under `.bank/bm25/<store_version>/` with a stamp; a store that cannot be
written (a read-only Serve replica) keeps the index in memory only.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import bm25s
import numpy as np

from memory_bank.text.lexicon import DEFAULT_LANGUAGE, query_stems, stems_and_language

logger = logging.getLogger(__name__)

# Bump when tokenization or the on-disk layout changes: older persisted indexes get rebuilt.
INDEX_FORMAT = 4  # 4: CJK words, stems in the text's language
# What each memory's BM25 document is made of (`index.corpus`); part of the persisted stamp.
BM25_RECIPE = "title+keywords+memory+chunk"
_STAMP_FILE = "stamp.json"
_LANGUAGES_FILE = "languages.json"


class Bm25Index:
    """A BM25 index over a fixed list of documents; document i is row i of the store."""

    def __init__(
        self,
        model: bm25s.BM25 | None,
        num_docs: int,
        languages: Sequence[str] = (DEFAULT_LANGUAGE,),
    ) -> None:
        self._model = model  # None for an empty corpus (bm25s cannot index zero documents)
        self.num_docs = num_docs
        # The languages the documents were stemmed in: queries are stemmed in each of them.
        self.languages = tuple(sorted(set(languages)))

    @classmethod
    def build(cls, documents: Sequence[str]) -> Bm25Index:
        if not documents:
            return cls(None, 0)
        stemmed = [stems_and_language(text) for text in documents]
        model = bm25s.BM25()
        model.index([stems for stems, _ in stemmed], show_progress=False)
        return cls(model, len(documents), {language for _, language in stemmed})

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for `query` (float32, zeros when no query term is known)."""
        if self._model is None:
            return np.zeros(0, dtype=np.float32)
        token_ids = self._model.get_tokens_ids(query_stems(query, self.languages))
        if not token_ids:
            return np.zeros(self.num_docs, dtype=np.float32)
        return np.asarray(self._model.get_scores_from_ids(token_ids), dtype=np.float32)

    def top_k(self, query: str, k: int) -> list[tuple[int, float]]:
        """The best `k` documents with a positive score, best first (ties by document number)."""
        return top_positive(self.scores(query), k)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        if self._model is not None:
            self._model.save(str(directory), allow_pickle=False, show_progress=False)
        (directory / _LANGUAGES_FILE).write_text(json.dumps(self.languages), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, num_docs: int) -> Bm25Index:
        if num_docs == 0:
            return cls(None, 0)
        model = bm25s.BM25.load(str(directory), allow_pickle=False, load_corpus=False)
        languages = json.loads((directory / _LANGUAGES_FILE).read_text(encoding="utf-8"))
        return cls(model, num_docs, languages)


def top_positive(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices and values of the `k` largest positive scores, best first, ties by index."""
    if k <= 0 or scores.size == 0:
        return []
    k = min(k, scores.size)
    candidates = np.argpartition(-scores, k - 1)[:k]
    # lexsort's last key is the primary one: score descending, then index ascending.
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [(int(i), float(scores[i])) for i in ordered if scores[i] > 0]


class LazyBm25Index:
    """The BM25 index of one store version: loaded from disk if persisted, else built once.

    `builds` and `loads` count how the index was obtained in this object's lifetime, so callers
    (and tests) can tell a fresh build from a reuse.
    """

    def __init__(
        self,
        bank_dir: Path,
        store_version: str,
        documents: Callable[[], Sequence[str]],
        recipe: str,
    ) -> None:
        """`documents` yields the indexed text of each memory, in memory-index order; `recipe`
        names what goes into that text, so changing it invalidates persisted indexes."""
        self._root = bank_dir / "bm25"
        self._store_version = store_version
        self._documents = documents
        self._stamp = {"format": INDEX_FORMAT, "store_version": store_version, "recipe": recipe}
        self._index: Bm25Index | None = None
        self._lock = threading.Lock()
        self.builds = 0
        self.loads = 0
        self.last_load: Literal["built", "loaded"] | None = None

    def get(self) -> Bm25Index:
        with self._lock:
            if self._index is None:
                self._index = self._load() or self._build()
            return self._index

    @property
    def directory(self) -> Path:
        return self._root / _directory_name(self._store_version)

    def _load(self) -> Bm25Index | None:
        stamp_path = self.directory / _STAMP_FILE
        try:
            stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if {key: stamp.get(key) for key in self._stamp} != self._stamp:
            return None
        try:
            index = Bm25Index.load(self.directory, int(stamp["num_docs"]))
        except (OSError, ValueError, KeyError) as exc:
            logger.warning(
                "BM25 index in %s is unreadable (%s); rebuilding it", self.directory, exc
            )
            return None
        self.loads += 1
        self.last_load = "loaded"
        return index

    def _build(self) -> Bm25Index:
        index = Bm25Index.build(self._documents())
        self.builds += 1
        self.last_load = "built"
        try:
            self._persist(index)
        except OSError as exc:
            logger.warning(
                "cannot persist the BM25 index under %s (%s); keeping it in memory", self._root, exc
            )
        return index

    def _persist(self, index: Bm25Index) -> None:
        # Written to a temp dir and renamed into place, so a reader never sees a partial index.
        self._root.mkdir(parents=True, exist_ok=True)
        temp_dir = self._root / f".tmp-{uuid.uuid4().hex}"
        try:
            index.save(temp_dir)
            stamp = {**self._stamp, "num_docs": index.num_docs}
            (temp_dir / _STAMP_FILE).write_text(json.dumps(stamp), encoding="utf-8")
            if self.directory.exists():  # a stale or concurrent copy of this version
                shutil.rmtree(self.directory, ignore_errors=True)
            temp_dir.rename(self.directory)
        finally:
            if temp_dir.exists():
                shutil.rmtree(temp_dir, ignore_errors=True)
        self._remove_other_versions()

    def _remove_other_versions(self) -> None:
        for entry in self._root.iterdir():
            if (
                entry.is_dir()
                and entry.name != self.directory.name
                and not entry.name.startswith(".tmp-")
            ):
                shutil.rmtree(entry, ignore_errors=True)


def _directory_name(store_version: str) -> str:
    """A filesystem-safe directory name for a store version (the stamp holds the exact value)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", store_version)[:80].lstrip(".")
    return name or "unversioned"
