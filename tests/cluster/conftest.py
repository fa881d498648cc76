"""The local multi-node cluster of these tests: a head and two worker nodes of 1 CPU each
(`pipeline/local_cluster.py`), started once for the package and torn down by PID at its end;
and the single-node build of the same corpus that cluster builds are compared with."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from memory_bank.config import AppConfig, load_config
from pipeline.local_cluster import LocalCluster

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "local_cluster.yaml"
SAMPLE = REPO / "data" / "sample"
JOB_TIMEOUT_S = 600.0


@pytest.fixture(scope="package")
def local_cluster():
    cluster = LocalCluster(workers=2, cpus_per_node=1).start()
    try:
        yield cluster
    finally:
        cluster.stop()
    assert cluster.leftover_processes() == []  # not one process of the cluster left behind


@pytest.fixture(scope="package")
def cluster_config() -> AppConfig:
    return load_config(CONFIG)


@pytest.fixture(scope="package")
def single_node_store(tmp_path_factory, cluster_config, embedder) -> Path:
    """data/sample built in this process (no Ray) with the cluster's settings."""
    from memory_bank.ingest.runner import local_runner

    store = tmp_path_factory.mktemp("single") / "store"
    local_runner(cluster_config, embedder).run(store, files=[str(SAMPLE)])
    return store


def run_job(cluster: LocalCluster, module: str, *args: str) -> tuple[dict, str]:
    """`ray job submit --working-dir REPO -- python -m MODULE ARGS`, waited for; the job's
    details and output."""
    submission_id = f"{module.rsplit('.', 1)[-1]}-{uuid.uuid4().hex[:8]}"
    cluster.submit_job(["python", "-m", module, *args], submission_id, working_dir=REPO)
    info = cluster.wait_job(submission_id, JOB_TIMEOUT_S)
    return info, cluster.job_logs(submission_id)


def store_contents(store: Path) -> dict:
    """What a build must reproduce: chunk ids, memories and their paths, the tree, READMEs."""
    from memory_bank.store.reader import StoreReader

    reader = StoreReader(store)
    memories = reader.memories().drop_columns(["embedding"]).to_pylist()
    readmes = reader.readmes().to_pydict()
    return {
        "chunk_ids": [row["chunk_id"] for row in memories],
        "memories": [(row["title"], row["memory"], row["keywords"]) for row in memories],
        "paths": [row["path"] for row in memories],
        "tree": reader.tree().model_dump(mode="json"),
        "readmes": dict(zip(readmes["directory"], readmes["text"], strict=True)),
    }


@pytest.fixture
def restore_nodes(local_cluster):
    """Start again, after the test, every worker node the test killed."""
    yield local_cluster
    for name, node in list(local_cluster.nodes.items()):
        if node.process.poll() is not None:
            local_cluster.start_node(name)


def summary_line(logs: str) -> dict:
    """A job's result: the last line of its output that is a JSON object."""
    return json.loads([line for line in logs.splitlines() if line.startswith("{")][-1])
