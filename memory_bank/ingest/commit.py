"""`StoreCommitter`: the one writer of a store. Every change (add, remove, re-plan) is a commit.

Work that takes long (reading, chunking, embedding, memorizing) runs in parallel and without
a lock; only the commit is serialized, under the store's lock (`StoreLocation.lock`), and it
always starts from the store as it is *at commit time*: if another writer committed since this
ingest was planned, the new memories go onto that newer version. Documents another writer
committed meanwhile are not added twice; nothing acknowledged is lost.

A commit is a short pipeline of stages over values, from the live version (a `StoreSnapshot`)
to the next one:

    apply_request  the request applied to the live version's parts    (commit_change.py)
    plan           the tree, placed into or planned anew; file paths  (commit_tree.py)
    READMEs        composed anew only where their inputs changed      (commit_readmes.py)
    graph          the Query Graph's nodes for the change             (graph_step.py)
    write          the new snapshot, published in one switch          (commit_version.py,
                                                                       store/writer.py)

Each stage is a plain function of the values before it; where a stage has independent pieces
(planning groups, README subtrees, graph analysis) it takes the executor's map.

The committer keeps the last version it read or wrote and reuses it while the live store is
still that version, so a long-lived writer (the Ray writer actor) does not re-read the store
for every commit.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.graph.persist import drop_checkpoints
from memory_bank.graph.stored_facts import facts_attachment
from memory_bank.ingest.commit_change import Change, apply_request, check_change
from memory_bank.ingest.commit_readmes import ReadmeSet, readme_stage
from memory_bank.ingest.commit_tree import TreePlan, plan_tree_stage
from memory_bank.ingest.commit_version import (
    bank_logs,
    ledger_after,
    unchanged_files,
    version_meta,
)
from memory_bank.ingest.graph_step import GraphStep, GraphUpdate, graph_commit, graph_stage
from memory_bank.ingest.stages import readme_vectors_of
from memory_bank.llm.ledger import take_usage
from memory_bank.llm.seam import LLM
from memory_bank.schemas import CommitResult
from memory_bank.store import layout
from memory_bank.store.location import StoreLocation
from memory_bank.store.memory_words import stored_words
from memory_bank.store.snapshot import MemoryParts, StoreSnapshot, load_snapshot
from memory_bank.store.writer import StoreStats, count_directories, write_store
from memory_bank.tasks import TaskMap, run_serially


@dataclass
class CommitRequest:
    """One change to a store. `added` holds whole documents (their memory indices are
    provisional); `remove` names stored document ids."""

    added: MemoryParts = field(default_factory=MemoryParts)
    remove: list[str] = field(default_factory=list)
    replan: bool = False  # plan the whole tree anew (a rebuild)
    # `added` is the whole store, made with another memory recipe than the live one; valid only
    # while the store is still `base_version` (else the commit refuses: run the ingest again).
    replace_all: bool = False
    base_version: str | None = None
    llm_usage: dict[str, Any] = field(default_factory=dict)  # of the work before the commit


class StoreCommitter:
    """Serializes and applies commits to one store (see the module docstring)."""

    def __init__(
        self,
        store: Path,
        config: AppConfig,
        llm: LLM | None,
        encode_texts: Callable[[list[str]], np.ndarray],
        map_calls: TaskMap = run_serially,
        graph: GraphStep | None = None,
    ) -> None:
        self.store = Path(store)
        self.location = StoreLocation(store)
        self.graph = graph
        self.config = config
        self.llm = llm
        self.encode_texts = encode_texts
        self.map_calls = map_calls
        self._snapshot: StoreSnapshot | None = None

    def commit(self, request: CommitRequest) -> CommitResult:
        clock = _Clock()
        with self.location.lock(wait_s=self.config.store.lock_wait_s):
            clock.lap("wait")
            live = self._live_snapshot()
            clock.lap("load")
            if request.replace_all and live is not None and live.version != request.base_version:
                raise StoreError(
                    f"{self.store} changed while it was being rebuilt with new settings; run the "
                    "ingest again (the journal keeps the work done so far)"
                )
            try:
                result = self._commit(request, live, clock)
            finally:
                usage = take_usage(self.llm)
        result.stage_seconds = clock.seconds
        result.stage_peak_mb = clock.peak_mb
        result.llm = usage.model_dump(mode="json")
        return result

    def _live_snapshot(self) -> StoreSnapshot | None:
        live = layout.live_store_version(self.store)
        if live is None:
            self._snapshot = None
        elif self._snapshot is None or self._snapshot.version != live:
            self._snapshot = load_snapshot(self.store)
        return self._snapshot

    def _commit(
        self, request: CommitRequest, live: StoreSnapshot | None, clock: _Clock
    ) -> CommitResult:
        change = apply_request(None if request.replace_all else live, request.added, request.remove)
        result = _counted(change, live)
        if not (change.changes_parts or request.replan or request.replace_all):
            result.written = False
            result.directories = count_directories(live.tree) if live else 0
            return result
        check_change(change, self.config, str(self.store))
        plan = plan_tree_stage(change, request.replan, self.config, self.llm, self.map_calls)
        clock.lap("plan")
        before = change.before  # the live version: its memories' words are stored with it
        stored = (
            stored_words(self.location.live_directory(), before.parts.memories) if before else {}
        )
        readmes = readme_stage(
            change, plan, self.config.taxonomy, self.llm, self.map_calls, stored_words=stored
        )
        clock.lap("readme")
        readme_vectors = readme_vectors_of(plan.tree, change.parts)
        clock.lap("readme vectors")
        graph = graph_stage(self.graph, graph_commit(change, time.time())) if self.graph else None
        clock.lap("graph")
        snapshot = StoreSnapshot(
            parts=change.parts,
            tree=plan.tree,
            readmes=readmes.texts,
            meta=version_meta(change, plan, self.config),
            chunk_paths=plan.chunk_paths,
            readme_vectors=readme_vectors,
            bank_json=bank_logs(
                live, plan.reorganization, ledger_after(live, request.llm_usage, self.llm)
            ),
            graph=graph.snapshot if graph else None,
            stored_documents=change.stored_documents,
        )
        stats = self._write(snapshot, change.before, readmes, graph, compact=request.replan)
        clock.lap("write")
        if stats.written:  # else the live version (this content) stays the one read
            self._snapshot = _lending(replace(snapshot, graph=None, version=stats.store_version))
        return _written(result, change, plan, readmes, graph, stats)

    def _write(
        self,
        snapshot: StoreSnapshot,
        before: StoreSnapshot | None,
        readmes: ReadmeSet,
        graph: GraphUpdate | None,
        compact: bool,
    ) -> StoreStats:
        """Publish `snapshot` (unless the live version already is it), linking the files of
        `before` it holds unchanged; then let the graph know. `compact` (a rebuild) folds the
        tables into one segment each."""
        stats = write_store(
            self.store,
            snapshot,
            taxonomy_config=self.config.taxonomy,
            skip_if_unchanged=True,
            reuse_files=unchanged_files(self.store, before, snapshot, readmes.stale),
            compact=compact,
            # the next commit's graph step reads its candidates' sentences from these
            attachments=facts_attachment if self.graph is not None else None,
        )
        if graph is not None and stats.written:
            drop_checkpoints(self.location.graph_log_dir, graph.snapshot.seq)
        if self.graph is not None:
            self.graph.committed()
        return stats


class _Clock:
    """Seconds between successive laps, by name, and the process's peak memory at each."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.peak_mb: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        # ru_maxrss is in KiB on Linux
        self.peak_mb[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self._last = now


def _lending(snapshot: StoreSnapshot) -> StoreSnapshot:
    """A written version as the next commit starts from it: its memories, and every document
    lent from the store (the rows of this commit's documents are not kept here)."""
    return replace(
        snapshot,
        parts=MemoryParts(
            memories=snapshot.parts.memories, memory_vectors=snapshot.parts.memory_vectors
        ),
        stored_documents=snapshot.documents(),
    )


def _counted(change: Change, live: StoreSnapshot | None) -> CommitResult:
    """The result of a commit before it plans anything: what the request changes."""
    return CommitResult(
        store_version=live.version if live else "",
        documents=len(change.added.documents),
        duplicate_documents=change.duplicates,
        removed_documents=len(change.removed),
        chunks=len(change.added.memories),
        removed_chunks=change.removed_memories,
    )


def _written(
    result: CommitResult,
    change: Change,
    plan: TreePlan,
    readmes: ReadmeSet,
    graph: GraphUpdate | None,
    stats: StoreStats,
) -> CommitResult:
    """`result` completed with what the stages did and the write wrote."""
    before = change.before
    result.placed = (
        plan.replan_reason is None and bool(change.added.memories) and before is not None
    )
    result.moved_memories = plan.moved_memories
    result.reorganization = plan.reorganization
    result.graph = graph.summary if graph else {}
    result.store_version = stats.store_version
    result.written = stats.written
    result.directories = stats.directories
    result.readmes_regenerated = sorted(readmes.stale) if stats.written else []
    if before is not None:
        old = {node.path for node in before.tree.iter_nodes()}
        result.new_directories = sorted(
            node.path for node in plan.tree.iter_nodes() if node.path not in old
        )
    return result
