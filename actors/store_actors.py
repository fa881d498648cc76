"""Names and Ray options of the per-store actors (the writer, the Query Graph): one detached,
named actor per store and role, which any process on the cluster finds from the store's path.

Both restart without limit when their process or node dies (`max_restarts=-1`): Ray starts
them again on a node that is alive, and they reload from their checkpoint in the store (the
writer from the live version, the graph from its snapshot and checkpoint log). While one is
restarting, calls to it fail; a process that asks for it by name (`get_if_exists`) gets the
restarting actor, or a new one if it is gone for good. They take no CPU: their fan-out work
runs as Ray tasks.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

NAMESPACE = "memory-bank"


def store_path(store: str | Path) -> str:
    """The absolute path every process names the store by (not resolved: the store path is a
    link that each commit moves to a new version)."""
    return str(Path(store).expanduser().absolute())


def store_actor_name(role: str, store: str | Path) -> str:
    """`store-<role>-<hash of the absolute path>`: every process derives the same name."""
    digest = hashlib.sha256(store_path(store).encode("utf-8")).hexdigest()[:24]
    return f"store-{role}-{digest}"


def store_actor_options(role: str, store: str | Path, max_concurrency: int = 1) -> dict[str, Any]:
    """`.options(...)` of the `role` actor of `store` (add a scheduling strategy to pin it);
    `max_concurrency` > 1 makes it a threaded actor (its body then does its own locking)."""
    return {
        "name": store_actor_name(role, store),
        "namespace": NAMESPACE,
        "get_if_exists": True,
        "lifetime": "detached",
        "num_cpus": 0,
        "max_concurrency": max_concurrency,
        "max_restarts": -1,
    }
