"""Losing a worker node of the local cluster (every process of it killed with SIGKILL, as a
machine failure would): an ingest job in the middle of embedding finishes with nothing lost,
and the store's writer and graph actors come back on another node with what they
acknowledged."""

from __future__ import annotations

import time
import uuid

import pytest

from actors.graph import graph_name
from actors.writer import writer_name
from pipeline.local_cluster import HEAD
from pipeline.placement import STAGE_TASKS
from tests.cluster.conftest import (
    CONFIG,
    JOB_TIMEOUT_S,
    REPO,
    SAMPLE,
    run_job,
    store_contents,
    summary_line,
)

pytestmark = [pytest.mark.cluster]

[EMBED_TASK] = STAGE_TASKS["embed"]
EMBED_ACTOR = "MapWorker(MapBatches(EmbedChunks))"


def _embedding_worker_node(cluster, submission_id: str, timeout: float = JOB_TIMEOUT_S) -> str:
    """The name of a worker node (not the head) holding one of the job's embedding actors,
    as soon as one is up (the job is embedding from then on). The job's status is checked on
    every poll: a job that ended before one showed up fails here with its status, not at the
    deadline. The deadline is the job's own: on a loaded 2-core machine the job's workers take
    minutes to import torch and load the model before the first embedding actor is alive."""
    deadline = time.monotonic() + timeout
    seen: dict[str, tuple[str, str | None]] = {}  # actor id -> (state, node name), last seen
    while time.monotonic() < deadline:
        info = cluster.get(f"/api/jobs/{submission_id}")
        if info["status"] in ("SUCCEEDED", "FAILED", "STOPPED"):
            raise AssertionError(
                f"the job ended ({info['status']}) before an embedding actor was seen alive on "
                f"a worker node; embedding actors seen: {seen}; the job's log ends: "
                + cluster.job_logs(submission_id)[-2000:]
            )
        job = info.get("job_id")
        if job is not None:
            for actor in cluster.list_state("actors", job_id=job, class_name=EMBED_ACTOR):
                name = cluster.node_name(actor.get("node_id") or "")
                seen[actor["actor_id"]] = (actor["state"], name)
                if actor["state"] == "ALIVE" and name not in (None, HEAD):
                    return name
        time.sleep(0.2)
    raise AssertionError(f"no embedding actor on a worker node within {timeout} s: {seen}")


def test_an_ingest_job_survives_losing_a_worker_node(restore_nodes, tmp_path, single_node_store):
    cluster = restore_nodes
    store = tmp_path / "store"
    submission_id = f"node-loss-{uuid.uuid4().hex[:8]}"
    cluster.submit_job(
        [
            # Ray Data starts an actor pool's actors without waiting for them, so the embedding
            # actor on the head could embed every batch while the one on a worker node is still
            # loading the model (seen once on a loaded machine: the job ended before any
            # embedding actor on a worker was alive). Waiting for the pool keeps one there for
            # the whole of embedding.
            "env",
            f"RAY_DATA_DEFAULT_WAIT_FOR_MIN_ACTORS_S={int(JOB_TIMEOUT_S)}",
            "python",
            "-m",
            "jobs.ingest",
            str(SAMPLE),
            "--store",
            str(store),
            "--config",
            str(CONFIG),
        ],
        submission_id,
        working_dir=REPO,
    )
    victim = _embedding_worker_node(cluster, submission_id)
    victim_id = cluster.alive_nodes()[victim]
    assert cluster.kill_node(victim) > 0

    info = cluster.wait_job(submission_id, JOB_TIMEOUT_S)
    logs = cluster.job_logs(submission_id)
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    # The embedding actor on the lost node died with it and was restarted elsewhere ...
    actors = cluster.list_state("actors", job_id=info["job_id"], class_name=EMBED_ACTOR)
    assert any(int(a["num_restarts"]) >= 1 and a["node_id"] != victim_id for a in actors), actors
    # ... and the store is the one a single node builds: nothing lost, nothing twice.
    assert summary_line(logs)["chunks"] == 113
    assert store_contents(store) == store_contents(single_node_store)


def test_writer_and_graph_actors_come_back_on_another_node(restore_nodes, tmp_path):
    cluster = restore_nodes
    store = tmp_path / "store"
    info, logs = run_job(cluster, "tests.cluster.actor_driver", "pin", str(store), "node_b")
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    pinned = summary_line(logs)
    names = {writer_name(store), graph_name(store)}

    def actors() -> dict[str, dict]:
        return {a["name"]: a for a in cluster.list_state("actors") if a.get("name") in names}

    assert {a["node_id"] for a in actors().values()} == {pinned["node_id"]}

    cluster.kill_node("b")
    cluster.wait_dead("b", pinned["node_id"])
    info, logs = run_job(
        cluster,
        "tests.cluster.actor_driver",
        "check",
        str(store),
        pinned["session_id"],
        pinned["new_node"],
    )
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    checked = summary_line(logs)

    # The graph actor reloaded its checkpoint: the session's plan and the memory it added.
    assert checked["insight_doc"] == pinned["insight_doc"]
    assert "3 March 1874" in checked["node_summary"]
    assert checked["graph_nodes"] > pinned["graph_nodes"]  # + the second document's memory
    # The writer reloaded the store: the first document is kept, the second one added.
    assert checked["version_before"] == pinned["store_version"]
    assert checked["committed_documents"] == 1 and checked["sources"] == 2
    restarted = actors()
    assert {a["state"] for a in restarted.values()} == {"ALIVE"}
    assert all(a["node_id"] != pinned["node_id"] for a in restarted.values())
    assert all(int(a["num_restarts"]) >= 1 for a in restarted.values())
