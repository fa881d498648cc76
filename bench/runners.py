"""The in-process runner and Ray side by side on the same corpus, as a user runs them.

    python bench/runners.py [--sizes stories,1000000] [--repeats 1]

Each run is `memory-bank ingest CORPUS --store NEW --runner local|ray --json` in a fresh process,
so every cost a user pays is counted: process start, imports, the model load, a local Ray's start
(Ray side) and the ingest. Runs alternate (local, ray, local, ray, ...) so drifting load on a
shared machine hits both alike. Corpora: `stories` is the 23 FairytaleQA validation stories
(~70k cl100k tokens: a small corpus), a number is bench/ingest.py's corpus of that many
tokens (real text, built once under bench/out/). Prints per corpus the wall seconds, Ray / local,
the stages that differ most, and what `--runner auto` picks there. It prints a table; it is not a
test.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.corpus import build_corpus  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.ingest.runner_choice import choose_runner, estimated_tokens  # noqa: E402
from memory_bank.text.inputs import discover_files  # noqa: E402

CLI = Path(sys.executable).with_name("memory-bank")
OUT = REPO / "bench" / "out"


def stories_corpus() -> Path:
    """The FairytaleQA validation stories as text files (title, then the sections)."""
    directory = OUT / "stories"
    if directory.is_dir() and any(directory.iterdir()):
        return directory
    directory.mkdir(parents=True)
    source = development_eval_dir(REPO) / "fairytaleqa" / "val" / "section-stories"
    for path in sorted(source.glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            sections = [row["text"].strip() for row in csv.DictReader(handle)]
        title = path.stem.removesuffix("-story").replace("-", " ").title()
        body = title + "\n\n" + "\n\n".join(sections) + "\n"
        (directory / f"{path.stem}.txt").write_text(body, encoding="utf-8")
    return directory


def corpus_for(size: str) -> Path:
    if size == "stories":
        return stories_corpus()

    return build_corpus(int(size)).directory


def run_once(corpus: Path, runner: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="runners-") as scratch:
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        env.pop("RAY_ADDRESS", None)  # a local Ray, as a user without a cluster gets
        started = time.perf_counter()
        done = subprocess.run(
            [str(CLI), "ingest", str(corpus), "--store", f"{scratch}/store"]
            + ["--runner", runner, "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{runner} ingest failed:\n{done.stderr[-3000:]}")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall": wall, "summary": summary}


# Targets for Ray's wall time over the in-process runner's: at most 1.25x on a small corpus
# (~70k tokens), at most 1.0x at 1M tokens.
SMALL_TOKENS, SMALL_TARGET = 100_000, 1.25
LARGE_TOKENS, LARGE_TARGET = 900_000, 1.0


def target_ratio(tokens: int) -> float | None:
    """The ratio Ray should stay within at `tokens`; None between the two sizes."""
    if tokens <= SMALL_TOKENS:
        return SMALL_TARGET
    if tokens >= LARGE_TOKENS:
        return LARGE_TARGET
    return None


def compare(sizes: list[str], repeats: int = 1) -> None:
    """Ingest each corpus with both runners, alternating; print one table."""
    threshold = AppConfig().ray.in_process_below_tokens

    rows = []
    for size in sizes:
        corpus = corpus_for(size)
        estimate = estimated_tokens(discover_files([corpus]))
        runs: dict[str, list[dict]] = {"local": [], "ray": []}
        loads = [os.getloadavg()[0]]
        for _ in range(repeats):
            for runner in ("local", "ray"):
                runs[runner].append(run_once(corpus, runner))
                loads.append(os.getloadavg()[0])
                print(
                    f"{size} {runner}: {runs[runner][-1]['wall']:.1f} s, load "
                    f"{loads[-2]:.1f} -> {loads[-1]:.1f}",
                    flush=True,
                )
        local = statistics.median(run["wall"] for run in runs["local"])
        ray = statistics.median(run["wall"] for run in runs["ray"])
        auto = choose_runner(
            "auto", estimate, joins_cluster=False, in_process_below_tokens=threshold
        )
        stages = {
            runner: runs[runner][-1]["summary"]["stage_seconds"] for runner in ("local", "ray")
        }
        differences = sorted(
            (
                (stages["ray"].get(stage, 0.0) - stages["local"].get(stage, 0.0), stage)
                for stage in set(stages["ray"]) | set(stages["local"])
                if not stage.endswith(" busy")
            ),
            reverse=True,
        )
        chunks = runs["local"][-1]["summary"]["chunks"]
        target = target_ratio(estimate if size == "stories" else int(size))
        verdict = (
            "-"
            if target is None
            else f"<= {target:.2f}x: {'met' if ray / local <= target else 'missed'}"
        )
        rows.append(
            (
                size,
                f"{estimate:,}",
                str(chunks),
                f"{local:.1f}",
                f"{ray:.1f}",
                f"{ray / local:.2f}x",
                verdict,
                auto.runner,
                ", ".join(f"{stage} +{extra:.1f}s" for extra, stage in differences[:4]),
                " -> ".join(f"{load:.1f}" for load in loads),
            )
        )

    header = (
        "corpus", "tokens (est.)", "chunks", "local s", "ray s", "ray/local", "target",
        "auto", "where Ray spends more (last run)", "load (1 min) before, after each run",
    )  # fmt: skip
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    print()
    print(f"{os.cpu_count()} cores; median of {repeats} run(s) per runner; wall seconds of "
          f"the whole `memory-bank ingest` process; auto threshold {threshold:,} tokens")  # fmt: skip
    for number, row in enumerate([header, *rows]):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="stories,1000000")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    compare(args.sizes.split(","), args.repeats)


if __name__ == "__main__":
    main()
