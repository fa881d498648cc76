"""The store's write-job actor: adds, removals and rebuilds asked for over HTTP, one at a time.

One named, detached actor per store (like the writer and the graph actor) wraps a plain
`WriteJobs` (memory_bank/agents/jobs.py), so every ingress replica sees the same jobs and a
job outlives the request that submitted it. Its jobs run on the actor's worker thread in
submission order: files are read, chunked, embedded and memorized in this actor (it loads the
embedding model for its first job and keeps it), and each commit goes through the store's
writer actor, which serializes it with every other writer of the store. Large corpora belong to
`memory-bank add` or `jobs.ingest`, which spread that work over Ray Data.

Its methods are called concurrently (status reads while a job runs, callers waiting for one),
so it runs a few calls at once; `WriteJobs` keeps its own state thread-safe.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ray

from actors.runtime import worker_llm
from actors.store_actors import store_actor_options, store_path
from actors.writer import commit_through_writer
from memory_bank.agents.jobs import (
    JobStatus,
    WriteJobs,
    WriteRequest,
    jobs_directory,
    run_write,
)
from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.index.embedders import build_embedder
from memory_bank.ingest.commit import CommitRequest
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.llm.seam import LLM
from memory_bank.schemas import CommitResult

ROLE = "jobs"
CONCURRENT_CALLS = 16  # status reads and waits beside the running job


class _WriterCommits(LocalExecutor):
    """The in-process executor, committing through the store's writer actor."""

    def commit(self, store: Path, request: CommitRequest, llm: LLM | None) -> CommitResult:
        # The writer actor asks its own LLM (the same settings, its own process).
        return commit_through_writer(store, request, self.config)


class WriteJobsActor:
    """Actor body: the store's `WriteJobs`, running each job on a `MemoryBank` of this actor."""

    def __init__(self, store: str, config: dict[str, Any]) -> None:
        settings = AppConfig.model_validate(config)
        embedder = build_embedder(settings.embedding)  # loaded by the first job, kept after
        bank = MemoryBank(
            store,
            config=settings,
            executor=lambda cfg: _WriterCommits(cfg, embedder),
            llm=worker_llm(settings.llm),
        )
        self._jobs = WriteJobs(
            jobs_directory(store), lambda request, progress: run_write(bank, request, progress)
        )

    def submit(self, request: WriteRequest, key_id: str | None) -> JobStatus:
        return self._jobs.submit(request, key_id)

    def status(self, job_id: str) -> JobStatus:
        return self._jobs.status(job_id)

    def list(self, key_id: str | None, everyone: bool) -> list[JobStatus]:
        return self._jobs.list(key_id, everyone)

    def wait(self, job_id: str, timeout: float) -> JobStatus:
        return self._jobs.wait(job_id, timeout)


def write_jobs_actor(store: str | Path, config: AppConfig) -> ray.actor.ActorHandle:
    """The write-job actor of `store`, started if it does not exist yet (with `config`)."""
    options = {**store_actor_options(ROLE, store), "max_concurrency": CONCURRENT_CALLS}
    return (
        ray.remote(WriteJobsActor)
        .options(**options)
        .remote(store_path(store), config.model_dump(mode="json"))
    )
