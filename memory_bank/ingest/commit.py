"""`StoreCommitter`: the one writer of a store. Every change (add, remove, re-plan) is a commit.

Work that takes long (reading, chunking, embedding, memorizing) runs in parallel and without
a lock; only the commit is serialized, under the store's lock (`StoreLocation.lock`), and it
always starts from the store as it is *at commit time*: if another writer committed since this
ingest was planned, the new memories go onto that newer version. Documents another writer
committed meanwhile are not added twice; nothing acknowledged is lost.

A commit keeps what it can: memories keep their file paths, small adds are placed into the
stored tree, and only directories whose README inputs changed (and so their ancestors) get a
new README. The whole tree is planned anew when asked (a rebuild), when an add is large next
to the store, after `store.replan_after_adds` placed adds, or when placement has made the leaves
less cohesive than the last plan by more than `store.max_cohesion_drop`; such a re-plan is
recorded as a `ReorganizeOperation` in `.bank/reorganizations.json`.

The committer keeps the last state it read or wrote (memories, vectors, tree, READMEs) and
reuses it while the live store is still that version, so a long-lived writer (the Ray writer
actor) does not re-read the store for every commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.graph.batch import GraphCommit
from memory_bank.graph.persist import GRAPH_DIR, drop_checkpoints, write_records
from memory_bank.ingest.graph_step import GraphStep, memory_inputs
from memory_bank.ingest.stages import (
    compose_readmes,
    embed_readmes,
    plan_tree,
    subtree_summaries,
    taxonomy_items,
)
from memory_bank.ingest.store_state import (
    LEDGER_FILE,
    REORGANIZATIONS_FILE,
    StoreState,
    load_state,
)
from memory_bank.ingest.tree_changes import (
    mean_leaf_cohesion,
    readme_file_entry,
    readme_signatures,
    remap_tree,
    reorganization,
)
from memory_bank.ingest.work import (
    MemoryParts,
    concatenate,
    memory_recipe,
    select_documents,
)
from memory_bank.llm.ledger import LedgerSummary, take_usage
from memory_bank.llm.roles import LLMBackend, PlaceRequest, ReadmeRequest
from memory_bank.schemas import (
    CommitResult,
    DirectoryNode,
)
from memory_bank.store import layout
from memory_bank.store.files import assign_chunk_paths, readme_relative_path
from memory_bank.store.location import StoreLocation
from memory_bank.store.writer import count_directories, meta_extra_from_config, write_store
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import validate_taxonomy
from memory_bank.taxonomy.placement import should_place
from memory_bank.taxonomy.readme import README_FORMAT

KEPT_REORGANIZATIONS = 50


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
        backend: LLMBackend,
        encode_texts: Callable[[list[str]], np.ndarray],
        map_calls: TaskMap = run_serially,
        graph: GraphStep | None = None,
    ) -> None:
        self.store = Path(store)
        self.location = StoreLocation(store)
        self.graph = graph
        self.config = config
        self.backend = backend
        self.encode_texts = encode_texts
        self.map_calls = map_calls
        self._state: StoreState | None = None

    def commit(self, request: CommitRequest) -> CommitResult:
        clock = _Clock()
        with self.location.lock(wait_s=self.config.store.lock_wait_s):
            clock.lap("wait")
            state = self._live_state()
            clock.lap("load")
            if request.replace_all and state is not None and state.version != request.base_version:
                raise StoreError(
                    f"{self.store} changed while it was being rebuilt with new settings; run the "
                    "ingest again (the journal keeps the work done so far)"
                )
            try:
                result = self._commit(request, None if request.replace_all else state, state, clock)
            finally:
                usage = take_usage(self.backend)
        result.stage_seconds = clock.seconds
        result.llm = usage.model_dump(mode="json")
        return result

    def _live_state(self) -> StoreState | None:
        live = layout.live_store_version(self.store)
        if live is None:
            self._state = None
        elif self._state is None or self._state.version != live:
            self._state = load_state(self.store)
        return self._state

    def _commit(
        self,
        request: CommitRequest,
        state: StoreState | None,
        live: StoreState | None,
        clock: _Clock,
    ) -> CommitResult:
        base = state.parts if state else MemoryParts()
        removed = set(request.remove) & {doc.document_id for doc in base.documents}
        base, kept_index = select_documents(base, lambda doc_id: doc_id not in removed, 0)
        known = {doc.document_id for doc in base.documents}
        offered = {doc.document_id for doc in request.added.documents}
        added, _ = select_documents(
            request.added, lambda doc_id: doc_id not in known, len(base.memories)
        )
        parts = concatenate(base, added)
        result = CommitResult(
            store_version=live.version if live else "",
            documents=len(added.documents),
            duplicate_documents=len(offered & known),
            removed_documents=len(removed),
            chunks=len(added.memories),
            removed_chunks=len(state.parts.memories) - len(base.memories) if state else 0,
        )
        if not added.memories and not removed and not request.replan and not request.replace_all:
            result.written = False
            result.directories = count_directories(live.tree) if live else 0
            return result
        if not parts.memories:
            raise StoreError(
                f"this would leave {self.store} without memories; delete the store instead"
            )
        if (
            state is not None
            and added.memories
            and state.meta.get("memory_recipe") != memory_recipe(self.config)
        ):
            raise StoreError(
                f"{self.store} was made with other chunking/memorize/embedding settings than "
                "this ingest; run the ingest again to rebuild it with these settings"
            )

        old_tree = remap_tree(state.tree, kept_index) if state else None
        tree, reason, stats = self._tree_for(request, state, old_tree, parts, len(base.memories))
        clock.lap("plan")
        result.placed = reason is None and bool(added.memories) and old_tree is not None
        old_paths = (
            {kept_index[i]: p for i, p in state.chunk_paths.items() if i in kept_index}
            if state
            else {}
        )
        chunk_paths = assign_chunk_paths(tree, parts.memories, keep=old_paths)
        result.moved_memories = sum(chunk_paths[i] != path for i, path in old_paths.items())

        old_signatures = (
            readme_signatures(state.tree, state.parts.memories, state.chunk_paths) if state else {}
        )
        new_signatures = readme_signatures(tree, parts.memories, chunk_paths)
        # READMEs written by a release that wrote them differently are all rewritten.
        same_format = state is not None and state.meta.get("readme_format") == README_FORMAT
        stale = [
            path
            for path, signature in new_signatures.items()
            if not same_format
            or old_signatures.get(path) != signature
            or not state.readmes.get(path)
        ]
        readmes = self._readmes(tree, parts, chunk_paths, stale, state)
        clock.lap("readme")
        readme_vectors = embed_readmes(
            readmes, state.readme_vectors if state else {}, self.encode_texts
        )
        clock.lap("embed readmes")
        reorganizations = list(live.reorganizations) if live else []
        if reason is not None and state is not None:
            operation = reorganization(reason, state, tree, chunk_paths, kept_index)
            if operation is not None:
                result.reorganization = operation
                reorganizations = [*reorganizations, operation.model_dump(mode="json")]
        reorganizations = reorganizations[-KEPT_REORGANIZATIONS:]

        graph_files = self._graph_step(state, base, added, removed, result)
        clock.lap("graph")
        ledger = _ledger_after(live, request, self.backend)
        recipe = memory_recipe(self.config)
        if state is not None and not added.memories:  # a removal keeps the store's recipe
            recipe = state.meta.get("memory_recipe", recipe)
        stats_written = write_store(
            self.store,
            documents=parts.documents,
            chunks=parts.chunks,
            memories=parts.memories,
            memory_vectors=parts.memory_vectors,
            sentences=parts.sentences,
            sentence_vectors=parts.sentence_vectors,
            tree=tree,
            readmes=readmes,
            readme_vectors=readme_vectors,
            chunk_paths=chunk_paths,
            meta_extra={
                **meta_extra_from_config(self.config),
                "memory_recipe": recipe,
                "readme_format": README_FORMAT,
                "taxonomy": stats,
            },
            bank_json={
                name: value
                for name, value in ((REORGANIZATIONS_FILE, reorganizations), (LEDGER_FILE, ledger))
                if value
            },
            taxonomy_config=self.config.taxonomy,
            skip_if_unchanged=True,
            reuse_files=self._unchanged_files(state, parts, chunk_paths, readmes, stale),
            bank_files=graph_files[0] if graph_files else None,
        )
        clock.lap("write")
        if graph_files and stats_written.written:
            drop_checkpoints(self.location.graph_log_dir, graph_files[1])
        if self.graph is not None:
            self.graph.committed()
        result.store_version = stats_written.store_version
        result.written = stats_written.written
        result.directories = stats_written.directories
        result.readmes_regenerated = sorted(stale) if stats_written.written else []
        old_directories = set(old_signatures)
        result.new_directories = sorted(set(new_signatures) - old_directories) if state else []
        self._state = StoreState(
            version=stats_written.store_version,
            parts=parts,
            tree=tree,
            chunk_paths=chunk_paths,
            readmes=readmes,
            readme_vectors={readmes[p]: v for p, v in readme_vectors.items()},
            meta={"memory_recipe": recipe, "readme_format": README_FORMAT, "taxonomy": stats},
            reorganizations=reorganizations,
            ledger=ledger,
        )
        return result

    def _graph_step(
        self,
        state: StoreState | None,
        base: MemoryParts,
        added: MemoryParts,
        removed: set[str],
        result: CommitResult,
    ) -> tuple[Callable[[Path], None], int] | None:
        """The graph's part of the commit: memory nodes for the added memories (analysed for
        related, merged and conflicting memories), none for the removed ones."""
        if self.graph is None:
            return None
        removed_chunks = [
            str(m.metadata["chunk_id"])
            for m in (state.parts.memories if state else [])
            if m.metadata.get("document_id") in removed
        ]
        commit = GraphCommit(
            added=memory_inputs(added, time.time()),
            removed=removed_chunks,
            chunk_ids_after={str(m.metadata["chunk_id"]) for m in base.memories}
            | {str(m.metadata["chunk_id"]) for m in added.memories},
        )
        records, seq, outcome = self.graph.prepare_commit(commit)
        result.graph = {
            "nodes_added": outcome.nodes_added,
            "nodes_removed": outcome.nodes_removed,
            "pairs_analysed": outcome.pairs,
            "related": outcome.related,
            "merges": outcome.merges,
            "conflicts": len(outcome.conflicts),
            "checkpoint": seq,
        }
        return (lambda bank: write_records(bank / GRAPH_DIR, records, seq)), seq

    def _unchanged_files(
        self,
        state: StoreState | None,
        parts: MemoryParts,
        chunk_paths: dict[int, str],
        readmes: dict[str, str],
        stale: Sequence[str],
    ) -> dict[str, Path]:
        """Files of the live store (`state`, checked live under the lock) that the new version
        holds unchanged: a memory equal to the one stored under the same index at the same
        path, a README whose text is the same. Most of a store, on a small add."""
        if state is None:
            return {}
        stored = {memory.index: memory for memory in state.parts.memories}
        unchanged: dict[str, Path] = {}
        for memory in parts.memories:
            path = chunk_paths[memory.index]
            before = stored.get(memory.index)
            if (
                before is not None
                and state.chunk_paths.get(memory.index) == path
                and (before is memory or before == memory)
            ):
                unchanged[path] = self.store / path
        stale_paths = set(stale)
        for directory, text in readmes.items():
            if directory not in stale_paths and state.readmes.get(directory) == text:
                relative = readme_relative_path(directory)
                unchanged[relative] = self.store / relative
        return unchanged

    # --- the tree -----------------------------------------------------------------------------

    def _tree_for(
        self,
        request: CommitRequest,
        state: StoreState | None,
        old_tree: DirectoryNode | None,
        parts: MemoryParts,
        stored: int,
    ) -> tuple[DirectoryNode, str | None, dict[str, Any]]:
        """The tree after the commit, why it was planned anew (None: kept or placed), and the
        taxonomy statistics the meta records."""
        settings = self.config.store
        previous = (state.meta.get("taxonomy") if state else None) or {}
        adds = int(previous.get("adds_since_plan", 0))
        added = len(parts.memories) - stored
        tree: DirectoryNode | None = None
        reason: str | None = None
        if request.replan:
            reason = "rebuild"
        elif old_tree is None or stored == 0:
            reason = "new store" if state is None else "store emptied"
        elif added and not should_place(stored, added):
            reason = f"large add ({added} memories onto {stored})"
        elif added:
            request_place = PlaceRequest(
                tree=old_tree,
                items=taxonomy_items(parts.memories),
                vectors=parts.memory_vectors,
                new_indices=list(range(stored, stored + added)),
                config=self.config.taxonomy,
            )
            tree = self.backend.place(request_place).tree
            if tree is None or validate_taxonomy(tree, len(parts.memories), self.config.taxonomy):
                tree, reason = None, "the stored tree could not take the new memories"
            else:
                adds += 1
        else:
            tree = old_tree
            if validate_taxonomy(tree, len(parts.memories), self.config.taxonomy):
                tree, reason = None, "the removal left directories out of bounds"
        planned_cohesion = previous.get("plan_cohesion")
        if tree is not None:
            cohesion = mean_leaf_cohesion(tree, parts.memory_vectors)
            if adds >= settings.replan_after_adds:
                tree, reason = None, f"{adds} placed adds since the last plan"
            elif (
                planned_cohesion is not None
                and cohesion < planned_cohesion - settings.max_cohesion_drop
            ):
                tree, reason = (
                    None,
                    f"leaf cohesion {cohesion:.3f} < planned {planned_cohesion:.3f}",
                )
        if tree is None:
            tree = plan_tree(
                parts.memories,
                parts.memory_vectors,
                self.config.taxonomy,
                self.backend,
                self.map_calls,
            )
            adds = 0
            planned_cohesion = mean_leaf_cohesion(tree, parts.memory_vectors)
        stats = {
            "adds_since_plan": adds,
            "plan_cohesion": round(float(planned_cohesion), 4),
            "cohesion": round(mean_leaf_cohesion(tree, parts.memory_vectors), 4),
        }
        return tree, reason, stats

    def _readmes(
        self,
        tree: DirectoryNode,
        parts: MemoryParts,
        chunk_paths: dict[int, str],
        stale: Sequence[str],
        state: StoreState | None,
    ) -> dict[str, str]:
        """Every directory's README: the stored text where its inputs did not change."""
        memories = parts.memories
        directories = {node.path: node for node in tree.iter_nodes()}
        if state is None or len(stale) == len(directories):
            return compose_readmes(
                tree,
                memories,
                chunk_paths,
                self.config.taxonomy,
                self.backend,
                self.map_calls,
                vectors=parts.memory_vectors,
            )
        by_index = {memory.index: memory for memory in memories}
        subtrees = subtree_summaries(tree, memories, parts.memory_vectors, chunk_paths)
        readmes = {path: state.readmes[path] for path in directories if path not in stale}
        requests = []
        for path in stale:
            node = directories[path]
            files = [readme_file_entry(by_index[i], chunk_paths[i]) for i in node.chunk_indices]
            requests.append(
                ReadmeRequest(
                    node=node,
                    child_dirs=list(node.children),
                    files=files,
                    subtree=subtrees[path],
                )
            )
        for path, result in zip(stale, self.backend.readmes(requests), strict=True):
            readmes[path] = result.text
        return readmes


class _Clock:
    """Seconds between successive laps, by name."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now


def _ledger_after(
    live: StoreState | None, request: CommitRequest, backend: LLMBackend
) -> dict[str, Any]:
    """The store's LLM ledger with this ingest's requests added. Usage that made no request
    (cache hits only) leaves it as it was, so an unchanged rebuild stays a no-op."""
    previous = LedgerSummary.model_validate(live.ledger if live else {})
    added = LedgerSummary.model_validate(request.llm_usage or {})
    ledger = getattr(backend, "ledger", None)
    if ledger is not None:  # the commit's own calls so far (README role), not yet taken
        added.merge(ledger.peek())
    if not added.calls and not any(u.fallbacks for u in added.roles.values()):
        return previous.model_dump(mode="json") if previous.roles else {}
    previous.merge(added)
    return previous.model_dump(mode="json")
