"""Search within part of a store: some of its documents, or one directory's subtree.

A person asking about one meeting, one story or one folder of notes wants the answer from it,
not the best match anywhere in the store: "Summarize the whole meeting" means nothing in a store
of 35 meetings unless the search knows which one (QMSum's general queries are asked of one
meeting's transcript). A scope makes every search mode behave as if the store held only that
part: candidates, the BM25 normalization (the best score in scope) and title links stay inside
it (BM25 term weights remain the whole store's).

- `documents` names documents as `remove` does (`store.sources.resolve_documents`): a source
  path as ingested, a file or folder path that resolves to it, or a document id.
- `directory` is a store directory ("/topic/sub", as `ls` shows): the memories filed below it.
- Both given: the memories that are in both.

READMEs (collapsed-tree mode): a directory's README belongs to the scope when most (more than
half) of the memories of its subtree are in scope. A README summarizes its whole subtree, so a
folder that holds the scoped meeting beside two others speaks mostly of the others and stays
out, while the meeting's own folder, or a folder of the meeting and one stray part of another,
speaks for the meeting. With a directory scope this admits the directory and everything below
it, and an ancestor only when the directory holds most of the ancestor's memories.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict

from memory_bank.errors import StoreError, ToolError
from memory_bank.store.sources import resolve_documents

if TYPE_CHECKING:
    from memory_bank.index.corpus import DirectoryIndex, StoreCorpus

# A README speaks for the scope when more than this share of its subtree's memories is in it.
README_SCOPE_SHARE = 0.5


class SearchScope(BaseModel):
    """The part of a store a search is restricted to (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    documents: tuple[str, ...] = ()
    directory: str | None = None

    @property
    def is_whole_store(self) -> bool:
        return not self.documents and self.directory in (None, "", "/")


def scope_filters(scope: SearchScope | None) -> tuple[list[str], str | None]:
    """A scope as the (within, under) pair `MemoryBank.search`, `request` and `research` take."""
    return ([], None) if scope is None else (list(scope.documents), scope.directory)


class ResolvedScope:
    """A scope resolved against one opened store: which memories and READMEs are in it."""

    def __init__(self, in_scope: np.ndarray) -> None:
        self.in_scope = in_scope  # bool per memory index
        self.members = np.flatnonzero(in_scope)  # memory indices in scope, ascending
        self._readmes: np.ndarray | None = None

    def contains(self, index: int) -> bool:
        return bool(self.in_scope[index])

    def bm25_scores(self, scores: np.ndarray) -> np.ndarray:
        """`scores` with every memory out of scope at 0 (no candidate, not the best match)."""
        return np.where(self.in_scope, scores, 0.0).astype(scores.dtype, copy=False)

    def readmes(self, directories: DirectoryIndex) -> np.ndarray:
        """bool per directory position: its README belongs to the scope."""
        if self._readmes is None:
            self._readmes = np.array(
                [
                    len(members) > 0
                    and self.in_scope[np.asarray(members)].mean() > README_SCOPE_SHARE
                    for members in directories.subtree_chunks
                ],
                dtype=bool,
            )
        return self._readmes

    def overview(self, directories: DirectoryIndex) -> int | None:
        """The directory position of the README that speaks for the whole scope: among the
        scope's READMEs, the one whose subtree holds most of its memories (ties: the smaller
        subtree, the more specific overview); None when no README belongs to the scope."""
        allowed = self.readmes(directories)
        best: tuple[int, int, int] | None = None  # (-members in scope, subtree size, position)
        for position in np.flatnonzero(allowed):
            members = np.asarray(directories.subtree_chunks[position])
            key = (-int(self.in_scope[members].sum()), len(members), int(position))
            best = key if best is None or key < best else best
        return None if best is None else best[2]


def resolve_scope(corpus: StoreCorpus, scope: SearchScope) -> ResolvedScope:
    """The memories of `corpus` in `scope`; ToolError when a name matches nothing stored."""
    in_scope = np.ones(corpus.num_chunks, dtype=bool)
    if scope.documents:
        source_of = dict(zip(corpus.document_ids, corpus.sources, strict=True))
        try:
            named = set(resolve_documents(source_of, scope.documents))
        except StoreError as exc:
            raise ToolError(f"search within documents: {exc}") from exc
        in_scope &= np.fromiter(
            (document_id in named for document_id in corpus.document_ids),
            dtype=bool,
            count=corpus.num_chunks,
        )
    directory = "/" + (scope.directory or "").strip("/")
    if directory != "/":
        if not any(node.path == directory for node in corpus.tree().iter_nodes()):
            raise ToolError(f"search within directory: no directory {directory!r} in this store")
        prefix = directory.lstrip("/") + "/"
        in_scope &= np.fromiter(
            (path.startswith(prefix) for path in corpus.paths), dtype=bool, count=corpus.num_chunks
        )
    return ResolvedScope(in_scope)
