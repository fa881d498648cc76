"""The store's writer actor: one named Ray actor per store serializes every commit to it.

Drivers anywhere on the cluster (`jobs.ingest`, `MemoryBank.add` on Ray, the CLI) find the
actor by the store's path and send it their commits; the actor runs them one at a time
(`max_concurrency=1`) with a plain `StoreCommitter`, which holds the store's taxonomy state
(memories, vectors, tree, READMEs) in memory between commits and writes every commit to the
store, its checkpoint. The store's file lock is still taken inside, so a writer outside Ray
(`memory-bank ingest --local`) is serialized with it too.

The actor is detached (it outlives the driver that created it, so the next job finds the warm
state) and reserves no CPU: planning groups, README parts and graph analysis fan out as Ray tasks
when there is more than one of them (a single one runs in the actor), README embedding runs in
a task whose worker keeps the model for the next one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ray
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

from actors.graph import RemoteKeeper, graph_actor
from actors.runtime import encode_on_task, map_on_tasks, worker_llm
from actors.store_actors import NAMESPACE, store_actor_name, store_actor_options, store_path
from memory_bank.config import AppConfig
from memory_bank.errors import MemoryBankError
from memory_bank.ingest.commit import CommitRequest, StoreCommitter
from memory_bank.schemas import CommitResult

__all__ = ["NAMESPACE", "StoreWriter", "commit_through_writer", "store_writer", "writer_name"]
ROLE = "writer"
COMMIT_ATTEMPTS = 3


class StoreWriter:
    """Actor body: a `StoreCommitter` whose fan-out work runs as Ray tasks."""

    def __init__(self, store: str) -> None:
        self.store = Path(store)
        self._committer: StoreCommitter | None = None
        self._config: dict[str, Any] | None = None

    def commit(self, request: CommitRequest, config: dict[str, Any]) -> CommitResult:
        """Apply `request` with the caller's settings (a change of settings starts a fresh
        committer, which reads the store again)."""
        if self._committer is None or config != self._config:
            self._committer = _committer(self.store, AppConfig.model_validate(config))
            self._config = config
        return self._committer.commit(request)


def _committer(store: Path, config: AppConfig) -> StoreCommitter:
    resources = config.ray
    # The graph step goes to the store's graph actor: one graph for every process on Ray.
    graph = RemoteKeeper(graph_actor(store, config))
    return StoreCommitter(
        store,
        config,
        worker_llm(config.llm),
        encode_texts=lambda texts: encode_on_task(
            texts, config.embedding, resources.embed.num_cpus
        ),
        map_calls=lambda function, calls: map_on_tasks(function, calls, resources.plan_task_cpus),
        graph=graph,
    )


def commit_through_writer(store: Path, request: CommitRequest, config: AppConfig) -> CommitResult:
    """Commit `request` through the store's writer actor, with `config`'s settings.

    The actor is asked for by name each time: after its node died, the restarted actor (or a
    new one) reloads the store and takes the same request again, which is safe: a commit
    starts from the store as it is, and documents it already holds are not added twice.
    """
    settings = config.model_dump(mode="json")
    try:
        for attempt in Retrying(
            retry=retry_if_exception(_lost_actor),
            stop=stop_after_attempt(COMMIT_ATTEMPTS),
            wait=wait_fixed(1.0),
            reraise=True,
        ):
            with attempt:
                return ray.get(store_writer(store).commit.remote(request, settings))
    except ray.exceptions.RayTaskError as exc:
        # The domain's own error (disk full, lock held, ...), its one line, not Ray's traceback.
        if isinstance(exc.cause, MemoryBankError):
            raise exc.cause from None
        raise
    raise AssertionError("unreachable: Retrying reraises the last error")


def _lost_actor(error: BaseException) -> bool:
    """The writer (or the graph actor it called) died with its process or node."""
    if isinstance(error, ray.exceptions.RayTaskError):
        error = error.cause
    return isinstance(error, ray.exceptions.RayActorError | ray.exceptions.ActorUnavailableError)


def writer_name(store: str | Path) -> str:
    """The actor name for a store: derived from its absolute path, so every driver agrees."""
    return store_actor_name(ROLE, store)


def store_writer(store: str | Path) -> ray.actor.ActorHandle:
    """The writer actor of `store`, started if it does not exist yet."""
    return (
        ray.remote(StoreWriter)
        .options(**store_actor_options(ROLE, store))
        .remote(store_path(store))
    )
