"""`make cluster-demo`: a head and two worker nodes on this machine (`pipeline/local_cluster.py`),
the sample corpus ingested by `ray job submit --working-dir .`, where its tasks ran (Ray's
state API), a question asked of the store, and the cluster torn down by PID.

    python -m pipeline.cluster_demo [--store .memory/cluster-demo] [--question "..."]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from memory_bank.store.layout import looks_like_store
from memory_bank.store.location import StoreLocation
from pipeline.local_cluster import LocalCluster

REPO = Path(__file__).resolve().parents[1]
QUESTION = "What were BERT's two pre-training model sizes and who released it?"


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.cluster_demo", description=__doc__)
    parser.add_argument("--store", type=Path, default=REPO / ".memory" / "cluster-demo")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args(argv)
    store = args.store.expanduser().absolute()
    if store.exists() and not looks_like_store(store):
        parser.error(f"{store} exists and is not a memory store")
    StoreLocation(store).delete()  # a fresh store each run: the demo shows a whole ingest
    signal.signal(signal.SIGTERM, _interrupt)  # teardown runs on SIGTERM as on Ctrl-C

    started = time.monotonic()
    cluster = LocalCluster(workers=2, cpus_per_node=1)
    _say("starting a head and two worker nodes (1 CPU each), each its own `ray start --block`")
    try:
        cluster.start()
        print(f"up in {time.monotonic() - started:.1f} s; dashboard {cluster.dashboard_url}")
        for name, node_id in sorted(cluster.alive_nodes().items()):
            node = cluster.nodes[name]
            print(f"  {name:5} {node_id[:12]}  pid {node.process.pid}  temp {node.temp_dir}")
        submission = f"cluster-demo-{uuid.uuid4().hex[:6]}"
        entrypoint = [
            "python",
            "-m",
            "jobs.ingest",
            "data/sample",  # inside the working dir: shipped to every node with it
            "--store",
            str(store),
            "--config",
            "configs/local_cluster.yaml",
        ]
        _say(
            "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=<the cluster's> ray job submit "
            f"--address {cluster.dashboard_url} --working-dir . -- {' '.join(entrypoint)}"
        )
        cluster.submit_job(entrypoint, submission, working_dir=REPO, follow=True)
        _say(f"python -m pipeline.placement {submission}  (Ray's state API)")
        subprocess.run(
            [sys.executable, "-m", "pipeline.placement", submission],
            env=cluster.client_env(),
            cwd=REPO,
            check=True,
        )
        _say(f'memory-bank ask "{args.question}" --store {store}')
        subprocess.run(
            [
                str(Path(sys.executable).with_name("memory-bank")),
                "ask",
                args.question,
                "--store",
                str(store),
            ],
            cwd=REPO,
            check=True,
            env=cluster.client_env(),
        )
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        _say("tearing the cluster down by PID (never `ray stop`)")
        cluster.stop()
        left = cluster.leftover_processes()
        print(f"processes of the cluster left: {len(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
