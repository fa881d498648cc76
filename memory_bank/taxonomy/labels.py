"""Turn a cluster tree into a named, described `DirectoryNode` tree."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.clustering import ClusterNode
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.naming import (
    DESCRIPTION_TERMS,
    Theme,
    describe,
    describe_parent,
    distinct_terms,
    humanize,
    name_choice,
    name_from_terms,
    name_siblings,
)
from memory_bank.taxonomy.terms import (
    GroupTerms,
    RankedTerm,
    TermMatrix,
    group_membership,
    group_spread,
    rank_terms,
)


def child_path(parent_path: str, name: str) -> str:
    return f"{parent_path.rstrip('/')}/{name}"


def central_row(vectors: np.ndarray, rows: np.ndarray) -> int:
    """The row closest to the group's mean direction (ties: the first row)."""
    members = vectors[rows]
    return int(rows[int(np.argmax(members @ members.sum(axis=0)))])


def _leaves(node: ClusterNode) -> list[ClusterNode]:
    if not node.children:
        return [node]
    return [leaf for child in node.children for leaf in _leaves(child)]


class TreeLabeler:
    """Names and describes the directories of one planning call (one corpus or one group).

    Terms are scored among siblings, with a penalty for terms spread over most leaves of this
    call's tree (`GroupTerms.spread`); a parent's name may come from its subgroups' best terms,
    so every sibling set is ranked before any directory is named.
    """

    def __init__(
        self, items: Sequence[TaxonomyItem], vectors: np.ndarray, terms: TermMatrix
    ) -> None:
        self._items = items
        self._indices = np.array([item.index for item in items], dtype=np.int64)
        self._vectors = vectors
        self._terms = terms
        self._spread: np.ndarray | None = None
        # Each cluster node's best terms among its siblings, by id(): nodes are unhashable
        # dataclasses that live as long as the labeling call.
        self._rankings: dict[int, list[RankedTerm]] = {}

    @classmethod
    def for_items(cls, items: Sequence[TaxonomyItem], vectors: np.ndarray) -> TreeLabeler:
        terms = TermMatrix.build(
            [item.text for item in items],
            [item.title for item in items],
            [item.keywords for item in items],
        )
        return cls(items, vectors, terms)

    @property
    def terms(self) -> TermMatrix:
        return self._terms

    def central_tldr(self, rows: np.ndarray) -> str:
        return self._items[central_row(self._vectors, rows)].tldr

    def _rank(self, siblings: Sequence[np.ndarray]) -> list[list[RankedTerm]]:
        return rank_terms(GroupTerms.from_rows(self._terms, siblings, self._spread))

    def _spell(self, terms: Sequence[str]) -> list[str]:
        return [self._terms.spelling(term) for term in terms]

    def label_root(self, root: ClusterNode) -> DirectoryNode:
        """The tree of a whole corpus, rooted at "/", described by its top-level directories."""
        self._prepare(root)
        return self._label(root, "", "/", [], None)

    def label_group(self, root: ClusterNode, fallback_name: str) -> DirectoryNode:
        """The tree of one coarse group, rooted at "/<name>", named from its own terms alone
        (`assemble_tree` renames it among the other groups)."""
        self._prepare(root)
        # Alone, without siblings or spread: every leaf of the group shares the group's topic.
        ranked = rank_terms(GroupTerms.from_rows(self._terms, [root.rows]))[0]
        choice = name_choice(ranked, self.themes(root), self._terms.spelling)
        name = name_from_terms(choice.terms) or fallback_name
        return self._label(root, name, child_path("/", name), choice.terms, ranked)

    def themes(self, node: ClusterNode) -> list[Theme]:
        """(best term, size) of each subgroup of `node` that has a term."""
        return [
            (self._rankings[id(child)][0].term, len(child.rows))
            for child in node.children
            if self._rankings.get(id(child))
        ]

    def _prepare(self, root: ClusterNode) -> None:
        """Spread of every term over the leaves, then the ranking of every sibling set."""
        leaves = _leaves(root)
        leaf_counts = group_membership([leaf.rows for leaf in leaves], len(self._items))
        self._spread = group_spread(leaf_counts @ self._terms.presence)
        self._rankings = {}
        pending = [root]
        while pending:
            node = pending.pop()
            if node.children:
                rankings = self._rank([child.rows for child in node.children])
                self._rankings.update(zip(map(id, node.children), rankings, strict=True))
                pending.extend(node.children)

    def _label(
        self,
        node: ClusterNode,
        name: str,
        path: str,
        name_terms: Sequence[str],
        ranked: Sequence[RankedTerm] | None,
    ) -> DirectoryNode:
        """`name_terms` (display) are what `name` was made of; `ranked`, the node's own terms."""
        ranked = self._rankings.get(id(node), []) if ranked is None else ranked
        if not node.children:
            indices = np.sort(self._indices[node.rows]).tolist()
            shown = self._spell(distinct_terms([item.term for item in ranked], DESCRIPTION_TERMS))
            description = describe(shown, self.central_tldr(node.rows))
            return DirectoryNode(
                path=path, name=name, description=description, chunk_indices=indices
            )
        choices = [
            name_choice(
                self._rankings.get(id(child), []), self.themes(child), self._terms.spelling
            )
            for child in node.children
        ]
        names = name_siblings(choices)
        children = [
            self._label(child, child_name, child_path(path, child_name), choice.terms, None)
            for child, child_name, choice in zip(node.children, names, choices, strict=True)
        ]
        subdirectories = [
            (humanize(child.name), len(cluster.rows))
            for child, cluster in zip(children, node.children, strict=True)
        ]
        description = describe_parent(name_terms, subdirectories)
        return DirectoryNode(path=path, name=name, description=description, children=children)
