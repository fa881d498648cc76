"""Progress reporting seam between the ingest runner and whatever displays progress, and the
timer that measures each stage and reports it there."""

from __future__ import annotations

import time
from typing import Protocol


class ProgressSink(Protocol):
    def start(self, stage: str, total: int | None = None) -> None: ...

    def advance(self, stage: str, amount: int = 1) -> None: ...

    def finish(self, stage: str, detail: str = "") -> None: ...


class NullProgress:
    """Discards progress; the default for the Python API."""

    def start(self, stage: str, total: int | None = None) -> None:
        pass

    def advance(self, stage: str, amount: int = 1) -> None:
        pass

    def finish(self, stage: str, detail: str = "") -> None:
        pass


class StageTimer:
    """Times stages and reports them to a progress sink."""

    def __init__(self, progress: ProgressSink) -> None:
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        """Record time measured elsewhere (e.g. busy seconds summed over Ray workers)."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def stage(self, name: str, total: int | None = None) -> _TimedStage:
        return _TimedStage(self, name, total)


class _TimedStage:
    def __init__(self, timer: StageTimer, name: str, total: int | None) -> None:
        self.timer, self.name, self.total = timer, name, total

    def __enter__(self) -> None:
        self.started = time.perf_counter()
        self.timer.progress.start(self.name, self.total)

    def __exit__(self, exc_type, *rest) -> None:
        elapsed = time.perf_counter() - self.started
        self.timer.add(self.name, elapsed)
        if exc_type is None:
            if self.total:
                self.timer.progress.advance(self.name, self.total)
            self.timer.progress.finish(self.name, f"{elapsed:.1f}s")
