"""The growth curve: full builds at several corpus sizes, in-process and on 1 and 2 local nodes,
with every stage's seconds and peak memory, each stage's fitted exponent and the 100M-token
projection; then query latency on each in-process store.

    python bench/growth.py [--tokens 250000,1000000,4000000] [--runners local,nodes1,nodes2]
                           [--queries 40] [--out bench/out/growth]

A runner written `nodes1:1000000` runs only at sizes up to that many tokens (a 4M-token build on
one pinned core takes most of an hour; the fits and the 1-to-N-node efficiency need less).

Corpora are bench/ingest.py's (real text, built once per size under bench/out/). `local` runs
`local_runner` in a child process of its own that samples its resident memory every 0.2 s and
charges each sample to the stage running then (a commit's steps follow one another inside the
commit, so their windows come from the commit's own clock). `nodesN` submits `jobs.ingest` to a
fresh local cluster of N one-CPU nodes (bench/ingest_nodes.py) and samples every process of the
cluster; a Ray worker's title names the task or actor it runs, so peaks are per title.

The fit: seconds = a * tokens^b per stage, least squares on logs over the sizes (b = 1 is
linear). The projection takes each stage to 100M tokens with its fit over the 1-node runs; a
stage that ran faster on N nodes than on 1 at the largest size both ran is taken as scaling with
that per-node efficiency, the rest as not scaling at all, and the store's bytes with their own
fit. Nodes are one pinned core each; the in-process runs use every core of the machine, so
comparing them with N nodes says nothing of a node's share (on this 2-core machine, 2 nodes ran
slower than one process on both cores). Query latency is
`QueryService.ask` and `search` (what Serve's /query and /search run) in this process, on
questions made of 10-word fragments of stored sentences (fixed seed), after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench.corpus import OUT, build_corpus  # noqa: E402

SAMPLE_S = 0.2
TARGET_TOKENS = 100_000_000
GIB = 1024**3
STAGES = (
    "read",
    "chunk",
    "embed+memorize",
    "commit: load",
    "commit: plan",
    "commit: readme",
    "commit: readme vectors",
    "commit: graph",
    "commit: write",
    "commit",
)
PROJECTED_NODES = (1, 8, 32, 128)


@dataclass
class Build:
    runner: str
    tokens: int
    chunks: int
    store_bytes: int
    seconds: float
    stages: dict[str, float]
    peaks: dict[str, int] = field(default_factory=dict)  # stage or process title -> bytes
    load: str = ""


# --- memory ---------------------------------------------------------------------------------


class Sampler:
    """Resident memory of some processes every SAMPLE_S, the peak per label."""

    def __init__(self, processes, label) -> None:
        self.processes, self.label = processes, label
        self.peaks: dict[str, int] = {}
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            for process in self.processes():
                try:
                    rss = process.memory_info().rss
                    label = self.label(process)
                except (psutil.Error, OSError):
                    continue
                self.peaks[label] = max(self.peaks.get(label, 0), rss)
                self.samples.append((time.time(), rss))


def ray_title(process: psutil.Process) -> str:
    line = " ".join(process.cmdline())
    if line.startswith("ray::"):
        return line.split(" ")[0]
    for role in ("raylet", "gcs_server", "dashboard", "jobs.ingest", "runtime_env"):
        if role in line:
            return role
    return process.name()


# --- one build ------------------------------------------------------------------------------


class _Stages:
    """A progress sink that keeps when each stage started and finished."""

    def __init__(self) -> None:
        self.windows: dict[str, list[float]] = {}

    def start(self, stage: str, total: int | None = None) -> None:
        self.windows[stage] = [time.time(), math.inf]

    def advance(self, stage: str, amount: int = 1) -> None:
        pass

    def finish(self, stage: str, detail: str = "") -> None:
        self.windows[stage][1] = time.time()


def child_build(store: Path, corpus: Path, config_file: Path) -> None:
    """In a process of its own: one in-process build; prints its Build as JSON."""
    from memory_bank.config import load_config
    from memory_bank.ingest.runner import local_runner

    config = load_config(config_file)
    stages = _Stages()
    me = psutil.Process()
    with Sampler(lambda: [me], lambda _: "process") as sampler:
        summary = local_runner(config).run(store, files=[str(corpus)], progress=stages)
    windows = dict(stages.windows)
    start = windows.get("commit", [0.0, 0.0])[0]
    for step, seconds in (summary.commit.stage_seconds if summary.commit else {}).items():
        windows[f"commit: {step}"] = [start, start + seconds]
        start += seconds
    peaks = {
        stage: max((rss for t, rss in sampler.samples if begin <= t <= end), default=0)
        for stage, (begin, end) in windows.items()
    }
    peaks["process"] = sampler.peaks.get("process", 0)
    print(json.dumps({"summary": summary.model_dump(mode="json"), "peaks": peaks}))


def build_local(corpus, store: Path, config_file: Path, out: Path) -> Build:
    from memory_bank.store.location import StoreLocation

    StoreLocation(store).delete()
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    command = [
        sys.executable,
        __file__,
        "--child",
        str(store),
        str(corpus.directory),
        str(config_file),
    ]
    log = out / f"{store.name}.log"
    with log.open("w") as errors:
        done = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=errors, text=True, check=False
        )
    if done.returncode != 0:
        raise SystemExit(f"the in-process build failed, see {log}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    summary = result["summary"]
    return Build(
        "local",
        corpus.tokens,
        summary["chunks"],
        store_bytes(store),
        summary["total_seconds"],
        flat_stages(summary),
        result["peaks"],
        load,
    )


def build_nodes(corpus, nodes: int, config, out: Path) -> Build:
    from bench import ingest_nodes

    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    sampler_box: dict[str, Sampler] = {}

    def sample(cluster):
        def processes():
            return [p for pid in cluster.leftover_processes() if (p := _process(pid))]

        sampler_box["s"] = Sampler(processes, ray_title)
        return sampler_box["s"]

    run = ingest_nodes.run_on_nodes(corpus.directory, nodes, config, out, sample=sample)
    store = out / f"store_{nodes}"
    peaks = sampler_box["s"].peaks if "s" in sampler_box else {}
    return Build(
        f"nodes{nodes}",
        corpus.tokens,
        run.chunks,
        store_bytes(store),
        run.ingest_seconds,
        flat_stages({"stage_seconds": run.stages}),
        peaks,
        load,
    )


def _process(pid: int) -> psutil.Process | None:
    try:
        return psutil.Process(pid)
    except psutil.Error:
        return None


def flat_stages(summary: dict) -> dict[str, float]:
    stages = dict(summary["stage_seconds"])
    stages["read"] = stages.get("read", 0.0) + stages.pop("start ray", 0.0)
    return stages


def store_bytes(store: Path) -> int:
    live = store.resolve()
    return sum(p.stat().st_size for p in live.rglob("*") if p.is_file())


# --- fits and projection ----------------------------------------------------------------------


def fit(sizes: list[float], values: list[float]) -> tuple[float, float] | None:
    """(a, b) of value = a * size^b, least squares on logs; None with fewer than 2 points."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values, strict=True) if v > 0]
    if len(points) < 2:
        return None
    mean_x = statistics.fmean(x for x, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sum(
        (x - mean_x) ** 2 for x, _ in points
    )
    return math.exp(mean_y - slope * mean_x), slope


def print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    for number, line in enumerate([header, *rows]):
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * w for w in widths))


def print_builds(builds: list[Build]) -> None:
    header = ["runner", "tokens", "chunks", "store MB", "total s", *STAGES, "load"]
    rows = [
        [b.runner, f"{b.tokens:,}", str(b.chunks), f"{b.store_bytes / 1e6:.0f}", f"{b.seconds:.0f}"]
        + [f"{b.stages.get(stage, 0.0):.1f}" for stage in STAGES]
        + [b.load]
        for b in builds
    ]
    print("Seconds per stage (commit = all of the commit, its steps before it):")
    print_table(header, rows)
    print()
    print("Peak resident memory, GiB (in-process: the one process, during each stage; nodes: per")
    print("process title, the largest six):")
    for b in builds:
        peaks = sorted(b.peaks.items(), key=lambda item: -item[1])
        if b.runner == "local":
            peaks = [(s, b.peaks.get(s, 0)) for s in (*STAGES, "process") if s in b.peaks]
        cells = ", ".join(f"{label} {rss / GIB:.2f}" for label, rss in peaks[:10])
        print(f"  {b.runner} {b.tokens:,} tokens: {cells}")


def print_fits(builds: list[Build]) -> None:
    print("Fitted exponent b (seconds = a * tokens^b) and the stage at 100M tokens on one node:")
    header = ["runner", *STAGES, "total", "store bytes"]
    rows = []
    fits: dict[str, dict[str, tuple[float, float] | None]] = {}
    for runner in sorted({b.runner for b in builds}):
        mine = [b for b in builds if b.runner == runner]
        sizes = [b.tokens for b in mine]
        fits[runner] = {
            stage: fit(sizes, [b.stages.get(stage, 0.0) for b in mine]) for stage in STAGES
        }
        fits[runner]["total"] = fit(sizes, [b.seconds for b in mine])
        fits[runner]["store bytes"] = fit(sizes, [b.store_bytes for b in mine])
        rows.append(
            [runner]
            + [
                f"{f[1]:.2f} ({f[0] * TARGET_TOKENS ** f[1] / 3600:.1f} h)" if f else "-"
                for f in (fits[runner][stage] for stage in [*STAGES, "total"])
            ]
            + [_bytes_cell(fits[runner]["store bytes"])]
        )
    print_table(header, rows)
    print_projection(builds, fits)


def _bytes_cell(bytes_fit) -> str:
    if not bytes_fit:
        return "-"
    return f"{bytes_fit[1]:.2f} ({bytes_fit[0] * TARGET_TOKENS ** bytes_fit[1] / 1e9:.0f} GB)"


def print_projection(builds: list[Build], fits) -> None:
    """Each stage at 100M tokens on one node (its fit over the `nodes1` runs), then on N nodes
    at the per-node efficiency it showed going from 1 to the most nodes run, at the largest
    size both ran. Nodes are one pinned core each: the in-process runs use every core of the
    machine, so they give the exponents, not a one-node baseline."""
    clustered = sorted(
        (r for r in fits if r.startswith("nodes") and r != "nodes1"),
        key=lambda r: int(r.removeprefix("nodes")),
    )
    one = fits.get("nodes1")
    if not one or not clustered:
        print()
        print(
            "No 100M-token projection over nodes: it needs `nodes1` and a larger `nodesN` among "
            "--runners (the in-process runs use every core of this machine, so they are no "
            "one-node baseline)."
        )
        return
    runner = clustered[-1]
    nodes = int(runner.removeprefix("nodes"))
    sizes = {b.tokens for b in builds if b.runner == runner} & {
        b.tokens for b in builds if b.runner == "nodes1"
    }
    largest = max(sizes)
    here = {b.runner: b for b in builds if b.tokens == largest}
    print()
    print(
        f"100M-token projection: each stage's fit over the 1-node runs, divided over N nodes at "
        f"the per-node efficiency it showed on {nodes} nodes at {largest:,} tokens (a stage that "
        "was not faster there counts as not scaling):"
    )
    header = [
        "stage",
        "1-node h",
        f"{nodes}-node speedup",
        *(f"{n} nodes h" for n in PROJECTED_NODES),
    ]
    rows, totals = [], [0.0] * len(PROJECTED_NODES)
    top = [s for s in STAGES if s.startswith("commit") or s in ("read", "chunk", "embed+memorize")]
    for stage in top:
        f = one.get(stage)
        if not f or stage == "commit":
            continue
        hours = f[0] * TARGET_TOKENS ** f[1] / 3600
        before, after = here["nodes1"].stages.get(stage, 0), here[runner].stages.get(stage, 0)
        speedup = before / max(after, 1e-9)
        efficiency = min(speedup / nodes, 1.0) if speedup > 1.1 else None
        cells = []
        for i, n in enumerate(PROJECTED_NODES):
            value = hours / (n * efficiency) if efficiency and n > 1 else hours
            totals[i] += value
            cells.append(f"{value:.2f}")
        rows.append([stage, f"{hours:.2f}", f"{speedup:.2f}", *cells])
    rows.append(["total", "", "", *(f"{t:.2f}" for t in totals)])
    print_table(header, rows)
    print(f"store at 100M tokens (one version): {_bytes_cell(one.get('store bytes'))}")


# --- queries ----------------------------------------------------------------------------------


def query_latency(store: Path, count: int) -> tuple[float, float]:
    """p50 ms of `QueryService.ask` and `.search` on fragments of stored sentences."""
    import random

    from memory_bank.app.service import QueryService
    from memory_bank.config import AppConfig
    from memory_bank.store.reader import StoreReader

    texts = StoreReader(store).rows("sentences", ["text"]).column("text").to_pylist()
    rng = random.Random(7)
    questions = []
    while len(questions) < count:
        words = rng.choice(texts).split()
        if len(words) >= 10:
            start = rng.randrange(len(words) - 9)
            questions.append(" ".join(words[start : start + 10]))
    service = QueryService(store, AppConfig())
    service.warm_up()
    timings: dict[str, list[float]] = {"ask": [], "search": []}
    for question in questions:
        for name, call in (("ask", service.ask), ("search", service.search)):
            started = time.perf_counter()
            call(question)
            timings[name].append((time.perf_counter() - started) * 1000)
    return statistics.median(timings["ask"]), statistics.median(timings["search"])


# --- main -------------------------------------------------------------------------------------


def _runner_spec(spec: str) -> tuple[str, float]:
    """`nodes1:1000000` -> ("nodes1", 1000000); a bare runner runs at every size."""
    runner, _, largest = spec.partition(":")
    return runner, float(largest) if largest else math.inf


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", default="250000,1000000,4000000")
    parser.add_argument("--runners", default="local,nodes1,nodes2")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "local.yaml")
    parser.add_argument("--out", type=Path, default=OUT / "growth")
    parser.add_argument("--child", nargs=3, metavar=("STORE", "CORPUS", "CONFIG"))
    args = parser.parse_args()
    if args.child:
        child_build(*(Path(p) for p in args.child))
        return
    from memory_bank.config import load_config

    args.out = args.out.resolve()  # the cluster's jobs run in an uploaded copy of the repo
    args.out.mkdir(parents=True, exist_ok=True)
    config = load_config(args.config)
    builds: list[Build] = []
    latencies: dict[int, tuple[float, float]] = {}
    for tokens in (int(t) for t in args.tokens.split(",")):
        corpus = build_corpus(tokens)
        for runner, largest in (_runner_spec(spec) for spec in args.runners.split(",")):
            if tokens > largest:
                continue
            if runner == "local":
                store = args.out / f"local_{tokens}"
                builds.append(build_local(corpus, store, args.config, args.out))
                latencies[corpus.tokens] = query_latency(store, args.queries)
            else:
                nodes = int(runner.removeprefix("nodes"))
                out = args.out / f"{runner}_{tokens}"
                out.mkdir(parents=True, exist_ok=True)
                builds.append(build_nodes(corpus, nodes, config, out))
            print(f"{builds[-1].runner} {tokens:,}: {builds[-1].seconds:.0f} s", flush=True)
    print()
    print_builds(builds)
    print()
    print_fits(builds)
    if latencies:
        print()
        print("Query p50 ms on each in-process store (QueryService, after a warm-up):")
        sizes = sorted(latencies)
        rows = [[f"{s:,}", f"{latencies[s][0]:.1f}", f"{latencies[s][1]:.1f}"] for s in sizes]
        print_table(["tokens", "ask p50 ms", "search p50 ms"], rows)
        near_1m = min(sizes, key=lambda s: abs(s - 1_000_000))
        if sizes[-1] != near_1m:
            ratio = latencies[sizes[-1]][0] / latencies[near_1m][0]
            print(f"ask p50, largest / ~1M store: {ratio:.2f} (target <= 1.5)")
    print(f"load average now: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
