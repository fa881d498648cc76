"""Ingest and rebuild as `ray job submit --working-dir .` jobs on the local three-node cluster:
the work spreads over the nodes (Ray's state API says where each task ran), the store equals
a single-node build of the same corpus, and the scheduled rebuild of an unchanged store
changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_bank.store.location import StoreLocation
from memory_bank.store.reader import StoreReader
from tests.cluster.conftest import CONFIG, REPO, SAMPLE, run_job, store_contents, summary_line

pytestmark = [pytest.mark.cluster]

STAGES = ("read", "chunk", "embed", "memorize", "plan", "readme", "graph", "commit")
EMBED_ACTOR = "MapWorker(MapBatches(EmbedChunks))"


@pytest.fixture(scope="module")
def cluster_build(local_cluster, tmp_path_factory) -> tuple[Path, dict, str]:
    """data/sample ingested by a job on the cluster: the store, the job, its output."""
    store = tmp_path_factory.mktemp("cluster") / "store"
    info, logs = run_job(
        local_cluster, "jobs.ingest", str(SAMPLE), "--store", str(store), "--config", str(CONFIG)
    )
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    return store, info, logs


def test_an_ingest_job_spreads_over_the_nodes_and_equals_a_single_node_build(
    local_cluster, cluster_build, single_node_store
):
    store, info, logs = cluster_build
    placement = subprocess.run(
        [sys.executable, "-m", "pipeline.placement", info["submission_id"], "--json"],
        env=local_cluster.client_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    placed = json.loads(placement.stdout)
    stages = placed["stages"]
    print(json.dumps(placed, indent=1))  # shown with -s: the distribution
    # Which stage lands where depends on timing (Ray reuses a leased worker for queued tasks
    # of the same kind, and an embedding actor that is ready first may take every batch);
    # what is certain: every stage ran, the job's tasks ran on all three nodes, and the two
    # embedding actors (a whole CPU each, nodes of one CPU) on two nodes.
    assert [stage for stage in STAGES if stages.get(stage)] == list(STAGES)
    assert {node for row in stages.values() for node in row} == {"head", "a", "b"}
    assert len(set(placed["actors"][EMBED_ACTOR])) == 2

    assert summary_line(logs)["chunks"] == 113
    on_cluster, single = store_contents(store), store_contents(single_node_store)
    assert on_cluster["chunk_ids"] == single["chunk_ids"]
    assert on_cluster["tree"] == single["tree"]
    assert on_cluster == single  # memories, paths, READMEs too
    # The same vectors up to float noise: the cluster embeds batches of 16 chunks (padded
    # to their longest), the single node batches of 64.
    cluster_vectors = StoreReader(store).memory_vectors()
    single_vectors = StoreReader(single_node_store).memory_vectors()
    assert np.min(np.sum(cluster_vectors * single_vectors, axis=1)) > 0.9999


def test_the_scheduled_rebuild_and_a_rerun_of_an_unchanged_store_change_nothing(
    local_cluster, cluster_build
):
    store, _, _ = cluster_build
    live = StoreLocation(store).live_directory()
    version = StoreReader(store).store_version

    # The crontab line of the README, as a job.
    info, logs = run_job(
        local_cluster, "jobs.rebuild", "--store", str(store), "--config", str(CONFIG)
    )
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    rebuilt = summary_line(logs)
    assert rebuilt["commit"]["written"] is False
    assert rebuilt["commit"]["readmes_regenerated"] == []

    info, logs = run_job(
        local_cluster, "jobs.ingest", str(SAMPLE), "--store", str(store), "--config", str(CONFIG)
    )
    assert info["status"] == "SUCCEEDED", logs[-3000:]
    again = summary_line(logs)
    assert again["documents"] == 0 and again["unchanged_documents"] == 24

    assert StoreLocation(store).live_directory() == live  # no new version was written
    assert StoreReader(store).store_version == version
