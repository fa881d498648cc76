"""Which runner an ingest uses when the user leaves the choice to us (`--runner auto`).

Ray pays fixed costs an in-process ingest does not: starting a local instance, worker processes
importing the stages, per-block scheduling, and a model load in every process that embeds. On a
small corpus those costs are most of the wall time (`bench/runners.py` measures both runners on
the same corpus), so a local ingest below `ray.in_process_below_tokens` runs in this process.
Joining a cluster always uses Ray: the cluster is there to do the work.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

RunnerName = Literal["local", "ray"]
RequestedRunner = Literal["auto", "local", "ray"]
# cl100k on English prose, Markdown and conversation JSON is ~4.2-4.3 bytes per token (measured
# on data/sample and the FairytaleQA stories); a PDF's bytes overstate its text, which errs
# towards Ray for large scanned PDFs, whose parsing Ray's read tasks spread anyway.
BYTES_PER_TOKEN = 4


class RunnerChoice(BaseModel):
    runner: RunnerName
    reason: str


def estimated_tokens(files: Iterable[Path]) -> int:
    """The tokens the files probably hold, from their sizes (no file is read; one that cannot
    be looked at counts nothing here, its reader says why)."""
    return sum(_size(path) for path in files) // BYTES_PER_TOKEN


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def choose_runner(
    requested: RequestedRunner,
    tokens: int,
    joins_cluster: bool,
    in_process_below_tokens: int,
) -> RunnerChoice:
    """The runner for an ingest of about `tokens` new tokens."""
    if requested != "auto":
        return RunnerChoice(runner=requested, reason=f"--runner {requested}")
    if joins_cluster:
        return RunnerChoice(runner="ray", reason="joining a Ray cluster")
    if tokens < in_process_below_tokens:
        return RunnerChoice(
            runner="local",
            reason=f"about {tokens:,} tokens, below ray.in_process_below_tokens "
            f"({in_process_below_tokens:,}): Ray's start-up would cost more than it saves",
        )
    return RunnerChoice(
        runner="ray",
        reason=f"about {tokens:,} tokens, at or above ray.in_process_below_tokens "
        f"({in_process_below_tokens:,})",
    )
