"""The store's Query Graph actor: one named Ray actor per store holds the graph, the Interaction
Tree and the sessions for every process on the cluster (Serve replicas, jobs, ingests).

It wraps the plain classes an in-process bank uses: a `GraphStorage` (memory_bank/graph/
storage.py), which checkpoints every batch of changes to the store's graph log before the call
returns and reloads from the store when it starts, so a restarted actor (`max_restarts=-1`)
loses no acknowledged change; the `SessionService` over it, whose intercepts draft their
pieces (classify, structure, embed) as Ray tasks; and the commits' `IngestGraphStep` over it,
whose batch analysis and embedding run as Ray tasks too, without the graph lock. The heavy
work thus runs in other processes, and the actor's own process keeps to the short steps on the
graph. It is a threaded actor (`CALLS_AT_ONCE`): the storage's lock is held only for bounded
steps (one piece of a long context, the application of a commit's verdicts), so reading a
session never waits behind another caller's long intercept or an ingest's graph analysis; the
storage's graph lock also serializes the actor with writers outside Ray.

`RemoteKeeper` gives a handle the session service's and the graph step's methods (blocking),
so a `Session` or a `StoreCommitter` works with the actor exactly as in one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray

from actors.runtime import encode_on_task, map_on_tasks, worker_embedder, worker_llm
from actors.store_actors import NAMESPACE, store_actor_name, store_actor_options, store_path
from memory_bank.config import AppConfig
from memory_bank.errors import MemoryBankError
from memory_bank.graph.batch import BatchOutcome, GraphCommit
from memory_bank.graph.layers import GraphSnapshot
from memory_bank.graph.model import Attachment
from memory_bank.graph.storage import GraphStorage
from memory_bank.ingest.graph_step import IngestGraphStep
from memory_bank.session.agents import RoleAgents
from memory_bank.session.models import (
    EntryView,
    GraphSummary,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    SessionExport,
    TaskType,
)
from memory_bank.session.pieces import PieceDraft, draft_piece
from memory_bank.session.service import SessionService

__all__ = ["NAMESPACE", "GraphActor", "RemoteKeeper", "graph_actor", "graph_name"]
ROLE = "graph"
# Calls in flight at once: sessions read while another caller's intercept or graph step runs.
CALLS_AT_ONCE = 8


class GraphActor:
    """Actor body: the store's graph, its sessions, and its commits' graph step."""

    def __init__(self, store: str, config: dict[str, Any]) -> None:
        self.store = store
        settings = AppConfig.model_validate(config)
        self.storage = GraphStorage(Path(store), settings.retrieval.alpha)
        self.sessions = SessionService(
            self.storage,
            settings,
            llm=worker_llm(settings.llm),
            draft_pieces=lambda pieces, goal: map_on_tasks(
                draft_on_worker,
                [(piece, goal, settings) for piece in pieces],
                settings.ray.plan_task_cpus,
                single_here=False,  # even one piece: this process serves the sessions' reads
            ),
        )
        self.step = _graph_step(self.storage, settings)

    def ping(self) -> int:
        """The last checkpoint the actor's graph holds (loads the graph)."""
        return self.storage.state.seq

    def open_session(self, task_goal: str) -> InsightDoc:
        return self.sessions.open_session(task_goal)

    def intercept(
        self,
        session_id: str,
        context: str,
        task_type: TaskType | None = None,
        attachments: Sequence[Attachment] = (),
        metadata: dict[str, Any] | None = None,
    ) -> InterceptResult:
        return self.sessions.intercept(session_id, context, task_type, attachments, metadata)

    def insight_doc(self, session_id: str) -> InsightDoc:
        return self.sessions.insight_doc(session_id)

    def enhance_prompt(self, session_id: str) -> str:
        return self.sessions.enhance_prompt(session_id)

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        return self.sessions.deep_retrieval(node_id)

    def node(self, node_id: str) -> NodeDetail:
        return self.sessions.node(node_id)

    def export(self, session_id: str) -> SessionExport:
        return self.sessions.export(session_id)

    def close(self, session_id: str) -> SessionExport:
        return self.sessions.close(session_id)

    def summary(self) -> GraphSummary:
        return self.sessions.summary()

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphSnapshot, BatchOutcome]:
        return self.step.prepare_commit(commit)

    def committed(self) -> None:
        self.step.committed()


def _graph_step(storage: GraphStorage, config: AppConfig) -> IngestGraphStep:
    cpus = config.ray.plan_task_cpus
    return IngestGraphStep(
        storage,
        config,
        # Commits embed in a task (whose worker keeps the model for the next one); the actor
        # loads the model only when a session needs it.
        encode=lambda texts: encode_on_task(texts, config.embedding, config.ray.embed.num_cpus),
        map_calls=lambda function, calls: map_on_tasks(function, calls, cpus),
    )


def draft_on_worker(piece: str, task_goal: str, config: AppConfig) -> PieceDraft:
    """One piece of an intercepted context drafted in a Ray task, with the worker's embedder
    and LLM (each loaded once per worker process)."""
    embedder = worker_embedder(config.embedding)
    agents = RoleAgents(worker_llm(config.llm), embedder, config.memorize)
    return draft_piece(agents, embedder, piece, task_goal)


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
    """A graph actor behind the interfaces of the session service and the graph step
    (blocking calls)."""

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

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphSnapshot, BatchOutcome]:
        return self._call("prepare_commit", commit)

    def committed(self) -> None:
        self._call("committed")
