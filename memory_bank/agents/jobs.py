"""Write jobs: adds, removals and rebuilds asked for over HTTP or MCP, run one at a time.

A write can take from seconds (a note) to hours (a corpus), longer than a request may wait, so
each becomes a job: it is queued and answered at once with its id, and its status (state, the
stage running, progress per stage, counts, skipped sources, the error) is there to read until
it is done. Jobs of one store run one after the other, in the order submitted, on one worker
thread; their commits go through the store's single writer (the writer actor on Ray, the store
lock in-process). Each status is kept as `.<name>.jobs/<id>.json` beside the store, so the list
survives a restart; a job that was queued or running when its process stopped is marked failed
(an add can simply be submitted again: documents already committed are not added twice).
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_bank.errors import MemoryBankError, SessionError, StorageError
from memory_bank.schemas import CommitResult, IngestSummary
from memory_bank.store.atomic import atomic_write_text
from memory_bank.store.disk import error_line, writing

if TYPE_CHECKING:
    from memory_bank.app.bank import MemoryBank

JobKind = Literal["add", "remove", "rebuild"]
JobState = Literal["queued", "running", "succeeded", "failed"]
logger = logging.getLogger(__name__)
INTERRUPTED = "interrupted: the server stopped before the job finished; submit it again"


class WriteRequest(BaseModel):
    """What one job does: add `files` (already checked to be allowed), remove the documents
    named by `sources`, or rebuild the tree."""

    model_config = ConfigDict(extra="forbid")

    kind: JobKind
    files: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class StageProgress(BaseModel):
    done: int = 0
    total: int | None = None
    finished: bool = False
    detail: str = ""  # e.g. the stage's time, once finished


class JobStatus(BaseModel):
    """A job as its status endpoint shows it."""

    id: str
    kind: JobKind
    state: JobState = "queued"
    key_id: str | None = None  # the key that submitted it (None: the local owner)
    submitted_at: str
    started_at: str | None = None
    finished_at: str | None = None
    files: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)
    stage: str | None = None  # the stage running now
    progress: dict[str, StageProgress] = Field(default_factory=dict)
    documents: int = 0  # added
    unchanged_documents: int = 0  # already stored
    chunks: int = 0  # memories added
    removed_documents: int = 0
    removed_chunks: int = 0
    skipped: list[str] = Field(default_factory=list)  # "source: reason"
    store_version: str | None = None  # after the commit
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.state in ("succeeded", "failed")


JobOutcome = IngestSummary | CommitResult
# Runs one job's work with a progress sink (the caller's MemoryBank add / remove / rebuild).
JobRunner = Callable[[WriteRequest, "JobProgress"], JobOutcome]


class JobProgress:
    """The progress sink of one job: the runner's stages land in its status."""

    def __init__(self, jobs: WriteJobs, job_id: str) -> None:
        self._jobs = jobs
        self._job_id = job_id

    def start(self, stage: str, total: int | None = None) -> None:
        def update(status: JobStatus) -> None:
            status.stage = stage
            status.progress[stage] = StageProgress(total=total)

        self._jobs._update(self._job_id, update, save=True)

    def advance(self, stage: str, amount: int = 1) -> None:
        def update(status: JobStatus) -> None:
            status.progress.setdefault(stage, StageProgress()).done += amount

        self._jobs._update(self._job_id, update, save=False)

    def finish(self, stage: str, detail: str = "") -> None:
        def update(status: JobStatus) -> None:
            progress = status.progress.setdefault(stage, StageProgress())
            progress.finished, progress.detail = True, detail
            status.stage = None

        self._jobs._update(self._job_id, update, save=True)


class WriteJobs:
    """The write jobs of one store (see the module docstring). `run` does a job's work; with
    `inline`, `submit` runs it before returning (one process serving one agent: stdio)."""

    def __init__(self, directory: Path, run: JobRunner, inline: bool = False) -> None:
        self.directory = Path(directory)
        self._run = run
        self._inline = inline
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        self._jobs: dict[str, JobStatus] = self._load()
        self._queue: queue.Queue[str] = queue.Queue()
        self._pending: dict[str, WriteRequest] = {}  # queued jobs' requests
        self._worker: threading.Thread | None = None

    def submit(self, request: WriteRequest, key_id: str | None = None) -> JobStatus:
        status = JobStatus(
            id=secrets.token_hex(8),
            kind=request.kind,
            key_id=key_id,
            submitted_at=_now(),
            files=request.files,
            sources=request.sources,
        )
        with self._lock:
            self._save(status)  # first: a job that cannot be recorded is not taken
            self._jobs[status.id] = status
        if self._inline:
            self._execute(status.id, request)
        else:
            self._pending[status.id] = request
            self._queue.put(status.id)
            self._ensure_worker()
        return self.status(status.id)

    def status(self, job_id: str) -> JobStatus:
        with self._lock:
            status = self._jobs.get(job_id)
            if status is None:
                raise SessionError(f"no write job {job_id!r}")
            return status.model_copy(deep=True)

    def list(self, key_id: str | None = None, everyone: bool = False) -> list[JobStatus]:
        """Jobs newest first: every job with `everyone`, else those `key_id` submitted."""
        with self._lock:
            jobs = [
                job.model_copy(deep=True)
                for job in self._jobs.values()
                if everyone or job.key_id == key_id
            ]
        return sorted(jobs, key=lambda job: job.submitted_at, reverse=True)

    def wait(self, job_id: str, timeout: float) -> JobStatus:
        """The job's status once it is done, or as it is after `timeout` seconds."""
        with self._finished:
            self._finished.wait_for(
                lambda: job_id not in self._jobs or self._jobs[job_id].done, timeout
            )
        return self.status(job_id)

    # --- the worker -------------------------------------------------------------------------

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="write-jobs", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        while True:
            job_id = self._queue.get()
            self._execute(job_id, self._pending.pop(job_id))

    def _execute(self, job_id: str, request: WriteRequest) -> None:
        def started(status: JobStatus) -> None:
            status.state, status.started_at = "running", _now()

        try:
            self._update(job_id, started, save=True)
            outcome = self._run(request, JobProgress(self, job_id))
        except (MemoryBankError, OSError) as exc:  # one line: what failed, what to do
            self._finish(job_id, error=error_line(exc))
        except Exception as exc:  # a bug, but the job must not stay "running" forever
            self._finish(job_id, error=f"{type(exc).__name__}: {exc}")
        else:
            self._finish(job_id, outcome=outcome)

    def _finish(
        self, job_id: str, outcome: JobOutcome | None = None, error: str | None = None
    ) -> None:
        def finished(status: JobStatus) -> None:
            status.finished_at, status.stage = _now(), None
            status.state = "failed" if error is not None else "succeeded"
            status.error = error
            if isinstance(outcome, IngestSummary):
                status.documents, status.chunks = outcome.documents, outcome.chunks
                status.unchanged_documents = outcome.unchanged_documents
                status.skipped = list(outcome.skipped)
                if outcome.commit is not None:
                    status.store_version = outcome.commit.store_version
                    status.removed_documents = outcome.commit.removed_documents
                    status.removed_chunks = outcome.commit.removed_chunks
            elif isinstance(outcome, CommitResult):
                status.store_version = outcome.store_version
                status.removed_documents = outcome.removed_documents
                status.removed_chunks = outcome.removed_chunks

        try:
            self._update(job_id, finished, save=True)
        except StorageError as exc:  # this process still knows; a restart will call it lost
            logger.warning("write job %s: its status is not saved: %s", job_id, exc)
        with self._finished:
            self._finished.notify_all()

    def _update(self, job_id: str, change: Callable[[JobStatus], None], save: bool) -> None:
        with self._lock:
            status = self._jobs[job_id]
            change(status)
            if save:
                self._save(status)

    # --- files ------------------------------------------------------------------------------

    def _save(self, status: JobStatus) -> None:
        path = self.directory / f"{status.id}.json"
        with writing(path):
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, status.model_dump_json(indent=1))

    def _load(self) -> dict[str, JobStatus]:
        jobs: dict[str, JobStatus] = {}
        if not self.directory.is_dir():
            return jobs
        for path in sorted(self.directory.glob("*.json")):
            try:
                status = JobStatus.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # a torn or foreign file; the job it held is lost, not the others
            if not status.done:
                status.state, status.error, status.finished_at = "failed", INTERRUPTED, _now()
                self._save(status)
            jobs[status.id] = status
        return jobs


def run_write(bank: MemoryBank, request: WriteRequest, progress: JobProgress) -> JobOutcome:
    """One write job's work on `bank` (whatever executor it commits through)."""
    if request.kind == "add":
        return bank.add(files=request.files, progress=progress)
    if request.kind == "remove":
        return bank.remove(request.sources)
    return bank.rebuild(progress=progress)


def jobs_directory(store: str | Path) -> Path:
    """`.<name>.jobs/` beside the store."""
    path = Path(store).expanduser().absolute()
    return path.parent / f".{path.name}.jobs"


def uploads_directory(store: str | Path) -> Path:
    """`.<name>.uploads/` beside the store: files sent over HTTP, kept as the sources of what
    they added."""
    path = Path(store).expanduser().absolute()
    return path.parent / f".{path.name}.uploads"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")
