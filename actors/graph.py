"""The store's Query Graph actor: one named Ray actor per store holds the graph, the Interaction
Tree and the sessions for every process on the cluster (Serve replicas, jobs, ingests).

It wraps a plain `GraphKeeper` (memory_bank/session/keeper.py), which checkpoints every batch
of changes to the store's graph log before the call returns and reloads from the store when it
starts: a restarted actor (`max_restarts=-1`) loses no acknowledged change. It is a threaded
actor (`CALLS_AT_ONCE`): the keeper holds its lock only for bounded steps (one piece of a long
context, the application of a commit's verdicts), so reading a session never waits behind
another caller's long intercept or an ingest's graph analysis; the keeper's graph lock also
serializes it with writers outside Ray. The batch analysis of an ingest's graph step fans out as
Ray tasks, without the lock.

`RemoteKeeper` gives a handle the keeper's methods (blocking), so a `Session` or a
`StoreCommitter` works with the actor exactly as with an in-process keeper.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray

from actors.store_actors import NAMESPACE, store_actor_name, store_actor_options, store_path
from memory_bank.config import AppConfig
from memory_bank.errors import MemoryBankError
from memory_bank.graph.batch import BatchOutcome, GraphCommit
from memory_bank.graph.model import Attachment
from memory_bank.graph.persist import GraphRecords
from memory_bank.session.keeper import GraphKeeper
from memory_bank.session.models import (
    EntryView,
    GraphSummary,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    SessionExport,
    TaskType,
)
from pipeline.runtime import encode_on_task, map_on_tasks

__all__ = ["NAMESPACE", "GraphActor", "RemoteKeeper", "graph_actor", "graph_name"]
ROLE = "graph"
# Calls in flight at once: sessions read while another caller's intercept or graph step runs.
CALLS_AT_ONCE = 8


class GraphActor:
    """Actor body: a `GraphKeeper` whose batch analysis runs as Ray tasks."""

    def __init__(self, store: str, config: dict[str, Any]) -> None:
        self.store = store
        self._config: dict[str, Any] = config
        self.keeper = _keeper(store, AppConfig.model_validate(config))

    def ping(self) -> int:
        """The last checkpoint the actor's graph holds (loads the graph)."""
        return self.keeper.state.seq

    def open_session(self, task_goal: str) -> InsightDoc:
        return self.keeper.open_session(task_goal)

    def intercept(
        self,
        session_id: str,
        context: str,
        task_type: TaskType | None = None,
        attachments: Sequence[Attachment] = (),
        metadata: dict[str, Any] | None = None,
    ) -> InterceptResult:
        return self.keeper.intercept(session_id, context, task_type, attachments, metadata)

    def insight_doc(self, session_id: str) -> InsightDoc:
        return self.keeper.insight_doc(session_id)

    def enhance_prompt(self, session_id: str) -> str:
        return self.keeper.enhance_prompt(session_id)

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        return self.keeper.deep_retrieval(node_id)

    def node(self, node_id: str) -> NodeDetail:
        return self.keeper.node(node_id)

    def export(self, session_id: str) -> SessionExport:
        return self.keeper.export(session_id)

    def close(self, session_id: str) -> SessionExport:
        return self.keeper.close(session_id)

    def summary(self) -> GraphSummary:
        return self.keeper.summary()

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphRecords, int, BatchOutcome]:
        return self.keeper.prepare_commit(commit)

    def committed(self) -> None:
        self.keeper.committed()


def _keeper(store: str, config: AppConfig) -> GraphKeeper:
    cpus = config.ray.plan_task_cpus
    return GraphKeeper(
        Path(store),
        config,
        map_calls=lambda function, calls: map_on_tasks(function, calls, cpus),
        # Commits re-embed in a task (whose worker keeps the model for the next one); the actor
        # loads the model only when a session needs it.
        encode_texts=lambda texts: encode_on_task(
            texts, config.embedding, config.ray.embed.num_cpus
        ),
    )


def graph_name(store: str | Path) -> str:
    """The actor name for a store: derived from its absolute path, so every process agrees."""
    return store_actor_name(ROLE, store)


def graph_actor(store: str | Path, config: AppConfig) -> ray.actor.ActorHandle:
    """The graph actor of `store`, started if it does not exist yet (with `config`)."""
    return (
        ray.remote(GraphActor)
        .options(**store_actor_options(ROLE, store, max_concurrency=CALLS_AT_ONCE))
        .remote(store_path(store), config.model_dump(mode="json"))
    )


class RemoteKeeper:
    """A graph actor behind the keeper's interface (blocking calls)."""

    def __init__(self, handle: ray.actor.ActorHandle) -> None:
        self.handle = handle

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return ray.get(getattr(self.handle, method).remote(*args))
        except ray.exceptions.RayTaskError as exc:
            # The domain's own error, as raised in the actor (a clear message, its class).
            if isinstance(exc.cause, MemoryBankError):
                raise exc.cause from None
            raise

    def open_session(self, task_goal: str) -> InsightDoc:
        return self._call("open_session", task_goal)

    def intercept(
        self,
        session_id: str,
        context: str,
        task_type: TaskType | None = None,
        attachments: Sequence[Attachment] = (),
        metadata: dict[str, Any] | None = None,
    ) -> InterceptResult:
        return self._call("intercept", session_id, context, task_type, tuple(attachments), metadata)

    def insight_doc(self, session_id: str) -> InsightDoc:
        return self._call("insight_doc", session_id)

    def enhance_prompt(self, session_id: str) -> str:
        return self._call("enhance_prompt", session_id)

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        return self._call("deep_retrieval", node_id)

    def node(self, node_id: str) -> NodeDetail:
        return self._call("node", node_id)

    def export(self, session_id: str) -> SessionExport:
        return self._call("export", session_id)

    def close(self, session_id: str) -> SessionExport:
        return self._call("close", session_id)

    def summary(self) -> GraphSummary:
        return self._call("summary")

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphRecords, int, BatchOutcome]:
        return self._call("prepare_commit", commit)

    def committed(self) -> None:
        self._call("committed")
