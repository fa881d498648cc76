"""`IngestRunner`: one ingest, rebuild or removal of a store, from sources to the commit.

An ingest processes only documents whose content hash the store lacks (`work.plan_work`;
every document when the store was made with another memory recipe), journals finished
documents as it goes (`journal.py`: a killed ingest resumes), then hands the memories to the
executor's commit, which serializes all writers of the store and applies the change to the
store as it is at that moment (`commit.py`). Where the work runs is the executor's business
(`executor.py`); the steps and their order are the same for every executor.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memory_bank.config import AppConfig
from memory_bank.errors import MemoryBankError, NothingToIngestError, StoreError
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.commit import CommitRequest
from memory_bank.ingest.executor import Executor, LocalExecutor
from memory_bank.ingest.journal import IngestJournal, ordered_by_documents
from memory_bank.ingest.progress import NullProgress, ProgressSink, StageTimer
from memory_bank.ingest.stages import read_inputs, require_something
from memory_bank.ingest.work import memory_recipe, plan_work
from memory_bank.llm import check_llm
from memory_bank.llm.ledger import take_usage
from memory_bank.llm.seam import LLM
from memory_bank.schemas import CommitResult, Document, IngestSummary
from memory_bank.store.layout import is_store
from memory_bank.store.location import StoreLocation
from memory_bank.store.reader import StoreReader
from memory_bank.store.snapshot import MemoryParts
from memory_bank.store.sources import resolve_documents

# Makes the executor an ingest runs on; `MemoryBank` and the CLI take one of these.
ExecutorFactory = Callable[[AppConfig], Executor]


class IngestRunner:
    """Adds sources to a store, re-plans it, or removes documents from it."""

    def __init__(self, config: AppConfig, executor: Executor, llm: LLM | None) -> None:
        """`llm`: the process's LLM (None: the offline roles), for the work in this process
        and an in-process commit."""
        self.config = config
        self.executor = executor
        self.llm = check_llm(config.llm, llm)

    def run(
        self,
        store: Path,
        files: Sequence[str | Path] | None = None,
        text: str | None = None,
        progress: ProgressSink | None = None,
        replan: bool = False,
        reembed: bool = False,
    ) -> IngestSummary:
        """Add `files` and `text` to the store. With `replan` (a rebuild), the whole tree is
        planned anew from the stored memories even when nothing new is given; a rebuild that
        changes nothing writes nothing."""
        timer = StageTimer(progress or NullProgress())
        started = time.perf_counter()
        store_existed = is_store(store)
        journal = IngestJournal(store, memory_recipe(self.config))
        try:
            summary = self._run(store, files, text, timer, replan, reembed, journal)
        except NothingToIngestError:
            raise
        except (MemoryBankError, OSError) as exc:
            # Said at the edge after the error: what the failed run left, or that it left nothing.
            if not store_existed:
                with contextlib.suppress(MemoryBankError, OSError):  # the first error is the news
                    StoreLocation(store).remove_unborn()
            exc.add_note(journal.fate())
            raise
        summary.stage_seconds = timer.seconds
        summary.total_seconds = time.perf_counter() - started
        return summary

    def _run(
        self,
        store: Path,
        files: Sequence[str | Path] | None,
        text: str | None,
        timer: StageTimer,
        replan: bool,
        reembed: bool,
        journal: IngestJournal,
    ) -> IngestSummary:
        self.executor.start(timer)
        with timer.stage("read"):
            loaded = read_inputs(
                files or [],
                text,
                read_files=self.executor.read_files,
                follow_links=self.config.sources.follow_links,
            )
            require_something(loaded, bool(files))
            work = plan_work(loaded, store, self.config, reembed=reembed)
        summary = IngestSummary(
            store=str(store),
            documents=work.new,
            chunks=0,
            directories=0,
            skipped=list(loaded.skipped),
            decoded=[
                f"{document.source}: {document.encoding}"
                for document in loaded.documents
                if document.encoding != "utf-8"
            ],
            unchanged_documents=work.unchanged,
            rebuilt_documents=work.rebuilt,
        )
        added = self._memorize(journal, work.documents, timer, summary)
        if added.memories or work.replace_all or (replan and is_store(store)):
            work_usage = take_usage(self.llm)
            request = CommitRequest(
                added=added,
                replan=replan,
                replace_all=work.replace_all,
                base_version=work.base_version,
                llm_usage=work_usage.model_dump(mode="json"),
            )
            with timer.stage("commit"):
                result = self.executor.commit(store, request, self.llm)
            journal.forget(doc.document_id for doc in added.documents)
            _record(summary, result)
            for step, seconds in result.stage_seconds.items():
                timer.add(f"commit: {step}", seconds)
            work_usage.merge(result.llm)
            summary.llm = work_usage.model_dump(mode="json") if work_usage.roles else {}
        elif is_store(store):
            summary.directories = StoreReader(store).meta.get("total_directories", 0)
        return summary

    def remove(self, store: Path, sources: Sequence[str]) -> CommitResult:
        """Remove the stored documents named by `sources` (a source path as ingested, a file or
        directory path that resolves to it, or a document id)."""
        if not is_store(store):
            raise StoreError(f"no memory store at {store}")
        stored = StoreReader(Path(store).resolve()).rows("documents", ["document_id", "source"])
        source_of = dict(
            zip(
                stored.column("document_id").to_pylist(),
                stored.column("source").to_pylist(),
                strict=True,
            )
        )
        return self.executor.commit(
            store, CommitRequest(remove=resolve_documents(source_of, sources)), self.llm
        )

    def _memorize(
        self,
        journal: IngestJournal,
        documents: list[Document],
        timer: StageTimer,
        summary: IngestSummary,
    ) -> MemoryParts:
        """The memories of `documents`, in document order: those an earlier run journaled,
        the rest made now and journaled batch by batch. What the commit gets is read back from
        the journal, the sentences only as it writes them, so no stage holds all of a huge
        input's derived data."""
        if not documents:
            return MemoryParts()
        ids = [doc.document_id for doc in documents]
        done, complete = journal.finished(ids)
        summary.resumed_documents = len(set(done.values()))
        summary.resumed_chunks = len(done)
        # A document journaled in part is made again from where the journal ends.
        todo = [doc for doc in documents if doc.document_id not in complete]
        if todo:
            self.executor.memorize(
                todo, 0, timer, self.llm, on_batch=journal.save, done_chunks=frozenset(done)
            )
        with timer.stage("read journal"):
            made, _ = journal.load(ids)
        return ordered_by_documents(documents, [made])


def _record(summary: IngestSummary, result: CommitResult) -> None:
    summary.commit = result
    summary.chunks = result.chunks
    summary.directories = result.directories
    summary.placed = result.placed
    # Documents another writer committed while this ingest ran count as already stored.
    summary.documents = max(0, summary.documents - result.duplicate_documents)
    summary.unchanged_documents += result.duplicate_documents


def local_runner(
    config: AppConfig, embedder: Embedder | None = None, llm: LLM | None = None
) -> IngestRunner:
    """An in-process runner (tests, benchmarks) with the offline roles unless given an `llm`."""
    return IngestRunner(config, LocalExecutor(config, embedder), llm)
