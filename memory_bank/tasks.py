"""How independent calls fan out: the serial map the domain uses by default, and the protocol a
parallel map (Ray tasks, `pipeline/`) implements in its place.

Domain code that has independent pieces of work (planning coarse taxonomy groups, composing the
READMEs of top-level subtrees, reading source files) takes a `TaskMap` argument instead of
knowing how or where the calls run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

R = TypeVar("R")


class TaskMap(Protocol):
    """Call `function(*arguments)` for every tuple of `calls`; results in the order of `calls`."""

    def __call__(self, function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]: ...


def run_serially(function: Callable[..., R], calls: Sequence[tuple[Any, ...]]) -> list[R]:
    """The in-process `TaskMap`: one call after the other."""
    return [function(*arguments) for arguments in calls]
