"""A rich progress display with one line per ingest stage."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)


class IngestProgress:
    """Implements memory_bank.progress.ProgressSink on a rich Progress (stderr)."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
        )
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> IngestProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type, *exc_info) -> None:
        if exc_type is not None:
            # A failed run ends in one line saying why and what it left; the bars (and the
            # blank line Progress.stop adds off a terminal) would bury it.
            self._progress.live.transient = True
            self._progress.live.stop()
            return
        self._progress.stop()

    def start(self, stage: str, total: int | None = None) -> None:
        if stage in self._tasks:
            self._progress.update(self._tasks[stage], total=total)
            return
        self._tasks[stage] = self._progress.add_task(stage, total=total, detail="")

    def advance(self, stage: str, amount: int = 1) -> None:
        if stage not in self._tasks:
            self.start(stage)
        self._progress.advance(self._tasks[stage], amount)

    def finish(self, stage: str, detail: str = "") -> None:
        if stage not in self._tasks:
            self.start(stage)
        task_id = self._tasks[stage]
        task = self._progress.tasks[task_id]
        total = task.total if task.total is not None else task.completed
        self._progress.update(task_id, total=total, completed=total, detail=detail)
        self._progress.stop_task(task_id)
