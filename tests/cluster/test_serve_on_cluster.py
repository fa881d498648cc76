"""Serve on the local cluster: two replicas on two nodes, and one of those nodes killed while a
client keeps asking. Requests caught on the lost replica may fail (they are counted); once
Serve has noticed, every request is answered, and the lost replica is started again on a
node that is alive."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from actors.serve_app import APP_NAME
from pipeline.local_cluster import HEAD

pytestmark = [pytest.mark.cluster, pytest.mark.serve]

DEPLOYMENTS = ("MemoryBank", "MemoryBankIngress")
REPLICA_CLASS = f"ServeReplica:{APP_NAME}:MemoryBank"
SERVE_TIMEOUT_S = 300.0
AFTER_RECOVERY_S = 8.0


def _serve_config(store: Path, port: int) -> dict:
    return {
        "proxy_location": "HeadOnly",  # one HTTP proxy: every node of this machine shares its ports
        "http_options": {"host": "127.0.0.1", "port": port},
        "applications": [
            {
                "name": APP_NAME,
                "route_prefix": "/",
                "import_path": "actors.serve_app:build_app",
                "args": {"store": str(store), "num_replicas": 2},
                # Both deployments (the query replicas and the FastAPI ingress in front of
                # them) twice, on two nodes: no node holds the only replica of either.
                "deployments": [
                    {"name": name, "num_replicas": 2, "max_replicas_per_node": 1}
                    for name in DEPLOYMENTS
                ],
            }
        ],
    }


def _replicas(cluster) -> dict[str, str]:
    """Alive replica actor id -> the name of its node."""
    return {
        actor["actor_id"]: cluster.node_name(actor["node_id"]) or "?"
        for actor in cluster.list_state("actors", class_name=REPLICA_CLASS, state="ALIVE")
    }


def _until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    raise AssertionError(f"{what} not within {timeout} s")


class Asker:
    """One client asking /search back to back, recording (time, answered) per request."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.results: list[tuple[float, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30.0) as client:
            while not self._stop.is_set():
                try:
                    reply = client.post("/search", json={"query": "sourdough starter feeding"})
                    answered = reply.status_code == 200 and bool(reply.json())
                except httpx.HTTPError:
                    answered = False
                self.results.append((time.monotonic(), answered))

    def __enter__(self) -> Asker:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def between(self, start: float, end: float = float("inf")) -> tuple[int, int]:
        """(answered, failed) among the requests that ended in [start, end)."""
        chosen = [ok for at, ok in self.results if start <= at < end]
        return sum(chosen), len(chosen) - sum(chosen)


def test_two_replicas_on_two_nodes_keep_answering_while_one_node_dies(
    restore_nodes, tmp_path, single_node_store
):
    cluster = restore_nodes
    port = cluster.free_port()
    config = tmp_path / "serve.yaml"
    config.write_text(yaml.safe_dump(_serve_config(single_node_store, port)))
    serve = str(cluster.ray.with_name("serve"))
    env = cluster.client_env()
    subprocess.run([serve, "deploy", str(config), "-a", cluster.dashboard_url], env=env, check=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _until(
            lambda: (
                cluster.get("/api/serve/applications/")["applications"]
                .get(APP_NAME, {})
                .get("status")
                == "RUNNING"
            ),
            SERVE_TIMEOUT_S,
            "the application running",
        )
        replicas = _replicas(cluster)
        assert len(replicas) == 2 and len(set(replicas.values())) == 2  # one per node
        victim = next(node for node in replicas.values() if node != HEAD)
        survivor = next(actor for actor, node in replicas.items() if node != victim)

        with Asker(url) as asker:
            _until(lambda: asker.between(0)[0] >= 5, 60, "five answers before the kill")
            killed_at = time.monotonic()
            cluster.kill_node(victim)
            # Recovered: a second replica again, on a node that is alive.
            _until(
                lambda: len(r := _replicas(cluster)) == 2 and victim not in r.values(),
                SERVE_TIMEOUT_S,
                "a new replica on a live node",
            )
            recovered_at = time.monotonic()
            time.sleep(AFTER_RECOVERY_S)

        before = asker.between(0, killed_at)
        blip = asker.between(killed_at, recovered_at)
        after = asker.between(recovered_at)
        print(
            f"answered/failed before the kill {before}, from the kill until a new replica "
            f"ran ({recovered_at - killed_at:.1f} s) {blip}, after {after}"
        )
        assert before[1] == 0
        assert blip[0] > 0, "the surviving replica answered while the node was gone"
        assert blip[1] <= 3, "only requests caught on the lost replica may fail"
        assert after[0] > 0 and after[1] == 0
        assert survivor in _replicas(cluster)  # the surviving replica was never replaced
    finally:
        subprocess.run([serve, "shutdown", "-y", "-a", cluster.dashboard_url], env=env, check=False)
