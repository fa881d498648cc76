"""The store's graph actor: one graph for every Ray process; killed mid-session and restarted,
it loses no acknowledged change; a Ray ingest's graph step goes through it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from actors.graph import NAMESPACE, RemoteKeeper, graph_actor, graph_name
from memory_bank.app.bank import create_empty_store
from memory_bank.config import AppConfig
from memory_bank.graph.storage import GraphStorage
from memory_bank.session.service import SessionService
from pipeline.executor import ray_runner

pytestmark = pytest.mark.ray


def _retry(call, seconds: float = 120.0):
    """Call until the restarted actor answers (calls during the restart fail)."""
    import ray

    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_killed_graph_actor_restarts_without_losing_acknowledged_changes(
    ray_cluster, tmp_path: Path
):
    config = AppConfig()
    store = tmp_path / "store"
    create_empty_store(store, config)
    keeper = RemoteKeeper(graph_actor(store, config))
    doc = keeper.open_session("Who is the CEO of Acme?")
    first = keeper.intercept(doc.doc_id, "Acme Corporation makes anvils. The CEO of Acme is Alice.")
    second = keeper.intercept(doc.doc_id, "The CEO of Acme is Bob, according to the register.")
    assert second.conflicts, "the second context contradicts the first"

    handle = ray_cluster.get_actor(graph_name(store), namespace=NAMESPACE)
    ray_cluster.kill(handle, no_restart=False)  # as a crash would: the actor restarts

    restored = _retry(lambda: keeper.insight_doc(doc.doc_id))
    assert restored == second.insight_doc  # the plan with its cross-validation task
    node = _retry(lambda: keeper.node(first.new_nodes[0].id))
    assert node.summary.endswith("The CEO of Acme is Alice.")
    assert [c.status for c in _retry(keeper.summary).conflicts] == ["open"]
    # The session goes on where it was: the validation settles the conflict.
    settled = _retry(
        lambda: keeper.intercept(doc.doc_id, "The annual report confirms Bob is the CEO of Acme.")
    )
    assert settled.task_type == "cross_validate" and settled.resolved
    # What the actor acknowledged is on disk: sessions outside Ray read the same graph.
    outside = SessionService(GraphStorage(store, config.retrieval.alpha), config)
    assert outside.summary().checkpoint == _retry(keeper.summary).checkpoint
    assert outside.node(settled.new_nodes[0].id).status == "current"


def test_a_ray_ingest_builds_the_graph_through_the_actor(ray_cluster, tmp_path: Path):
    config = AppConfig()
    store = tmp_path / "store"
    (tmp_path / "acme.md").write_text(
        "# Acme\n\nAcme makes anvils. The CEO of Acme is Alice Moreno.\n"
    )
    (tmp_path / "news.md").write_text(
        "# Acme news\n\nBob Tanaka is now the CEO of Acme, replacing Alice Moreno.\n"
    )
    ray_runner(config).run(store, [str(tmp_path / "acme.md")])
    summary = ray_runner(config).run(store, [str(tmp_path / "news.md")])

    assert summary.commit is not None and summary.commit.graph["conflicts"] == 1
    graph = RemoteKeeper(graph_actor(store, config)).summary()
    [conflict] = graph.conflicts
    assert (conflict.status, conflict.old_value, conflict.new_value) == (
        "resolved",
        "Alice Moreno",
        "Bob Tanaka",
    )
    assert graph.memory_nodes == 2
