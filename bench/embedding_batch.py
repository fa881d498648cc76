"""What `embedding.batch_size` costs: time and peak memory of `encode_chunks` per batch size.
Not a test.

    python bench/embedding_batch.py [--sizes 64 32 16] [--chunks 120]

Each size runs in a fresh process (so its peak memory is its own): chunks of six HotpotQA dev
paragraphs each (about 600 tokens) are embedded with the configured runtime after one small
warm-up call that loads the model. Prints wall and CPU seconds and the peak resident memory,
with the load average before each run. Timings: run under `flock /tmp/bench.lock`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402

PARAGRAPHS_PER_CHUNK = 6


def measure(batch_size: int, chunks: int) -> dict[str, float]:
    """One batch size, in this process."""
    from memory_bank.config import EmbeddingConfig
    from memory_bank.index.embedding import Embedder

    corpus_file = development_eval_dir(REPO) / "hotpotqa" / "hotpotqa_train_100_corpus.json"
    paragraphs = ["".join(sentences) for sentences in json.loads(corpus_file.read_text()).values()]
    step = PARAGRAPHS_PER_CHUNK
    texts = [" ".join(paragraphs[i : i + step]) for i in range(0, step * chunks, step)]
    embedder = Embedder(EmbeddingConfig(batch_size=batch_size))
    embedder.encode_chunks(texts[:2])  # loads the model
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.encode_chunks(texts)
    return {
        "batch": batch_size,
        "chunks": len(texts),
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "loaded_mb": loaded,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 32, 16])
    parser.add_argument("--chunks", type=int, default=120)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child's batch size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.chunks)))
        return
    print(f"{'batch':>5}  {'chunks':>6}  {'wall s':>6}  {'CPU s':>6}  {'peak MB':>7}  load")
    for size in args.sizes:
        load = os.getloadavg()[0]
        child = [sys.executable, __file__, "--one", str(size), "--chunks", str(args.chunks)]
        done = subprocess.run(child, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{row['batch']:>5}  {row['chunks']:>6}  {row['wall_s']:>6.1f}  {row['cpu_s']:>6.1f}"
            f"  {row['peak_mb']:>7,.0f}  {load:.1f}"
        )


if __name__ == "__main__":
    main()
