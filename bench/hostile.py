"""Hostile and huge inputs, the figures: `python bench/hostile.py links|serve|disk`.

- links: a folder with a symlink loop, a broken link and links to system paths is ingested; each
  good file is a document, each bad one is skipped with its reason.
- serve (starts Ray: `flock /tmp/ray.lock`): on Ray Serve at 127.0.0.1, a 1 MB intercept, the
  largest intercept the limits accept with GET /sessions/{id} of another session polled while
  it runs (p95, beside its p95 with no intercept running), and a 50 MB body streamed without
  Content-Length (how much was sent before the 413).
- disk (needs root, for a small tmpfs): `memory-bank add` and a first `ingest` on a full disk:
  exit status, the lines on stderr, the old store and `verify`, what the journal holds.
Timings go with `uptime`'s load average: run timings under `flock /tmp/bench.lock`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from tests.load_client import free_port, post_chunked_until_answered  # noqa: E402

SAMPLE = REPO / "data" / "sample"
CLI = [sys.executable, "-m", "memory_bank.cli.main"]
console = Console(width=150)


def load_average() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


# --- links ---------------------------------------------------------------------------------------


def links(work: Path) -> None:
    folder = work / "input"
    (folder / "sub").mkdir(parents=True)
    (folder / "other").mkdir()
    (folder / "good.md").write_text("# Lighthouse\n\nThe keeper lit the lamp at dusk.")
    (folder / "sub" / "ferry.txt").write_text("The night ferry leaves at eleven.")
    (folder / "other" / "bread.txt").write_text("A starter doubles within six hours.")
    (folder / "loop_a.md").symlink_to("loop_b.md")
    (folder / "loop_b.md").symlink_to("loop_a.md")
    (folder / "dangling.txt").symlink_to("nowhere.txt")
    (folder / "passwd.txt").symlink_to("/etc/passwd")
    (folder / "etc").symlink_to("/etc", target_is_directory=True)
    (folder / "sub" / "up").symlink_to("..", target_is_directory=True)
    summary = MemoryBank(work / "store").add(files=[folder])
    table = Table(title="a folder with a symlink loop, a broken link and links to system paths")
    table.add_column("outcome")
    table.add_column("path: reason")
    for document in sorted(summary.skipped):
        table.add_row("skipped", document)
    table.add_row("ingested", f"{summary.documents} documents (the 3 good files)")
    console.print(table)


# --- serve ---------------------------------------------------------------------------------------


def serve(work: Path) -> None:
    import httpx
    import ray
    from ray import serve as ray_serve

    from actors.serve_app import start

    store = work / "store"
    MemoryBank(store).add(files=[SAMPLE / "notes"])
    config = AppConfig()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        url = start(store, config, host="127.0.0.1", port=free_port())
        with httpx.Client(base_url=url, timeout=600.0) as http:
            table = Table(title=f"intercepts over HTTP ({load_average()})")
            for column in ("request", "status", "seconds", "GET /sessions/{other} during it"):
                table.add_column(column)
            busy = http.post("/sessions", json={"task_goal": "Log the ferries"}).json()["doc_id"]
            other = http.post("/sessions", json={"task_goal": "Bake bread"}).json()["doc_id"]
            http.get(f"/sessions/{other}")
            idle = _poll(http, other, threading.Event(), seconds=15.0)
            table.add_row("none (the baseline at this load)", "", "", _latency(idle))
            for label, chars in (
                ("1 MB context", 1_000_000),
                (
                    f"{config.limits.max_context_chars:,}-character context (the limit)",
                    config.limits.max_context_chars,
                ),
            ):
                status, seconds, polls = _intercept_while_polling(http, busy, other, chars)
                table.add_row(label, str(status), f"{seconds:.2f}", _latency(polls))
            sent, status = _stream_oversized_body(url)
            table.add_row(
                "50 MB body, chunked (no Content-Length)",
                str(status),
                "",
                f"{sent / 2**20:.1f} MB sent before the answer (limit "
                f"{config.limits.max_body_bytes / 2**20:.0f} MB)",
            )
            console.print(table)
    finally:
        ray_serve.shutdown()
        ray.shutdown()


def _intercept_while_polling(http, session: str, other: str, chars: int):
    paragraph = "The night ferry left the harbour at eleven and reached the island at six. "
    context = "\n\n".join(
        f"{n}. {paragraph * 3}" for n in range(chars // (len(paragraph) * 3 + 8) + 1)
    )[:chars]
    done = threading.Event()
    outcome: dict = {}

    def intercept() -> None:
        started = time.perf_counter()
        response = http.post(f"/sessions/{session}/intercept", json={"context": context})
        outcome["status"], outcome["seconds"] = response.status_code, time.perf_counter() - started
        done.set()

    worker = threading.Thread(target=intercept)
    worker.start()
    polls = _poll(http, other, done)
    worker.join()
    return outcome["status"], outcome["seconds"], polls


def _poll(http, session: str, done: threading.Event, seconds: float = float("inf")):
    """Seconds each GET /sessions/{session} took, one every 50 ms until `done` or `seconds`."""
    import httpx

    polls: list[float] = []
    deadline = time.perf_counter() + seconds
    with httpx.Client(base_url=str(http.base_url), timeout=60.0) as reader:
        while not done.is_set() and time.perf_counter() < deadline:
            started = time.perf_counter()
            reader.get(f"/sessions/{session}").raise_for_status()
            polls.append(time.perf_counter() - started)
            time.sleep(0.05)
    return polls


def _latency(polls: list[float]) -> str:
    if not polls:
        return "-"
    p95 = statistics.quantiles(polls, n=20)[-1] * 1000 if len(polls) > 1 else polls[0] * 1000
    return f"{len(polls)} GETs, p95 {p95:.0f} ms, max {max(polls) * 1000:.0f} ms"


def _stream_oversized_body(url: str) -> tuple[int, int | str]:
    """50 MB sent without Content-Length by a client that reads while it sends."""
    sent, answer = post_chunked_until_answered(url, "/query", 50 << 20)
    status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else ""
    return sent, int(status) if status.isdigit() else "connection closed, no answer"


# --- disk ----------------------------------------------------------------------------------------


def disk(work: Path) -> None:
    mount = work / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], check=True)
    try:
        table = Table(title="a full disk (a 3 MB tmpfs)")
        for column in ("command", "exit", "stderr lines", "store", "verify", "stderr"):
            table.add_column(column)
        store = mount / "store"
        small = [SAMPLE / "notes" / "home" / "sourdough_baking.md"]
        subprocess.run(
            [*CLI, "ingest", *map(str, small), "--store", str(store)],
            check=True,
            capture_output=True,
        )
        before = (store / ".gam_meta.json").read_text()
        _disk_row(
            table,
            "add (the store exists)",
            ["add", str(SAMPLE), "--store", str(store)],
            store,
            before,
        )
        fresh = mount / "fresh"
        _disk_row(
            table, "first ingest", ["ingest", str(SAMPLE), "--store", str(fresh)], fresh, None
        )
        console.print(table)
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _disk_row(table: Table, label: str, arguments: list[str], store: Path, before: str | None):
    done = subprocess.run([*CLI, *arguments], capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    if before is None:
        state = "absent" if not store.exists() else "PRESENT"
        verified = "-"
    else:
        state = "intact" if (store / ".gam_meta.json").read_text() == before else "CHANGED"
        check = subprocess.run([*CLI, "verify", "--store", str(store)], capture_output=True)
        verified = "ok" if check.returncode == 0 else "FAILED"
    table.add_row(label, str(done.returncode), str(len(lines)), state, verified, "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("what", choices=["links", "serve", "disk"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-") as scratch:
        {"links": links, "serve": serve, "disk": disk}[args.what](Path(scratch))


if __name__ == "__main__":
    main()
