"""Progress reporting seam between the ingest runners and whatever displays progress."""

from __future__ import annotations

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
