"""The store's graph actor: one graph for every Ray process; killed mid-session and restarted,
it loses no acknowledged change; a Ray ingest's graph step goes through it; an intercept's
heavy part runs in Ray tasks, not in the actor's process."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from actors.graph import NAMESPACE, GraphActor, RemoteKeeper, graph_actor, graph_name
from actors.runtime import encode_on_task, map_on_tasks, put_shared
from memory_bank.app.bank import create_empty_store
from memory_bank.config import AppConfig
from memory_bank.graph.storage import GraphStorage
from memory_bank.session.agents import RoleAgents
from memory_bank.session.pieces import context_pieces
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


FERRIES = "\n\n".join(
    [
        "The night ferry leaves Harbourtown at eleven and reaches Saltisle at six.",
        "Tickets for the night ferry cost forty crowns; cabins cost extra.",
        "The bakery on Saltisle opens at seven and sells rye bread until noon.",
        "Its owner, Mira Holt, bakes with flour milled on the island.",
        "The island's lighthouse was built in 1871 and still guides the ferries at night.",
        "Visitors may climb its 212 steps on Sundays, weather permitting.",
        "Saltisle's harbour master, Jon Brekke, keeps the tide tables for the ferry crews.",
        "A second ferry, the day boat, sails at noon in summer and takes three hours.",
    ]
)


def test_an_intercept_is_drafted_in_ray_tasks_not_in_the_actor_process(
    ray_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The actor's body runs here, in the test's process: any classifying or structuring done
    in this process is counted (Ray's workers import the real agents)."""
    config = AppConfig.model_validate({"session": {"analysis_chars": 500}})
    for name in ("here", "actor"):
        create_empty_store(tmp_path / name, config)
    in_process = SessionService(GraphStorage(tmp_path / "here", config.retrieval.alpha), config)
    expected = in_process.intercept(
        in_process.open_session("Plan a trip to Saltisle").doc_id, FERRIES
    )

    calls_here: list[str] = []
    for role in ("classify", "structure"):
        real = getattr(RoleAgents, role)
        monkeypatch.setattr(
            RoleAgents,
            role,
            lambda self, *args, _real=real, _role=role: (
                calls_here.append(_role) or _real(self, *args)
            ),
        )
    actor = GraphActor(str(tmp_path / "actor"), config.model_dump(mode="json"))
    session = actor.open_session("Plan a trip to Saltisle").doc_id
    assert len(context_pieces(FERRIES, config.session.analysis_chars)) > 1
    several = actor.intercept(session, FERRIES)
    one = actor.intercept(session, "The ferry company is called Saltline.")  # a single piece

    assert calls_here == [], "the actor's process drafted a piece itself"
    # The same decomposition as in one process: the same nodes from the same context.
    assert [n.summary for n in several.new_nodes] == [n.summary for n in expected.new_nodes]
    assert len(several.new_nodes) >= 2 and one.new_nodes
    assert actor.node(one.new_nodes[0].id).summary == "The ferry company is called Saltline."


def _row_sum(matrix: np.ndarray, row: int, scale: int) -> float:
    return float(matrix[row].sum()) * scale


def test_an_argument_the_calls_share_is_put_in_the_object_store_once(ray_cluster):
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    calls = [(matrix, row, 2) for row in range(3)]
    assert map_on_tasks(_row_sum, calls, num_cpus=0.5) == [12.0, 44.0, 76.0]
    # The matrix is put once; the small numbers go with each call.
    assert list(put_shared(calls)) == [id(matrix)]


def test_many_texts_are_embedded_in_parallel_tasks_in_their_order(ray_cluster, embedder):
    # 2 CPUs at one each: two tasks of every other text, put back in the order asked.
    texts = [
        f"note {i}: the {'long ' * (i % 9)}river runs past mill number {i}" for i in range(130)
    ]
    config = AppConfig().embedding
    vectors = encode_on_task(texts, config, num_cpus=1)
    expected = embedder.encode_passages(texts)
    assert vectors.shape == expected.shape
    assert np.allclose(vectors, expected, atol=1e-5)
    assert np.allclose(encode_on_task(texts[:3], config, num_cpus=1), expected[:3], atol=1e-5)
