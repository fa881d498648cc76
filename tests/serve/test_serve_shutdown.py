"""`memory-bank serve` as a user runs it, stopped with SIGTERM: it exits cleanly and leaves no
process behind, neither the Serve actors nor the Ray daemons it started (raylet, GCS, the
dashboard and runtime-env agents, which outlived it before). It starts its own Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.load_client import free_port

pytestmark = [pytest.mark.serve]

COMMAND = Path(sys.executable).with_name("memory-bank")
READY_TIMEOUT_S = 240.0  # a cold Ray, Serve and model load on a busy two-core machine
EXIT_TIMEOUT_S = 90.0


def _wait_until_serving(process: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"memory-bank serve exited early with {process.returncode}")
        try:
            if httpx.get(url, timeout=5.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    pytest.fail(f"memory-bank serve did not answer {url} within {READY_TIMEOUT_S:.0f} s")


def _command(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # gone meanwhile
        return ""


def _alive(processes: list[psutil.Process]) -> list[str]:
    left = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{process.pid} {_command(process)[:100]}")
        except psutil.NoSuchProcess:
            continue
    return left


def _in_session(session_id: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == session_id:
                found.append(process)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return found


def test_sigterm_stops_the_server_and_every_ray_process_it_started(ml_tech_store, tmp_path):
    port = free_port()
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    environment.pop("RAY_ADDRESS", None)  # its own local Ray, not the tests' one
    output = tmp_path / "serve.log"
    started: list[psutil.Process] = []
    with output.open("w") as log:
        # Its own session: every process it starts is findable by the session id afterwards.
        server = subprocess.Popen(
            [str(COMMAND), "serve", "--store", str(ml_tech_store), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )
    try:
        _wait_until_serving(server, f"http://127.0.0.1:{port}/healthz")
        started = psutil.Process(server.pid).children(recursive=True)
        names = " ".join(_command(process) for process in started)
        assert "raylet" in names and "gcs_server" in names  # it really runs a Ray of its own

        server.send_signal(signal.SIGTERM)
        exit_code = server.wait(timeout=EXIT_TIMEOUT_S)
        deadline = time.monotonic() + 15.0  # processes told to stop may take a moment to go
        while (left := _alive(started) + _alive(_in_session(server.pid))) and (
            time.monotonic() < deadline
        ):
            time.sleep(0.5)
    finally:
        # Leave the machine clean whatever happened above.
        if server.poll() is None:
            server.kill()
        for process in [*started, *_in_session(server.pid)]:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass

    assert exit_code == 0, output.read_text()[-3000:]
    assert "stopping" in output.read_text()
    assert left == [], left
