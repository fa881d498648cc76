"""`GraphStorage`: the one read-write holder of a store's Query Graph, Interaction Tree and
sessions in a process. The session service and a commit's graph step share it; on Ray it lives
in the store's named graph actor (`actors/graph.py`), so Serve replicas, jobs and ingests share
one graph.

Persistence, and why it keeps every acknowledged change without breaking readers:
- A store version is immutable once published (readers hold it; files are hard-linked into
  later versions). So the graph lives in two places: a *snapshot* in each version's
  `.bank/graph/` (written by the commit that made the version, numbered with the last
  checkpoint it holds) and *checkpoints* in the store's graph log `.<store>.graph/`, beside
  the versions: one per batch of changes (an intercept, an ingest's graph step), written
  aside, fsynced and renamed into place before the call that made it returns.
- The graph is the live snapshot plus every checkpoint numbered above it, applied in order.
  Checkpoint numbers are contiguous: a loader that finds a gap (a commit deleted checkpoints
  its new snapshot holds) loads again from the new version.
- Every change happens under the graph lock (`.<store>.graph.lock`, an flock) with the graph
  reloaded first if the log moved on (another process wrote): one writer at a time, across
  processes, and each starts from the latest graph. A commit takes the store lock first and
  the graph lock inside it; intercepts take only the graph lock; nothing takes them in the
  other order, so they cannot deadlock, and an intercept never waits for an ingest's
  chunking or embedding (only for its graph step).
- A commit's graph step is itself two checkpoints (its nodes; the verdicts of their analysis,
  which runs without the lock), then its snapshot goes into the new version; checkpoints the
  snapshot holds are deleted after the version is published. If the commit
  fails after its checkpoint, the nodes of memories that never reached the store are pruned by
  the next commit (it knows every chunk id the store will hold).
- A failed mutation drops the in-memory state: the next call reloads what is on disk.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory_bank.errors import StoreError
from memory_bank.graph.layers import live_snapshot, load_graph_state
from memory_bank.graph.memory_source import MemorySource
from memory_bank.graph.persist import (
    GraphState,
    checkpoints,
    read_seq,
    take_changes,
    write_checkpoint,
)
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation

LOAD_ATTEMPTS = 5


class GraphStorage:
    """A store's graph in this process, loaded on first use (see the module docstring)."""

    def __init__(self, store: str | Path, alpha: float = 0.5) -> None:
        self.store = Path(store)
        self.location = StoreLocation(store)
        self.alpha = alpha
        # Held while a call reads or changes the graph: one thread of this process at a time.
        self.lock = threading.RLock()
        self._state: GraphState | None = None
        self._version: str | None = None
        # The stored memories behind the graph's memory nodes (of the live version).
        self.memories = MemorySource(None)

    @property
    def state(self) -> GraphState:
        """The latest graph (reloaded when another writer checkpointed since)."""
        with self.lock:
            if self._state is None or self._moved_on():
                self._load()
            assert self._state is not None
            return self._state

    @contextmanager
    def mutating(self) -> Iterator[GraphState]:
        """One batch of changes: under the graph lock, on the latest graph, checkpointed
        before this returns."""
        with self.lock, self.location.graph_lock():
            state = self.state
            try:
                yield state
                records = take_changes(state)
                if records:
                    seq = max(state.seq, self._disk_head()[1]) + 1
                    write_checkpoint(self.location.graph_log_dir, records, seq)
                    state.seq = seq
            except BaseException:
                self._state = None  # half-applied changes are dropped; disk has the truth
                raise

    def committed(self) -> None:
        """After a commit: the memories are read from the new version from now on."""
        with self.lock:
            self.memories = MemorySource(self.location.live_directory())
            self._version = layout.live_store_version(self.store)

    def _disk_head(self) -> tuple[str | None, int]:
        snapshot = live_snapshot(self.location.live_directory())
        start = read_seq(snapshot) if snapshot is not None else 0
        found = checkpoints(self.location.graph_log_dir, after=start)
        return layout.live_store_version(self.store), found[-1][0] if found else start

    def _moved_on(self) -> bool:
        """Whether another writer checkpointed since (then reload); a new store version with
        the same graph only needs its memories read anew."""
        assert self._state is not None
        version, head = self._disk_head()
        if version != self._version:
            self.memories = MemorySource(self.location.live_directory())
            self._version = version
        return head != self._state.seq

    def _load(self) -> None:
        for _ in range(LOAD_ATTEMPTS):
            version = layout.live_store_version(self.store)
            live = self.location.live_directory()
            snapshot = live_snapshot(live)
            state = load_graph_state(snapshot, self.location.graph_log_dir, self.alpha)
            if layout.live_store_version(self.store) == version and _contiguous(
                state, snapshot, self.location.graph_log_dir
            ):
                break
        else:
            raise StoreError(f"the graph of {self.store} kept changing while it was loaded")
        self._state, self._version = state, version
        self.memories = MemorySource(live if version is not None else None)


def _contiguous(state: GraphState, snapshot: Path | None, log_dir: Path) -> bool:
    start = read_seq(snapshot) if snapshot is not None and snapshot.is_dir() else 0
    numbers = [seq for seq, _ in checkpoints(log_dir, after=start)]
    return numbers == list(range(start + 1, start + 1 + len(numbers))) and (
        not numbers or numbers[-1] == state.seq
    )
