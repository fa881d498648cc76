"""`bench/ingest.py --nodes 1,2,3`: the same corpus ingested by `ray job submit --working-dir .`
on a local cluster of 1, 2, 3 nodes of one CPU each (pipeline/local_cluster.py), next to the
ideal linear line drawn from the one-node run.

Every stage gets one unit of work per node: `ray.embed.concurrency` = nodes embedding actors of
half a CPU and one torch thread each, `ray.memorize` / `ray.chunk` tasks of half a CPU (so a
node runs its embedding actor and a memorize task side by side, as one CPU of work), the commit's
fan-out tasks (planning, READMEs, graph analysis) on Ray's default placement. Each node's
processes are pinned to one core (node i on core i mod the machine's cores), so one node really
has one core; with more nodes than cores, nodes share cores. A fresh cluster per run; the store
of each run is checked against the first (same chunk ids).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from memory_bank.config import AppConfig
from memory_bank.store.location import StoreLocation
from memory_bank.store.reader import StoreReader
from pipeline.local_cluster import LocalCluster

REPO = Path(__file__).resolve().parents[1]
JOB_TIMEOUT_S = 4 * 3600.0
OBJECT_STORE_BYTES = 1024**3


@dataclass
class NodeRun:
    nodes: int
    job_seconds: float  # submit to end, as `ray job submit` waits
    ingest_seconds: float  # the ingest's own total (driver started, Ray joined)
    stages: dict[str, float]
    chunks: int
    tokens: int
    load: tuple[float, float]  # 1-minute load average before and after
    placement: str  # `python -m pipeline.placement`: the job's tasks per stage and node


def node_config(config: AppConfig, nodes: int) -> AppConfig:
    """`config` with one unit of work per node for every stage (see the module docstring)."""
    raw = config.model_dump()
    raw["embedding"]["num_threads"] = 1
    raw["ray"]["address"] = "auto"
    for stage in ("chunk", "embed", "memorize"):
        raw["ray"][stage]["concurrency"] = nodes
        raw["ray"][stage]["num_cpus"] = 0.5
    raw["ray"]["plan_task_cpus"] = 0.5
    return AppConfig.model_validate(raw)


def run_on_nodes(
    corpus_dir: Path,
    nodes: int,
    config: AppConfig,
    out: Path,
    sample: Callable[[LocalCluster], contextlib.AbstractContextManager] | None = None,
) -> NodeRun:
    """One ingest of `corpus_dir` on a fresh cluster of `nodes` nodes; `sample(cluster)` gives a
    context held around the job (bench/growth.py samples the cluster's memory in it)."""
    store = out / f"store_{nodes}"
    StoreLocation(store).delete()
    config_file = out / f"config_{nodes}.yaml"
    config_file.write_text(yaml.safe_dump(node_config(config, nodes).model_dump(mode="json")))
    load_before = os.getloadavg()[0]
    with (
        LocalCluster(
            workers=nodes - 1,
            cpus_per_node=1,
            object_store_bytes=OBJECT_STORE_BYTES,
            pin_cores=True,
        ) as cluster,
        sample(cluster) if sample else contextlib.nullcontext(),
    ):
        submission = f"nodes-{nodes}-{uuid.uuid4().hex[:6]}"
        started = time.perf_counter()
        cluster.submit_job(
            [
                "python",
                "-m",
                "jobs.ingest",
                str(corpus_dir),
                "--store",
                str(store),
                "--config",
                str(config_file),
            ],
            submission,
            working_dir=REPO,
        )
        info = cluster.wait_job(submission, JOB_TIMEOUT_S)
        job_seconds = time.perf_counter() - started
        logs = cluster.job_logs(submission)
        placement = subprocess.run(
            [sys.executable, "-m", "pipeline.placement", submission],
            env=cluster.client_env(),
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    if info["status"] != "SUCCEEDED":
        raise SystemExit(f"the {nodes}-node ingest {info['status']}:\n{logs[-4000:]}")
    summary = json.loads([line for line in logs.splitlines() if line.startswith("{")][-1])
    reader = StoreReader(store)
    tokens = sum(reader.documents().column("token_count").to_pylist())
    return NodeRun(
        nodes=nodes,
        job_seconds=job_seconds,
        ingest_seconds=summary["total_seconds"],
        stages=summary["stage_seconds"],
        chunks=summary["chunks"],
        tokens=tokens,
        load=(load_before, os.getloadavg()[0]),
        placement=placement,
    )


def chunk_ids(out: Path, nodes: int) -> list[str]:
    return StoreReader(out / f"store_{nodes}").chunks().column("chunk_id").to_pylist()


def print_node_table(runs: list[NodeRun]) -> None:
    """Throughput per node count, the ideal linear line from one node, efficiency (against
    that line and against the machine's cores), stages."""
    base = next(run for run in runs if run.nodes == min(r.nodes for r in runs))
    per_node = base.tokens / base.ingest_seconds / base.nodes
    header = [
        "nodes",
        "job s",
        "ingest s",
        "tokens/s",
        "ideal tokens/s",
        "efficiency",
        "cores",
        "2-core cap tokens/s",
        "of cap",
        "chunks/s",
        "read+chunk s",
        "embed+memorize s",
        "commit s",
        "commit share",
        "plan / readme / graph / write",
        "load before/after",
    ]
    cores = len(os.sched_getaffinity(0))
    header[header.index("2-core cap tokens/s")] = f"{cores}-core cap tokens/s"
    rows = []
    for run in runs:
        rate = run.tokens / run.ingest_seconds
        ideal = per_node * run.nodes
        # Nodes are pinned one to a core: beyond the machine's cores they share cores, so the
        # most this machine can show is the one-node rate times min(nodes, cores).
        cap = per_node * min(run.nodes, cores)
        stages = run.stages
        commit_parts = [
            stages.get("commit: plan", 0),
            stages.get("commit: readme", 0) + stages.get("commit: readme vectors", 0),
            stages.get("commit: graph", 0),
            stages.get("commit: write", 0),
        ]
        rows.append(
            [
                str(run.nodes),
                f"{run.job_seconds:.1f}",
                f"{run.ingest_seconds:.1f}",
                f"{rate:,.0f}",
                f"{ideal:,.0f}",
                f"{rate / ideal:.2f}",
                str(min(run.nodes, cores)),
                f"{cap:,.0f}",
                f"{rate / cap:.2f}",
                f"{run.chunks / run.ingest_seconds:.1f}",
                f"{stages.get('read', 0) + stages.get('chunk', 0):.1f}",
                f"{stages.get('embed+memorize', 0):.1f}",
                f"{stages.get('commit', 0):.1f}",
                f"{stages.get('commit', 0) / run.ingest_seconds:.2f}",
                " / ".join(f"{seconds:.0f}" for seconds in commit_parts),
                f"{run.load[0]:.1f}/{run.load[1]:.1f}",
            ]
        )
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    for number, line in enumerate([header, *rows]):
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))


def run_node_sweep(corpus, node_counts: list[int], config: AppConfig, out: Path) -> None:
    """Ingest `corpus` (bench/ingest.py's `Corpus`) on each node count; print the table."""
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for nodes in node_counts:
        runs.append(run_on_nodes(corpus.directory, nodes, config, out))
        print(f"{nodes} node(s): {runs[-1].ingest_seconds:.1f} s", flush=True)
    first = chunk_ids(out, node_counts[0])
    same = all(chunk_ids(out, nodes) == first for nodes in node_counts[1:])
    print()
    print(
        f"Corpus {corpus.directory.relative_to(REPO)}: {corpus.documents} files, "
        f"{corpus.tokens:,} cl100k tokens; {runs[0].chunks} chunks; every run made the same "
        f"chunk ids: {same}. Nodes of 1 CPU each, each pinned to one core (node i on core i mod "
        f"{len(os.sched_getaffinity(0))}), on a machine of {os.cpu_count()} cores; the "
        f"ideal line is the {runs[0].nodes}-node tokens/s per node times the nodes; 'ingest s' "
        "is the job's own total (joining Ray to the end of the commit), 'job s' adds `ray job "
        "submit`, the upload of the working dir and the driver's start."
    )
    print()
    print_node_table(runs)
    one = next((run for run in runs if run.nodes == 1), None)
    two = next((run for run in runs if run.nodes == 2), None)
    if one is not None:
        share = one.stages.get("commit", 0) / one.ingest_seconds
        print(f"commit share of the 1-node ingest: {share:.2f} (target <= 0.15)")
    if one is not None and two is not None:
        efficiency = (two.tokens / two.ingest_seconds) / (2 * one.tokens / one.ingest_seconds)
        print(f"2-node efficiency: {efficiency:.2f} (target >= 0.85)")
    print()
    print(f"Where the {runs[-1].nodes}-node run's tasks ran:")
    print(runs[-1].placement)
