"""Hostile inputs at scale: `python bench/fuzz.py [--files N] [--requests N]`.

Hypothesis draws the inputs of tests/fuzz_inputs.py: random bytes, text in a dozen encodings,
random JSON and file names for the source readers (each file read alone), then a folder of them
ingested into a store that must verify; random JSON, unicode edge cases (lone surrogates, NUL,
BOM), raw bytes and path segments for every endpoint of the HTTP API on Ray Serve (127.0.0.1),
after which the served store must verify too. Prints the inputs and how many got a 5xx or
left a traceback (both must be 0). Starts its own Ray: run under `flock /tmp/ray.lock`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.store.verify import verify_store  # noqa: E402
from tests.fuzz_inputs import (  # noqa: E402
    SUFFIXES,
    Tally,
    file_contents,
    file_stems,
    http_requests,
    read_hostile_file,
    send_hostile_request,
)
from tests.load_client import free_port  # noqa: E402

SAMPLE = REPO / "data" / "sample"
CORPUS_FILES = 300  # hostile files in the folder ingested as one store


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def fuzz_readers(examples: int, work: Path) -> Tally:
    tally = Tally()

    @_settings(examples)
    @given(stem=file_stems, suffix=st.sampled_from(SUFFIXES), content=file_contents)
    def read(stem, suffix, content):
        read_hostile_file(work, stem, suffix, content, tally)

    read()
    return tally


def ingest_hostile_folder(work: Path) -> tuple[int, int, int, bool]:
    """A folder of CORPUS_FILES hostile files and one plain note, ingested into a new store:
    (files written, documents, skipped, verify ok)."""
    folder = work / "corpus"
    folder.mkdir()
    written = 0

    @_settings(CORPUS_FILES)
    @given(stem=file_stems, suffix=st.sampled_from(SUFFIXES), content=file_contents)
    def write(stem, suffix, content):
        nonlocal written
        try:
            (folder / f"{written:04d}-{stem}{suffix}").write_bytes(content)
            written += 1
        except OSError:
            pass

    write()
    (folder / "plain.md").write_text("# Plain\n\nOne ordinary note among hostile files.")
    store = work / "store"
    summary = MemoryBank(store, AppConfig()).add(files=[folder])
    return written + 1, summary.documents, len(summary.skipped), verify_store(store).ok


def fuzz_http(examples: int, work: Path) -> tuple[Tally, bool]:
    import httpx
    import ray
    from ray import serve

    from actors.serve_app import start

    store = work / "served"
    MemoryBank(store).add(files=[SAMPLE / "notes", SAMPLE / "meetings"])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    tally = Tally()
    try:
        base_url = start(store, AppConfig(), host="127.0.0.1", port=free_port())
        with httpx.Client(base_url=base_url, timeout=120.0) as http:
            session = http.post("/sessions", json={"task_goal": "Answer hostile requests"})
            session.raise_for_status()

            @_settings(examples)
            @given(request=http_requests(session=session.json()["doc_id"]))
            def send(request):
                send_hostile_request(http, request, tally)

            send()
    finally:
        serve.shutdown()
        ray.shutdown()
    return tally, verify_store(store).ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=6000, help="hostile files read one by one")
    parser.add_argument("--requests", type=int, default=4500, help="hostile HTTP requests")
    args = parser.parse_args()
    console = Console(width=150)
    table = Table(title="hostile inputs (bench/fuzz.py)")
    for column in ("target", "inputs", "accepted", "refused", "5xx", "tracebacks", "verify", "s"):
        table.add_column(column, justify="left" if column in ("target", "verify") else "right")
    totals = Tally()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        work = Path(scratch)
        started = time.perf_counter()
        readers = fuzz_readers(args.files, work)
        _row(table, "source readers (one file each)", readers, "-", started)
        started = time.perf_counter()
        files, documents, skipped, ok = ingest_hostile_folder(work)
        table.add_row(
            "a folder of them, one ingest",
            str(files),
            str(documents),
            str(skipped),
            "-",
            "0",
            "ok" if ok else "FAILED",
            f"{time.perf_counter() - started:.0f}",
        )
        started = time.perf_counter()
        http, served_ok = fuzz_http(args.requests, work)
        _row(table, "HTTP API on Ray Serve", http, "ok" if served_ok else "FAILED", started)
        for tally in (readers, http):
            totals.inputs += tally.inputs
            totals.server_errors += tally.server_errors
            totals.tracebacks += tally.tracebacks
            totals.failures += tally.failures
    table.add_row(
        "total",
        str(totals.inputs),
        "",
        "",
        str(totals.server_errors),
        str(totals.tracebacks),
        "ok" if ok and served_ok else "FAILED",
        "",
    )
    console.print(table)
    for failure in totals.failures[:10]:
        console.print(f"[red]failure:[/] {failure}", highlight=False, soft_wrap=True)


def _row(table: Table, name: str, tally: Tally, verify: str, started: float) -> None:
    table.add_row(
        name,
        str(tally.inputs),
        str(tally.accepted),
        str(tally.refused),
        str(tally.server_errors),
        str(tally.tracebacks),
        verify,
        f"{time.perf_counter() - started:.0f}",
    )


if __name__ == "__main__":
    main()
