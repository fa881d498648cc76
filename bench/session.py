"""Session-mode benchmark: graph analysis throughput at 10,000 nodes and intercept latency.

    python bench/session.py [--nodes 10000] [--intercepts 30]

Nodes are real text from the development datasets (../shared/eval or $MEMORY_BANK_EVAL_DIR):
HotpotQA paragraphs, FairytaleQA story paragraphs and QMSum meeting turns in windows, embedded
with the offline model. Measured:
- the batch graph step of an ingest of all of them at once (candidate retrieval, the two-phase
  analysis of every candidate pair, applying the verdicts): nodes and pairs per second;
- hybrid retrieval (top-k plus neighbours) on the 10k-node graph: ms per query;
- `intercept` on a session whose graph already holds those nodes (classify, structure, embed,
  retrieve, analyse, interaction entry, plan, checkpoint to Parquet): ms per context, p50/p95.
It prints a table; it is not a test.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.graph.analysis import NodeView  # noqa: E402
from memory_bank.graph.batch import (  # noqa: E402
    BatchOutcome,
    analyze_tasks,
    apply_verdicts,
    candidate_tasks,
    memory_node,
    run_tasks,
)
from memory_bank.graph.graph import QueryGraph  # noqa: E402
from memory_bank.graph.persist import take_changes  # noqa: E402
from memory_bank.graph.storage import GraphStorage  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.session.service import SessionService  # noqa: E402
from memory_bank.text.lexicon import stemmed_search_tokens  # noqa: E402


def eval_dir() -> Path:
    configured = os.environ.get("MEMORY_BANK_EVAL_DIR")
    return Path(configured) if configured else ROOT.parent / "shared" / "eval"


def texts(limit: int) -> list[str]:
    found: list[str] = []
    corpus = json.loads((eval_dir() / "hotpotqa" / "hotpotqa_train_100_corpus.json").read_text())
    found += [
        f"{title}. {' '.join(s.strip() for s in sentences)}"
        for title, sentences in sorted(corpus.items())
    ]
    for story in sorted((eval_dir() / "fairytaleqa" / "val" / "section-stories").glob("*.csv")):
        with story.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                found += [
                    p.strip().replace("\n", " ")
                    for p in row["text"].split("\n\n")
                    if len(p.split()) > 12
                ]
    for meeting in sorted((eval_dir() / "qmsum" / "val").glob("*.json")):
        turns = [
            f"{t['speaker']}: {t['content']}"
            for t in json.loads(meeting.read_text())["meeting_transcripts"]
        ]
        found += [" ".join(turns[i : i + 3]) for i in range(0, len(turns), 3)]
    if len(found) < limit:  # then the HotpotQA paragraphs' sentences, two at a time
        for _, sentences in sorted(corpus.items()):
            found += [
                " ".join(s.strip() for s in sentences[i : i + 2])
                for i in range(0, len(sentences), 2)
            ]
    return found[:limit]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--intercepts", type=int, default=30)
    args = parser.parse_args()
    config = AppConfig()
    embedder = Embedder(config.embedding)
    corpus = texts(args.nodes + args.intercepts)
    # The intercepted contexts come from the front (HotpotQA paragraphs), the nodes after them.
    contexts, nodes_text = corpus[: args.intercepts], corpus[args.intercepts :]
    started = time.perf_counter()
    vectors = embedder.encode(nodes_text)
    embed_seconds = time.perf_counter() - started

    # --- the batch graph step of one ingest of every node ---------------------------------
    graph = QueryGraph(config.retrieval.alpha)
    ids = [f"m{i:06d}" for i in range(len(nodes_text))]
    fresh = [
        memory_node(node_id, text, text[:80], [], vector, time.time(), "bench")
        for node_id, text, vector in zip(ids, nodes_text, vectors, strict=True)
    ]
    views = {
        node_id: NodeView(node_id, text, text[:80], [], 0.0, vector, text)
        for node_id, text, vector in zip(ids, nodes_text, vectors, strict=True)
    }
    started = time.perf_counter()
    tasks = candidate_tasks(graph, fresh, views.__getitem__, config.retrieval.top_k)
    retrieve_seconds = time.perf_counter() - started
    started = time.perf_counter()
    results = run_tasks(tasks, analyze_call=analyze_tasks)
    analyse_seconds = time.perf_counter() - started
    started = time.perf_counter()
    outcome = BatchOutcome()
    apply_verdicts(graph, tasks, results, embedder.encode, time.time(), outcome, new_ids=ids)
    apply_seconds = time.perf_counter() - started
    pairs = sum(len(task.candidates) for task in tasks)

    # --- retrieval on the built graph -------------------------------------------------------
    queries = embedder.encode(contexts[:20] or nodes_text[:20])
    timings = []
    for query_text, query in zip(contexts[:20] or nodes_text[:20], queries, strict=True):
        started = time.perf_counter()
        graph.retrieve(query, stemmed_search_tokens(query_text), config.retrieval.top_k)
        timings.append(1000 * (time.perf_counter() - started))

    # --- intercepts on a session over that graph --------------------------------------------
    with tempfile.TemporaryDirectory() as scratch:
        storage = GraphStorage(Path(scratch) / "store", config.retrieval.alpha)
        sessions = SessionService(storage, config, embedder)
        state = storage.state
        for node in graph.nodes.values():
            state.graph.put_node(node)
        take_changes(state)
        session = sessions.open_session("What do these documents say about the people they name?")
        intercepts = []
        for context in contexts:
            started = time.perf_counter()
            sessions.intercept(session.doc_id, context)
            intercepts.append(1000 * (time.perf_counter() - started))

    print(
        f"\nSession mode: {len(nodes_text)} nodes of real text (HotpotQA, FairytaleQA, QMSum), "
        f"embedded in {embed_seconds:.1f} s; {os.cpu_count()} CPUs"
    )
    rows = [
        ("batch graph step: candidate retrieval (s)", f"{retrieve_seconds:.1f}"),
        ("batch graph step: two-phase analysis of the pairs (s)", f"{analyse_seconds:.1f}"),
        ("batch graph step: applying verdicts, re-embedding (s)", f"{apply_seconds:.1f}"),
        ("candidate pairs analysed", f"{pairs}"),
        (
            "throughput: nodes/s (whole step)",
            f"{len(ids) / (retrieve_seconds + analyse_seconds + apply_seconds):.0f}",
        ),
        ("throughput: pairs/s (analysis)", f"{pairs / max(analyse_seconds, 1e-9):.0f}"),
        (
            "edges: related / merge; conflicts",
            f"{outcome.related} / {outcome.merges}; {len(outcome.conflicts)}",
        ),
        (
            "hybrid retrieval at this size: p50 / p95 (ms)",
            f"{statistics.median(timings):.1f} / {percentile(timings, 0.95):.1f}",
        ),
        (
            f"intercept per context ({len(intercepts)} contexts): p50 / p95 (ms)",
            f"{statistics.median(intercepts):.0f} / {percentile(intercepts, 0.95):.0f}"
            if intercepts
            else "-",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"\n| {'measure':{width}} | {'value':>14} |\n|{'-' * (width + 2)}|{'-' * 16}|")
    for label, value in rows:
        print(f"| {label:{width}} | {value:>14} |")


if __name__ == "__main__":
    main()
