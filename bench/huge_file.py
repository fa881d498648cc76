"""One huge text file: `python bench/huge_file.py [--mb 30]`.

Writes a file of that many MB (paragraphs of varied English-like sentences), ingests it with
`memory-bank ingest --runner local` in a child process, and prints: the peak memory of the
process tree while chunks are being made and once all are journaled (the commit), when the
first batch reached the journal (the first progress), the chunks
journaled when it was killed (SIGKILL once about half the file's chunks were journaled), and
what the resumed run took from the journal (work lost in the kill: at most the one batch that
was being made, each batch being journaled as soon as it is made). Timings: run under
`flock /tmp/bench.lock`; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.ingest.stages import chunk_documents  # noqa: E402
from memory_bank.text.sources import load_file  # noqa: E402

CLI = [sys.executable, "-m", "memory_bank.cli.main"]
WORDS = [
    "ferry",
    "harbour",
    "island",
    "lighthouse",
    "keeper",
    "storm",
    "night",
    "lamp",
    "bread",
    "starter",
    "flour",
    "water",
    "tide",
    "moon",
    "river",
    "mountain",
    "valley",
    "village",
    "market",
    "council",
    "bridge",
    "engine",
    "signal",
    "archive",
    "letter",
    "winter",
    "summer",
    "garden",
    "orchard",
    "library",
    "captain",
    "station",
    "railway",
    "cargo",
    "weather",
    "forecast",
]


def write_file(path: Path, megabytes: float) -> None:
    rng = random.Random(29)
    target = int(megabytes * 2**20)
    with path.open("w", encoding="utf-8") as handle:
        written = 0
        while written < target:
            sentences = [
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."
                for _ in range(rng.randint(3, 7))
            ]
            paragraph = " ".join(sentences) + "\n\n"
            handle.write(paragraph)
            written += len(paragraph)


def journal_batches(journal: Path) -> list[int]:
    """Rows of each batch file in the journal; a file the ingest removes while it is being
    listed (the journal goes once the commit has switched) counts as gone."""
    rows = []
    for path in journal.rglob("batch-*.parquet"):
        try:
            rows.append(pq.ParquetFile(path).metadata.num_rows)
        except FileNotFoundError:
            continue
    return rows


def run(arguments: list[str], journal: Path, total: int, kill_at: int | None) -> dict:
    """One ingest; peak RSS of its process tree while chunks are made and once all `total`
    are journaled (the commit), the first journal batch, the kill."""
    # stderr goes to a file: a pipe nobody reads while the ingest runs could fill and block it
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        process = subprocess.Popen([*CLI, *arguments], stdout=subprocess.PIPE, stderr=log)
        peaks = {"making": 0.0, "commit": 0.0}
        first = 0.0
        killed_at = batch = None
        done = 0
        while process.poll() is None:
            phase = "commit" if done >= total else "making"
            try:
                tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(True)]
                rss = sum(p.memory_info().rss for p in tree if p.is_running())
                peaks[phase] = max(peaks[phase], rss)
            except psutil.Error:
                pass
            done = max(done, sum(journal_batches(journal)))  # the commit removes the journal
            if done and not first:
                first = time.perf_counter() - started
            if kill_at is not None and done >= kill_at:
                process.send_signal(signal.SIGKILL)
                process.wait()
                batches = journal_batches(journal)
                killed_at, batch = sum(batches), max(batches)
                break
            time.sleep(0.5)
        stdout, _ = process.communicate()
        if process.returncode not in (0, -signal.SIGKILL):
            log.seek(0)
            failure = log.read().decode(errors="replace")[-2000:]
            raise SystemExit(f"the ingest failed:\n{failure}")
    summary = json.loads(stdout.decode().strip().splitlines()[-1]) if stdout.strip() else {}
    return {
        "seconds": time.perf_counter() - started,
        "making_gb": peaks["making"] / 2**30,
        "commit_gb": peaks["commit"] / 2**30,
        "first_batch_s": first,
        "killed_with": killed_at,
        "batch": batch,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=30.0)
    args = parser.parse_args()
    console = Console(width=150)
    with tempfile.TemporaryDirectory(prefix="huge-") as scratch:
        work = Path(scratch)
        source = work / "huge.txt"
        write_file(source, args.mb)
        total = len(chunk_documents([load_file(source)], AppConfig().chunking))
        store, journal = work / "store", work / ".store.journal"
        arguments = ["ingest", str(source), "--store", str(store), "--runner", "local", "--json"]
        killed = run(arguments, journal, total, kill_at=total // 2)
        resumed = run(arguments, journal, total, kill_at=None)
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        table = Table(title=f"one {args.mb:g} MB file, {total:,} chunks (load average {load})")
        for column in (
            "run",
            "seconds",
            "peak GB making chunks",
            "peak GB committing",
            "first journal batch (s)",
            "chunks",
        ):
            table.add_column(column)
        table.add_row(
            "killed (SIGKILL) at half",
            f"{killed['seconds']:.0f}",
            f"{killed['making_gb']:.2f}",
            "-",
            f"{killed['first_batch_s']:.1f}",
            f"{killed['killed_with']:,} journaled at the kill",
        )
        summary = resumed["summary"]
        made = summary.get("chunks", 0) - summary.get("resumed_chunks", 0)
        table.add_row(
            "resumed",
            f"{resumed['seconds']:.0f}",
            f"{resumed['making_gb']:.2f}",
            f"{resumed['commit_gb']:.2f}",
            f"{resumed['first_batch_s']:.1f}",
            f"{summary.get('resumed_chunks', 0):,} from the journal, {made:,} made; lost in "
            f"the kill: at most the batch in flight, <= {killed['batch'] or 0} chunks "
            f"({(killed['batch'] or 0) / total:.1%} of the file)",
        )
        console.print(table)
        steps = (summary.get("commit") or {}).get("stage_peak_mb", {})
        if steps:  # the committing process alone, so a little below the process tree's peak
            console.print(
                "commit, peak MB of the ingest process after each step: "
                + ", ".join(f"{step} {mb:,.0f}" for step, mb in steps.items())
            )


if __name__ == "__main__":
    main()
