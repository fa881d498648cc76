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


def _leaves(root: ClusterNode) -> list[ClusterNode]:
    leaves: list[ClusterNode] = []
    pending = [root]
    while pending:
        node = pending.pop()
        if node.children:
            pending.extend(node.children)
        else:
            leaves.append(node)
    return leaves


class TreeLabeler:
    """Names and describes the directories of one planning call (one corpus or one group).

    Terms are scored among siblings, with a penalty for terms spread over most leaves of this
    call's tree (`GroupTerms.spread`). A parent may be named after its subgroups' best terms, so
    each sibling set is ranked one level before it is labeled, and its ranking handed down.
    """

    def __init__(
        self, items: Sequence[TaxonomyItem], vectors: np.ndarray, terms: TermMatrix
    ) -> None:
        self._items = items
        self._indices = np.array([item.index for item in items], dtype=np.int64)
        self._vectors = vectors
        self._terms = terms
        self._spread: np.ndarray | None = None

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

    def label_root(self, root: ClusterNode) -> DirectoryNode:
        """The tree of a whole corpus, rooted at "/", described by its top-level directories."""
        self._spread = self._leaf_spread(root)
        return self._label(root, "", "/", [], [], self._rank_children(root))

    def label_group(
        self, root: ClusterNode, fallback_name: str
    ) -> tuple[DirectoryNode, list[Theme]]:
        """The tree of one coarse group, rooted at "/<name>" and named from its own terms alone
        (`assemble_tree` renames it among the other groups), and the group's themes: (best term,
        size) of each of its subdirectories."""
        self._spread = self._leaf_spread(root)
        # Alone, without siblings or spread: every leaf of the group shares the group's topic.
        ranked = rank_terms(GroupTerms.from_rows(self._terms, [root.rows]))[0]
        child_rankings = self._rank_children(root)
        themes = _themes(root, child_rankings)
        choice = name_choice(ranked, themes, self._terms.spelling)
        name = name_from_terms(choice.terms) or fallback_name
        node = self._label(root, name, child_path("/", name), choice.terms, ranked, child_rankings)
        return node, themes

    def _leaf_spread(self, root: ClusterNode) -> np.ndarray | None:
        leaves = _leaves(root)
        leaf_counts = group_membership([leaf.rows for leaf in leaves], len(self._items))
        return group_spread(leaf_counts @ self._terms.presence)

    def _rank_children(self, node: ClusterNode) -> list[list[RankedTerm]]:
        """Best terms of each child of `node` among its siblings (none for a leaf)."""
        if not node.children:
            return []
        siblings = [child.rows for child in node.children]
        return rank_terms(GroupTerms.from_rows(self._terms, siblings, self._spread))

    def _spell(self, terms: Sequence[str]) -> list[str]:
        return [self._terms.spelling(term) for term in terms]

    def _label(
        self,
        node: ClusterNode,
        name: str,
        path: str,
        name_terms: Sequence[str],
        ranked: Sequence[RankedTerm],
        child_rankings: Sequence[Sequence[RankedTerm]],
    ) -> DirectoryNode:
        """`name_terms` (display) are what `name` was made of, `ranked` the node's best terms
        among its siblings and `child_rankings` those of its children among each other."""
        if not node.children:
            indices = np.sort(self._indices[node.rows]).tolist()
            shown = self._spell(distinct_terms([item.term for item in ranked], DESCRIPTION_TERMS))
            description = describe(shown, self.central_tldr(node.rows))
            return DirectoryNode(
                path=path, name=name, description=description, chunk_indices=indices
            )
        grandchild_rankings = [
            self._rank_children(child) if child.children else [] for child in node.children
        ]
        choices = [
            name_choice(
                child_ranked,
                _themes(child, rankings) if rankings else [],
                self._terms.spelling,
            )
            for child, child_ranked, rankings in zip(
                node.children, child_rankings, grandchild_rankings, strict=True
            )
        ]
        names = name_siblings(choices)
        children = [
            self._label(
                child, child_name, child_path(path, child_name), choice.terms, ranked, rankings
            )
            for child, child_name, choice, ranked, rankings in zip(
                node.children, names, choices, child_rankings, grandchild_rankings, strict=True
            )
        ]
        subdirectories = [
            (humanize(child.name), len(cluster.rows))
            for child, cluster in zip(children, node.children, strict=True)
        ]
        description = describe_parent(name_terms, subdirectories)
        return DirectoryNode(path=path, name=name, description=description, children=children)


def _themes(node: ClusterNode, child_rankings: Sequence[Sequence[RankedTerm]]) -> list[Theme]:
    """(best term, size) of each child of `node` that has a term."""
    return [
        (ranked[0].term, len(child.rows))
        for child, ranked in zip(node.children, child_rankings, strict=True)
        if ranked
    ]
