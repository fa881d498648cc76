"""`QueryGraph`: the semantic memory graph (seed 002 §3.2): nodes in a dict, undirected edges as
adjacency maps on the nodes (no graph library), conflicts beside them, and hybrid retrieval.

Retrieval (seed 002 §6.1): alpha * BM25 / best BM25 + (1 - alpha) * cosine over the current
nodes, the top k, then their one-hop neighbours, newest first. BM25 is kept incrementally
(`TermIndex`: postings per stem), the vectors in one growing matrix, so a node added, updated
or retired costs no rebuild and a query scores only the nodes sharing a term plus one matrix
product.

Every change marks what it touched; `take_changes()` hands the touched records to the
checkpoint (`persist.py`) and forgets them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memory_bank.graph.model import Conflict, GraphNode, HistoryEntry, Relation
from memory_bank.graph.term_index import TermIndex
from memory_bank.text.lexicon import stemmed_search_tokens

DIMENSIONS = 384


def compose_embedding(summary_vector: np.ndarray, context_vector: np.ndarray | None) -> np.ndarray:
    """A node's vector from its summary's and its context+keywords' vectors (seed 001 §3.1.4:
    recomputed from summary, context and keywords). Summed rather than embedded as one text:
    the model reads 256 word-pieces, so context and keywords after a long summary would be
    cut off."""
    vector = np.asarray(summary_vector, dtype=np.float32).copy()
    if context_vector is not None:
        vector = vector + np.asarray(context_vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def node_terms(node: GraphNode) -> list[str]:
    """What BM25 indexes of a node: its summary, context and keywords."""
    return stemmed_search_tokens(f"{node.summary} {node.context} {' '.join(node.keywords)}")


def query_terms(node: GraphNode) -> list[str]:
    """What a node asks BM25 for when it looks for candidates: its keywords and context
    (seed 002 §6.1: `query_keywords`), not every word of its summary."""
    return stemmed_search_tokens(f"{node.context} {' '.join(node.keywords)}")


@dataclass
class Changes:
    """Records touched since the last checkpoint (ids only; the records are read at take)."""

    nodes: set[str] = field(default_factory=set)
    deleted_nodes: set[str] = field(default_factory=set)
    conflicts: set[str] = field(default_factory=set)


class QueryGraph:
    """Nodes, edges, conflicts and hybrid retrieval (see the module docstring)."""

    def __init__(self, alpha: float = 0.5) -> None:
        self.alpha = alpha
        self.nodes: dict[str, GraphNode] = {}
        self.conflicts: dict[str, Conflict] = {}
        self._conflicts_of: dict[str, set[str]] = {}
        self.changes = Changes()
        # retrieval state over current nodes
        self._rows: dict[str, int] = {}
        self._ids: list[str] = []
        self._matrix = np.zeros((0, DIMENSIONS), dtype=np.float32)
        self._lexical = TermIndex()

    # --- reading ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._ids)

    def conflicts_of(self, node_id: str) -> list[Conflict]:
        return [self.conflicts[c] for c in sorted(self._conflicts_of.get(node_id, ()))]

    def edges(self) -> list[tuple[str, str, Relation]]:
        """Every edge once, (smaller id, larger id, relation), sorted."""
        found = {
            (min(a, b), max(a, b), relation)
            for a, node in self.nodes.items()
            for b, relation in node.links.items()
        }
        return sorted(found)

    # --- changing nodes ---------------------------------------------------------------------

    def add_node(self, node: GraphNode) -> None:
        if node.id in self.nodes:
            raise ValueError(f"node {node.id!r} is already in the graph")
        self.nodes[node.id] = node
        if node.is_current:
            self._index(node)
        self.changes.nodes.add(node.id)

    def put_node(self, node: GraphNode, terms: Sequence[str] | None = None) -> None:
        """Insert or replace a node record as it is (loading, applying a checkpoint); `terms`:
        its `node_terms` as stored beside it, so that loading a graph does not tokenize every
        node again (None: derived from its text)."""
        if node.id in self.nodes:
            self._unindex(node.id)
        self.nodes[node.id] = node
        if node.is_current:
            self._index(node, terms)

    def delete_node(self, node_id: str) -> None:
        """Remove a node, its edges and its conflicts (its memory left the store)."""
        node = self.nodes.pop(node_id, None)
        if node is None:
            return
        self._unindex(node_id)
        for other in node.links:
            neighbour = self.nodes.get(other)
            if neighbour is not None and neighbour.links.pop(node_id, None) is not None:
                self.changes.nodes.add(other)
        for conflict_id in list(self._conflicts_of.get(node_id, ())):
            if conflict_id in self.conflicts:
                self.forget_conflict(conflict_id)
                self.changes.conflicts.add(conflict_id)
        self._conflicts_of.pop(node_id, None)
        self.changes.nodes.discard(node_id)
        self.changes.deleted_nodes.add(node_id)

    def retire(self, node_id: str, status: str, superseded_by: str, at: float, detail: str) -> None:
        """Take a node out of retrieval and the edges, keeping its record (merged/superseded)."""
        node = self.nodes[node_id]
        for other in list(node.links):
            self.remove_edge(node_id, other)
        self._unindex(node_id)
        node.status = status  # type: ignore[assignment]
        node.superseded_by = superseded_by
        node.history.append(
            HistoryEntry(
                at=at,
                event=status,
                summary=node.summary,
                context=node.context,
                detail=detail,
                node_id=node_id,
            )
        )
        self.changes.nodes.add(node_id)

    def update_context(
        self,
        node_id: str,
        context: str,
        keywords: Sequence[str],
        context_vector: np.ndarray | None,
        at: float,
    ) -> None:
        """New context and keywords for a node. A new context recomputes its vector from its
        summary's and `context_vector` (of the context with its keywords; seed 001 §3.1.4);
        keywords alone keep it (see `batch.refresh_contexts`)."""
        node = self.nodes[node_id]
        if node.context == context and list(node.keywords) == list(keywords):
            return
        if node.context != context:
            node.embedding = compose_embedding(node.summary_vector, context_vector)
        node.history.append(
            HistoryEntry(
                at=at,
                event="context updated",
                context=node.context,
                detail=", ".join(node.keywords),
            )
        )
        _cap_context_history(node)
        self._unindex(node_id)
        node.context = context
        node.keywords = list(keywords)
        if node.is_current:
            self._index(node)
        self.changes.nodes.add(node_id)

    def touch(self, node_id: str) -> None:
        self.changes.nodes.add(node_id)

    # --- edges ------------------------------------------------------------------------------

    def add_edge(self, first: str, second: str, relation: Relation = "related") -> bool:
        """Link two current nodes (undirected); False when either is missing or they are one."""
        a, b = self.nodes.get(first), self.nodes.get(second)
        if a is None or b is None or first == second or not (a.is_current and b.is_current):
            return False
        if a.links.get(second) == relation:
            return False
        a.links[second] = relation
        b.links[first] = relation
        self.changes.nodes.update((first, second))
        return True

    def remove_edge(self, first: str, second: str) -> None:
        for one, other in ((first, second), (second, first)):
            node = self.nodes.get(one)
            if node is not None and node.links.pop(other, None) is not None:
                self.changes.nodes.add(one)

    # --- conflicts --------------------------------------------------------------------------

    def add_conflict(self, conflict: Conflict) -> None:
        self.put_conflict(conflict)
        self.changes.conflicts.add(conflict.id)

    def put_conflict(self, conflict: Conflict) -> None:
        self.conflicts[conflict.id] = conflict
        for node_id in (conflict.older, conflict.newer):
            self._conflicts_of.setdefault(node_id, set()).add(conflict.id)

    def resolve_conflict(
        self, conflict_id: str, current: str, at: float, resolution: str
    ) -> Conflict:
        conflict = self.conflicts[conflict_id]
        conflict.status = "resolved"
        conflict.current = current
        conflict.resolved_at = at
        conflict.resolution = resolution
        self.changes.conflicts.add(conflict_id)
        return conflict

    def conflict_between(self, first: str, second: str) -> Conflict | None:
        shared = self._conflicts_of.get(first, set()) & self._conflicts_of.get(second, set())
        return self.conflicts[min(shared)] if shared else None

    def forget_conflict(self, conflict_id: str) -> None:
        """Remove a conflict record (applying a checkpoint that deleted it)."""
        conflict = self.conflicts.pop(conflict_id, None)
        if conflict is not None:
            for node_id in (conflict.older, conflict.newer):
                self._conflicts_of.get(node_id, set()).discard(conflict_id)

    # --- retrieval --------------------------------------------------------------------------

    def score_array(self, query_vector: np.ndarray, query_terms: Sequence[str]) -> np.ndarray:
        """Hybrid score of every current node, row i = `self._ids[i]` (seed 002 §6.1)."""
        count = len(self._ids)
        if not count:
            return np.zeros(0, dtype=np.float32)
        alpha = self.alpha
        scores = (1 - alpha) * (self._matrix[:count] @ np.asarray(query_vector, dtype=np.float32))
        lexical = self._lexical.scores(query_terms, count)
        best = float(lexical.max())
        if best > 0:
            # In float32 before adding, as a per-node `scores[row] += value` would round it.
            scores += (alpha * lexical / best).astype(np.float32)
        return scores

    def top_k(
        self,
        query_vector: np.ndarray,
        query_terms: Sequence[str],
        k: int,
        exclude: Iterable[str] = (),
    ) -> list[tuple[str, float]]:
        """The `k` best current nodes not in `exclude`, best first (ties by id)."""
        scores = self.score_array(query_vector, query_terms)
        if not len(scores) or k <= 0:
            return []
        excluded = [self._rows[i] for i in set(exclude) if i in self._rows]
        if excluded:
            scores[excluded] = -np.inf
        take = min(k + 8, len(scores))  # a few more, so ties are broken by id as documented
        rows = np.argpartition(-scores, take - 1)[:take]
        ranked = sorted(
            ((self._ids[r], float(scores[r])) for r in rows if np.isfinite(scores[r])),
            key=lambda item: (-item[1], item[0]),
        )
        return ranked[:k]

    def retrieve(
        self,
        query_vector: np.ndarray,
        query_terms: Sequence[str],
        k: int,
        exclude: Iterable[str] = (),
    ) -> list[GraphNode]:
        """The top `k` current nodes and their one-hop neighbours, newest first (seed 002
        §6.1), none of `exclude` (a merged node's inherited neighbours, the node itself)."""
        excluded = set(exclude)
        found = [node_id for node_id, _ in self.top_k(query_vector, query_terms, k, excluded)]
        chosen = dict.fromkeys(found)
        for node_id in found:
            for other in self.nodes[node_id].links:
                if other not in excluded and other in self.nodes and self.nodes[other].is_current:
                    chosen.setdefault(other)
        nodes = [self.nodes[node_id] for node_id in chosen]
        return sorted(nodes, key=lambda node: (-node.timestamp, node.id))

    # --- index maintenance ------------------------------------------------------------------

    def indexed_terms(self, node_id: str) -> list[str] | None:
        """The stems BM25 indexes of a current node (`node_terms`, grouped by stem), what a
        checkpoint stores beside the node; None for a node out of retrieval."""
        terms = self._lexical.terms(node_id)
        return None if terms is None else list(terms.elements())

    def _index(self, node: GraphNode, terms_list: Sequence[str] | None = None) -> None:
        if node.id in self._rows:
            return
        row = len(self._ids)
        if row >= len(self._matrix):
            grown = np.zeros((max(64, 2 * len(self._matrix)), DIMENSIONS), dtype=np.float32)
            grown[:row] = self._matrix[:row]
            self._matrix = grown
        self._matrix[row] = node.embedding
        self._rows[node.id] = row
        self._ids.append(node.id)
        self._lexical.add(node.id, row, node_terms(node) if terms_list is None else terms_list)

    def _unindex(self, node_id: str) -> None:
        row = self._rows.pop(node_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._ids[row] = moved
            self._matrix[row] = self._matrix[last]
            self._rows[moved] = row
            self._lexical.move(moved, row)
        self._ids.pop()
        self._lexical.remove(node_id)

    def take_changes(self) -> Changes:
        changes, self.changes = self.changes, Changes()
        return changes


MAX_CONTEXT_HISTORY = 20  # context updates kept per node (merges, supersessions: all of them)


def _cap_context_history(node: GraphNode) -> None:
    updates = [i for i, entry in enumerate(node.history) if entry.event == "context updated"]
    drop = set(updates[:-MAX_CONTEXT_HISTORY])
    if drop:
        node.history = [entry for i, entry in enumerate(node.history) if i not in drop]
