"""A real multi-node Ray cluster on one machine, for the cluster tests, `make cluster-demo` and
`bench/ingest.py --nodes`.

Each node is its own `ray start --block` process (the head with `--head`, the others joining
it with `--address`), in its own session, with its own temp dir, ports, `--num-cpus` and a
custom resource named after the node (`node_head`, `node_a`, ...) so work can be aimed at it.
A node is stopped, or killed as a crash would, by signalling exactly the processes of its
session (raylet, agents, workers): never `ray stop`, which ends every Ray process on the
machine, other people's included.

Ray 2.60 turns token authentication on by default: the cluster gets a random token of its own
(`RAY_AUTH_MODE=token`, `RAY_AUTH_TOKEN`) in every node's environment and in `client_env()`,
never the machine's shared `~/.ray/auth_token`. Clients talk to it in subprocesses with that
environment (`ray job submit`, `python -m ...`), or over the dashboard's HTTP API here.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEAD = "head"
# Ports are drawn from below Linux's default ephemeral range (32768-60999), where outgoing
# connections would take them.
PORT_LOW, PORT_HIGH = 20_000, 32_000
WORKER_PORTS_PER_NODE = 40
# A killed node is declared dead after `period x threshold` without an answer (Ray's default
# is 3 s x 5); quicker here, still tolerant of a loaded 2-core machine.
HEALTH_CHECK = {"health_check_period_ms": 1000, "health_check_failure_threshold": 5}
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
JOB_ENDED = {"SUCCEEDED", "FAILED", "STOPPED"}


class ClusterError(RuntimeError):
    """The local cluster could not be started or did not answer."""


@dataclass
class NodeProcess:
    """One `ray start --block` process and what it was started with."""

    name: str
    process: subprocess.Popen
    temp_dir: Path
    log: Path
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def resource(self) -> str:
        return node_resource(self.name)


def node_resource(name: str) -> str:
    """The custom resource every node carries once: `node_<name>`."""
    return f"node_{name}"


class LocalCluster:
    """A head and `workers` more nodes, `cpus_per_node` CPUs each, on this machine.

    Use as a context manager, or call `start()` and `stop()`."""

    def __init__(
        self,
        workers: int = 2,
        cpus_per_node: int = 1,
        object_store_bytes: int = 400 * 1024**2,
        root: Path | None = None,
        ray_executable: Path | None = None,
        pin_cores: bool = False,
    ) -> None:
        self.workers = workers
        # Each node's processes on one core of their own (node i on core i mod cores), so that
        # a node of one CPU really has one core: for measuring how work scales with nodes.
        self.pin_cores = pin_cores
        self.cpus_per_node = cpus_per_node
        self.object_store_bytes = object_store_bytes
        # Short paths: Ray puts Unix sockets under the temp dir (108-byte limit).
        self.root = root or Path(tempfile.mkdtemp(prefix="mbc-", dir="/tmp"))
        self.ray = ray_executable or Path(sys.executable).with_name("ray")
        self.token = secrets.token_hex(32)
        self.nodes: dict[str, NodeProcess] = {}
        self.sessions: list[int] = []  # of every node ever started here, killed ones too
        self._taken: set[int] = set()
        self.gcs_port = self.free_port()
        self.dashboard_port = self.free_port()
        self.client_server_port = self.free_port()

    # --- addresses and environment ------------------------------------------------------------

    @property
    def address(self) -> str:
        """The GCS address, for `ray.init(address=...)` / `ray start --address`."""
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        """The dashboard, for `ray job submit --address` and the state API."""
        return f"http://127.0.0.1:{self.dashboard_port}"

    def client_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for processes that use this cluster (drivers, `ray job submit`)."""
        env = dict(os.environ if base is None else base)
        env.update(
            RAY_ADDRESS=self.address,
            RAY_API_SERVER_ADDRESS=self.dashboard_url,
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=self.token,
            RAY_USAGE_STATS_ENABLED="0",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
        )
        env.pop("RAY_AUTH_TOKEN_PATH", None)
        # `python` in a job's entry point is the interpreter that runs these nodes.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        return env

    # --- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        """Start the head, then the workers (`a`, `b`, ...); return once all are alive."""
        try:
            self.start_node(HEAD)
            for index in range(self.workers):
                self.start_node(chr(ord("a") + index))
        except BaseException:
            self.stop()
            raise
        return self

    def start_node(self, name: str) -> NodeProcess:
        """Start node `name` (again, after `kill_node`) and wait until the cluster sees it."""
        if name in self.nodes and self.nodes[name].process.poll() is None:
            raise ClusterError(f"node {name} is already running")
        temp_dir = self.root / name
        temp_dir.mkdir(parents=True, exist_ok=True)
        ports = {
            "node-manager-port": self.free_port(),
            "object-manager-port": self.free_port(),
            "dashboard-agent-listen-port": self.free_port(),
            "dashboard-agent-grpc-port": self.free_port(),
            "runtime-env-agent-port": self.free_port(),
            "metrics-export-port": self.free_port(),
        }
        low = self._free_range(WORKER_PORTS_PER_NODE)
        ports.update({"min-worker-port": low, "max-worker-port": low + WORKER_PORTS_PER_NODE - 1})
        command = [
            str(self.ray),
            "start",
            "--block",
            "--disable-usage-stats",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={self.cpus_per_node}",
            f"--resources={json.dumps({node_resource(name): 1})}",
            f"--temp-dir={temp_dir}",
            f"--object-store-memory={self.object_store_bytes}",
            *(f"--{flag}={port}" for flag, port in ports.items()),
        ]
        if name == HEAD:
            command += [
                "--head",
                f"--port={self.gcs_port}",
                "--include-dashboard=true",
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={self.dashboard_port}",
                f"--ray-client-server-port={self.client_server_port}",
                f"--system-config={json.dumps(HEALTH_CHECK)}",
            ]
        else:
            command.append(f"--address={self.address}")
        log = self.root / f"{name}.log"
        cores = sorted(os.sched_getaffinity(0))
        core = cores[len(self.sessions) % len(cores)]
        with log.open("ab") as out:
            process = subprocess.Popen(
                command,
                env=self.client_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # the node's processes: exactly this session
                # Inherited by everything the node starts (raylet, agents, workers).
                preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if self.pin_cores else None,
            )
        self.sessions.append(process.pid)
        node = NodeProcess(name, process, temp_dir, log, ports)
        self.nodes[name] = node
        self._wait_alive(node)
        return node

    def kill_node(self, name: str) -> int:
        """Kill every process of node `name` with SIGKILL, as a machine failure would; returns
        how many were killed."""
        if name == HEAD:
            raise ClusterError("killing the head ends the cluster; kill a worker node")
        node = self.nodes[name]
        killed = _signal_session(node.process.pid, signal.SIGKILL, grace_s=0.0)
        node.process.wait(timeout=30)
        return killed

    def stop(self) -> None:
        """Stop every node: SIGTERM to each `ray start`, which stops its node's processes, then
        SIGKILL to whatever of its session is left after a grace period. Removes the temp dirs."""
        for node in self.nodes.values():
            if node.process.poll() is None:
                node.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for node in self.nodes.values():
            _signal_session(
                node.process.pid, signal.SIGKILL, grace_s=max(0.0, deadline - time.monotonic())
            )
            try:
                node.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                node.process.kill()
        self.nodes.clear()
        shutil.rmtree(self.root, ignore_errors=True)

    def leftover_processes(self) -> list[int]:
        """PIDs still alive in the session of any node ever started here (none after
        `stop()`)."""
        return [pid for session in self.sessions for pid in _session_pids(session)]

    # --- state --------------------------------------------------------------------------------

    def get(self, path: str, params: dict[str, Any] | None = None, timeout: float = 30.0) -> Any:
        """GET a JSON document from the dashboard's HTTP API (with the cluster's token)."""
        query = f"?{urllib.parse.urlencode(params, doseq=True)}" if params else ""
        request = urllib.request.Request(
            f"{self.dashboard_url}{path}{query}",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))

    def list_state(self, resource: str, **equal: str) -> list[dict[str, Any]]:
        """Ray's state API over HTTP (`ray list <resource>`): nodes, actors, tasks, ... whose
        fields equal the given values, in detail."""
        params: dict[str, Any] = {"limit": 10_000, "detail": 1}
        if equal:
            params.update(
                filter_keys=list(equal),
                filter_predicates=["="] * len(equal),
                filter_values=list(equal.values()),
            )
        return self.get(f"/api/v0/{resource}", params)["data"]["result"]["result"]

    def node_states(self) -> list[dict[str, Any]]:
        """Ray's state API `list_nodes`: node_id, state, resources_total, ..."""
        return self.list_state("nodes")

    def node_name(self, node_id: str) -> str | None:
        """The name of the node with Ray id `node_id` (None for a node not of this cluster)."""
        return next((self._name_of(s) for s in self.node_states() if s["node_id"] == node_id), None)

    def alive_nodes(self) -> dict[str, str]:
        """Node name -> Ray node id, for the nodes the cluster holds alive."""
        return {
            name: state["node_id"]
            for state in self.node_states()
            if state["state"] == "ALIVE" and (name := self._name_of(state)) is not None
        }

    def _name_of(self, state: dict[str, Any]) -> str | None:
        resources = state.get("resources_total", {})
        return next((name for name in self.nodes if node_resource(name) in resources), None)

    # --- jobs ---------------------------------------------------------------------------------

    def submit_job(
        self,
        entrypoint: Sequence[str],
        submission_id: str,
        working_dir: Path | None = None,
        follow: bool = False,
    ) -> subprocess.CompletedProcess:
        """`ray job submit [--working-dir DIR] -- ENTRYPOINT`; with `follow` the command
        streams the job's output and returns when it ends, else it returns once submitted."""
        command = [
            str(self.ray),
            "job",
            "submit",
            f"--address={self.dashboard_url}",
            f"--submission-id={submission_id}",
        ]
        if working_dir is not None:
            command.append(f"--working-dir={working_dir}")
        if not follow:
            command.append("--no-wait")
        return subprocess.run(
            [*command, "--", *entrypoint],
            env=self.client_env(),
            cwd=working_dir,
            check=True,
            capture_output=not follow,
            text=True,
        )

    def wait_job(self, submission_id: str, timeout: float) -> dict[str, Any]:
        """The job's details (`status`, `job_id`, ...) once it succeeded, failed or stopped."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.get(f"/api/jobs/{submission_id}")
            if info["status"] in JOB_ENDED:
                return info
            if time.monotonic() > deadline:
                raise ClusterError(f"job {submission_id} still {info['status']} after {timeout} s")
            time.sleep(1.0)

    def job_logs(self, submission_id: str) -> str:
        return self.get(f"/api/jobs/{submission_id}/logs")["logs"]

    def wait_dead(self, name: str, node_id: str, timeout: float = 60.0) -> None:
        """Wait until the cluster has declared node `name` (id `node_id`) dead."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = {state["node_id"]: state["state"] for state in self.node_states()}
            if states.get(node_id) == "DEAD":
                return
            time.sleep(0.5)
        raise ClusterError(f"node {name} ({node_id}) still not declared dead after {timeout} s")

    def _wait_alive(self, node: NodeProcess) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if node.process.poll() is not None:
                raise ClusterError(
                    f"`ray start` of node {node.name} exited ({node.process.returncode}):\n"
                    + _tail(node.log)
                )
            try:
                if node.name in self.alive_nodes():
                    return
            except OSError:  # the dashboard is not up yet
                pass
            time.sleep(0.5)
        raise ClusterError(
            f"node {node.name} not alive after {START_TIMEOUT_S} s:\n{_tail(node.log)}"
        )

    # --- ports --------------------------------------------------------------------------------

    def free_port(self) -> int:
        """A port free on this machine and not handed out by this cluster before."""
        for _ in range(1000):
            port = random.randrange(PORT_LOW, PORT_HIGH)
            if port not in self._taken and _bindable(port):
                self._taken.add(port)
                return port
        raise ClusterError("no free port found")

    def _free_range(self, count: int) -> int:
        for _ in range(200):
            low = random.randrange(PORT_LOW, PORT_HIGH - count)
            span = range(low, low + count)
            if not self._taken.intersection(span) and all(_bindable(port) for port in span):
                self._taken.update(span)
                return low
        raise ClusterError(f"no {count} consecutive free ports found")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


def _session_pids(session: int) -> list[int]:
    """Processes whose session id is `session` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # Fields after the command (which may hold spaces) in parentheses: state ppid pgrp sid.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == session and fields[0] != "Z":  # a zombie is dead already
            pids.append(int(entry.name))
    return pids


def _signal_session(session: int, signum: int, grace_s: float) -> int:
    """After `grace_s` for the processes of `session` to end on their own, send `signum` to the
    rest, until none is left (a dying raylet may still be starting workers). Returns how many
    processes were signalled."""
    deadline = time.monotonic() + grace_s
    while _session_pids(session) and time.monotonic() < deadline:
        time.sleep(0.2)
    signalled: set[int] = set()
    stop_at = time.monotonic() + 30
    while (pids := _session_pids(session)) and time.monotonic() < stop_at:
        for pid in pids:
            try:
                os.kill(pid, signum)
                signalled.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return len(signalled)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
