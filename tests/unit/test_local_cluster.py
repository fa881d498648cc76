"""The parts of the local cluster and the placement report that need no Ray: a node's processes
found and ended by session, ports never handed out twice, the stage-by-node table."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

from pipeline.local_cluster import (
    WORKER_PORTS_PER_NODE,
    LocalCluster,
    _session_pids,
    _signal_session,
)
from pipeline.placement import STAGE_OF, format_table


def test_a_session_is_ended_to_its_last_process_and_nothing_else(tmp_path):
    # A stand-in for a node: a parent with children and a grandchild in one new session.
    node = subprocess.Popen(
        ["sh", "-c", "sleep 120 & (sleep 120 & sleep 120) & wait"], start_new_session=True
    )
    bystander = subprocess.Popen(["sleep", "120"])  # our session: must survive
    try:
        deadline = time.monotonic() + 10
        while len(_session_pids(node.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_session_pids(node.pid)) >= 4
        assert _signal_session(node.pid, signal.SIGKILL, grace_s=0.0) >= 4
        node.wait(timeout=10)
        assert _session_pids(node.pid) == []
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_ports_are_free_and_never_handed_out_twice():
    cluster = LocalCluster(workers=2)
    try:
        single = [cluster.free_port() for _ in range(20)]
        low = cluster._free_range(WORKER_PORTS_PER_NODE)
        span = set(range(low, low + WORKER_PORTS_PER_NODE))
        fixed = {cluster.gcs_port, cluster.dashboard_port, cluster.client_server_port}
        assert len(set(single) | fixed) == len(single) + len(fixed)
        assert not span & (set(single) | fixed)
        for port in [*single, low]:
            with socket.socket() as probe:
                probe.bind(("", port))
    finally:
        cluster.stop()
    assert not cluster.root.exists()


def test_the_placement_table_has_a_row_per_stage_and_a_column_per_node():
    placement = {"stages": {"read": {"a": 1, "b": 1}, "embed": {"head": 4}}, "actors": {}}
    lines = format_table(placement).splitlines()
    assert lines[0].split() == ["stage", "a", "b", "head", "nodes"]
    assert lines[2].split() == ["read", "1", "1", "0", "2"]
    assert lines[3].split() == ["embed", "0", "0", "4", "1"]
    assert STAGE_OF["MapBatches(memorize_batch)"] == "memorize"
