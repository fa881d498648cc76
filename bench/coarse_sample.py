"""What `taxonomy.coarse_sample` costs: time and memory of the top-level split's Ward clustering
and silhouette on samples of each size. Not a test.

    python bench/coarse_sample.py [--sizes 3000,6000,10000] [--memories 175000]

Each size runs in a fresh process (so peak memory is its own): vectors of clustered synthetic
384-d data stand for a sample of a `--memories`-memory corpus, and `coarse.top_level_labels`
clusters them as a plan would (one thread, as planning runs). Prints seconds and the peak
resident memory above the process's start, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

DIMENSIONS = 384
TOPICS = 40


def measure(sample: int, memories: int) -> dict[str, float]:
    """One size, in this process."""
    import numpy as np

    from memory_bank.config import TaxonomyConfig
    from memory_bank.taxonomy.coarse import top_level_labels

    rng = np.random.default_rng(0)
    centres = rng.normal(size=(TOPICS, DIMENSIONS))
    vectors = centres[rng.integers(0, TOPICS, sample)] + 0.8 * rng.normal(size=(sample, DIMENSIONS))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    labels = top_level_labels(vectors, memories, TaxonomyConfig(coarse_sample=sample))
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "sample": sample,
        "seconds": seconds,
        "peak_gb": (peak - before) / 1024**2,
        "groups": int(labels.max()) + 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3000,6000,10000")
    parser.add_argument("--memories", type=int, default=175_000)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's size
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.memories)))
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    print(
        f"{'sample':>7}  {'seconds':>7}  {'peak GB':>7}  {'groups':>6}  load (1 min) before/after"
    )
    for size in (int(part) for part in args.sizes.split(",")):
        load_before = os.getloadavg()[0]
        child = [sys.executable, __file__, "--one", str(size), "--memories", str(args.memories)]
        done = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{row['sample']:>7,}  {row['seconds']:>7.1f}  {row['peak_gb']:>7.2f}  "
            f"{row['groups']:>6}  {load_before:.1f}/{os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
