"""Turn a cluster tree into a named, described `DirectoryNode` tree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.clustering import ClusterNode
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.naming import describe, name_siblings
from memory_bank.taxonomy.terms import GroupTerms, TermMatrix, rank_terms


def child_path(parent_path: str, name: str) -> str:
    return f"{parent_path.rstrip('/')}/{name}"


def central_row(vectors: np.ndarray, rows: np.ndarray) -> int:
    """The row closest to the group's mean direction (ties: the first row)."""
    members = vectors[rows]
    return int(rows[int(np.argmax(members @ members.sum(axis=0)))])


class TreeLabeler:
    """Names and describes the directories of one planning call (one corpus or one group)."""

    def __init__(
        self, items: Sequence[TaxonomyItem], vectors: np.ndarray, terms: TermMatrix
    ) -> None:
        self._items = items
        self._vectors = vectors
        self._terms = terms

    @classmethod
    def for_items(cls, items: Sequence[TaxonomyItem], vectors: np.ndarray) -> TreeLabeler:
        terms = TermMatrix.build(
            [item.text for item in items], [item.curated_terms() for item in items]
        )
        return cls(items, vectors, terms)

    @property
    def terms(self) -> TermMatrix:
        return self._terms

    def central_tldr(self, rows: np.ndarray) -> str:
        return self._items[central_row(self._vectors, rows)].tldr

    def rank(self, groups: Sequence[np.ndarray]) -> list[list[str]]:
        return rank_terms(GroupTerms.from_rows(self._terms, groups))

    def description(self, ranked: Sequence[str], rows: np.ndarray) -> str:
        shown = [self._terms.spelling(term) for term in ranked]
        return describe(shown, self.central_tldr(rows))

    def label(self, root: ClusterNode, *, name: str, path: str) -> DirectoryNode:
        """The DirectoryNode tree of `root`, which is called `name` and lives at `path`."""
        ranked = self.rank([root.rows])[0]
        return self._label(root, name, path, self.description(ranked, root.rows))

    def _label(self, node: ClusterNode, name: str, path: str, description: str) -> DirectoryNode:
        if not node.children:
            indices = sorted(self._items[row].index for row in node.rows)
            return DirectoryNode(
                path=path, name=name, description=description, chunk_indices=indices
            )
        # Names are distinctive among siblings: c-TF-IDF over exactly this set of children.
        rankings = self.rank([child.rows for child in node.children])
        names = name_siblings(rankings)
        children = [
            self._label(
                child,
                child_name,
                child_path(path, child_name),
                self.description(ranked, child.rows),
            )
            for child, child_name, ranked in zip(node.children, names, rankings, strict=True)
        ]
        return DirectoryNode(path=path, name=name, description=description, children=children)
