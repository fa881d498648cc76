"""`GraphView`: the Query Graph of one store, read-only, as the query side uses it.

It loads the live version's snapshot and the checkpoints after it (no lock: checkpoints appear
whole, by rename) and, on `refresh()`, applies checkpoints written since, or loads again when
the store version changed. Readers never write the graph.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from memory_bank.graph.layers import live_snapshot, load_graph_state
from memory_bank.graph.model import Conflict, GraphNode
from memory_bank.graph.persist import GraphState, apply_records, checkpoints
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation

MAX_CHAIN = 32  # superseded_by links followed at most (a cycle cannot hang a query)


@dataclass(frozen=True)
class Supersession:
    """A claim of one node that a later, validated claim replaced."""

    conflict: Conflict
    superseded_node: GraphNode
    current_node: GraphNode  # the node holding the current claim now (merges followed)


class GraphView:
    def __init__(self, store: str | Path, alpha: float = 0.5) -> None:
        self.location = StoreLocation(store)
        self.store = Path(store)
        self.alpha = alpha
        self._state: GraphState | None = None
        self._stamp: tuple[str | None, int] | None = None
        self._lock = threading.Lock()

    @property
    def state(self) -> GraphState:
        """The graph as last refreshed (loaded on first use; `refresh()` once per request)."""
        if self._state is None:
            self.refresh()
        assert self._state is not None
        return self._state

    def refresh(self) -> None:
        with self._lock:
            version = layout.live_store_version(self.store)
            log_stamp = _mtime_ns(self.location.graph_log_dir)
            if self._state is not None and self._stamp == (version, log_stamp):
                return
            if self._state is not None and self._stamp is not None and self._stamp[0] == version:
                for seq, path in checkpoints(self.location.graph_log_dir, after=self._state.seq):
                    if seq != self._state.seq + 1:
                        break  # a gap: the next commit holds them; load again below
                    apply_records(self._state, path)
                    self._state.seq = seq
                else:
                    self._stamp = (version, log_stamp)
                    return
            self._state = self._load()
            self._stamp = (layout.live_store_version(self.store), log_stamp)

    def _load(self) -> GraphState:
        snapshot = live_snapshot(self.location.live_directory())
        return load_graph_state(snapshot, self.location.graph_log_dir, self.alpha)

    # --- questions the query side asks -----------------------------------------------------

    def standing(self, node_id: str) -> GraphNode | None:
        """The current node standing for `node_id` (itself, or what merged or replaced it)."""
        nodes = self.state.graph.nodes
        node = nodes.get(node_id)
        for _ in range(MAX_CHAIN):
            if node is None or node.is_current or node.superseded_by is None:
                return node
            node = nodes.get(node.superseded_by)
        return node

    def superseded_claims(self, node_id: str) -> list[Supersession]:
        """The resolved conflicts in which `node_id`'s claim is the one replaced."""
        graph = self.state.graph
        found = []
        for conflict in graph.conflicts_of(node_id):
            if conflict.status != "resolved" or conflict.superseded != node_id:
                continue
            superseded = graph.nodes.get(node_id)
            current = self.standing(conflict.current) if conflict.current else None
            if superseded is not None and current is not None:
                found.append(Supersession(conflict, superseded, current))
        return found


def _mtime_ns(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
