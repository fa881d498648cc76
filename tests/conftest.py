"""Shared fixtures: one embedding model and one Ray cluster for the whole session (Ray started
only if a test needs it), and the read-only test stores several modules query."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="session")
def embedder():
    """The one embedding model of the test session (tests.support.shared_embedder)."""
    from tests.support import shared_embedder

    return shared_embedder()


@pytest.fixture(scope="session")
def ml_tech_store(tmp_path_factory, embedder):
    """The machine-learning and programming store of tests/unit/query_fixtures.py. Read-only:
    a test that changes a store builds its own."""
    from tests.unit.query_fixtures import ML_TECH_STORE, build_store

    return build_store(tmp_path_factory.mktemp("shared") / "ml_tech", ML_TECH_STORE, embedder)


@pytest.fixture(scope="session")
def python_store(tmp_path_factory, embedder):
    """The Python-only store of tests/unit/query_fixtures.py (read-only)."""
    from tests.unit.query_fixtures import PYTHON_ONLY_STORE, build_store

    return build_store(tmp_path_factory.mktemp("shared") / "python", PYTHON_ONLY_STORE, embedder)


@pytest.fixture(scope="session")
def team_store_template(tmp_path_factory, embedder):
    """Two teams' notes (tests/agents_support.py) ingested once, in `<dir>/store` beside
    `<dir>/notes`. Read-only: a test that writes takes a copy (`agents_support.copy_store`)."""
    from memory_bank.app.bank import MemoryBank
    from tests.agents_support import write_team_notes

    root = tmp_path_factory.mktemp("teams")
    notes = write_team_notes(root / "notes")
    MemoryBank(root / "store", embedder=embedder).add(files=[notes])
    return root / "store"


@pytest.fixture(scope="session")
def browse_bank(tmp_path_factory, embedder):
    """The store of tests/browse_store.py: a later document replaces a fact, a conversation
    beside it (read-only: the browsing views and the page in a browser read it)."""
    from tests.browse_store import build_browse_store

    return build_browse_store(tmp_path_factory.mktemp("browse"), embedder)


@pytest.fixture(scope="session")
def ray_cluster():
    import ray

    from actors.runtime import _quiet_ray_data

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}},
    )
    _quiet_ray_data()
    yield ray
    ray.shutdown()
