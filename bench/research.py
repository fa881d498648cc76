"""Multi-hop retrieval: the research loop against hybrid search and `ask` on HotpotQA-100 (dev).

    python bench/research.py [--eval-dir ../shared/eval] [--out .bench/research]
                             [--store DIR] [--modes hybrid,ask,research] [--rounds N]

The corpus (994 paragraphs) is ingested once into `<out>/store` (or --store is reused). Each mode
has its own query service (its own query vector cache, so every mode pays for its own
embeddings; one untimed warm-up question first), and the modes take turns question by question,
so load on the shared machine hits them alike; the research / ask latency ratio is also given
per question.
Scoring is the evaluation harness's (`jobs.evaluate`): hybrid ranks its hits (hybrid-no-links:
the same search without following title links, what the research loop searches with); `ask` and
`research` rank the files they cite, in citation order. Prints R@2, R@5, all-gold@2/@5 and
answer-string match overall and per question type, p50/p95 latency, and the load average
(latency on a shared machine is noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from jobs.evaluate import StoreIndex, corpus_sources_by_document  # noqa: E402
from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.app.service import QueryService  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.evaluation import Passage, prepare_dataset, score_question  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.evaluation.metrics import latency_percentiles, whitespace_token_count  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.store.layout import is_store  # noqa: E402

MODES = ("hybrid", "hybrid-no-links", "ask", "research")
TOP_K = 50


def run_mode(service, mode, question, rounds):
    if mode == "hybrid":
        hits = service.search(question, top_k=TOP_K, mode="hybrid")
        return hits, None
    if mode == "hybrid-no-links":  # the same search without the title links (for reference)
        hybrid = service._current().hybrid
        found = hybrid.hybrid_candidates(question, hybrid.encode_query(question), links=False)
        return [hybrid.corpus.chunk_hit(index, score) for index, score in found[:TOP_K]], None
    if mode == "ask":
        return None, service.ask(question)
    return None, service.research(question, max_iterations=rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", type=Path, default=development_eval_dir(REPO))
    parser.add_argument("--out", type=Path, default=REPO / ".bench" / "research")
    parser.add_argument("--store", type=Path, default=None, help="reuse this HotpotQA store")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--rounds", type=int, default=None, help="research rounds at most")
    args = parser.parse_args()
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]

    config = AppConfig()
    dataset = prepare_dataset(args.eval_dir / "hotpotqa", "hotpotqa", args.out / "hotpotqa")
    store = args.store or args.out / "store"
    embedder = Embedder(config.embedding)
    if not is_store(store):
        print(f"ingesting {len(dataset.source_files)} paragraphs into {store} ...", flush=True)
        MemoryBank(store, config=config).add(files=[dataset.corpus_dir])
    index = StoreIndex(store, corpus_sources_by_document(dataset))

    # Modes take turns question by question, so a load change on the shared machine hits all
    # of them alike; each has its own service (its own query cache: every mode pays for its
    # own embeddings).
    services = {mode: QueryService(store, config, embedder) for mode in modes}
    for mode, service in services.items():
        run_mode(service, mode, "What is the capital of France?", args.rounds)  # warm-up
    results: dict[str, list] = {mode: [] for mode in modes}
    for question in dataset.questions:
        for mode, service in services.items():
            began = time.perf_counter()
            hits, answered = run_mode(service, mode, question.question, args.rounds)
            elapsed = time.perf_counter() - began
            if hits is not None:
                passages = [Passage(index.source_of_hit(hit.document_id), hit.text) for hit in hits]
                generated = None
            else:
                passages = index.answer_passages(answered.answer, answered.sources)
                generated = answered.answer
            results[mode].append(
                score_question(
                    dataset,
                    question,
                    passages,
                    mode=mode,
                    latency_seconds=elapsed,
                    count_tokens=whitespace_token_count,
                    budgets=(1024,),
                    generated_answer=generated,
                )
            )
    print_table(results, dataset.questions)
    if "ask" in results and "research" in results:
        ratios = [
            r.latency_seconds / a.latency_seconds
            for r, a in zip(results["research"], results["ask"], strict=True)
        ]
        print(
            f"research / ask latency, per question: median {np.median(ratios):.2f}x, "
            f"p90 {np.percentile(ratios, 90):.2f}x; load {_load()}"
        )
    return 0


def print_table(results, questions) -> None:
    kind_of = {question.qid: question.kind for question in questions}
    table = Table(title=f"HotpotQA-100 (dev): research vs hybrid vs ask, load {_load()}")
    for column in ("mode", "questions", "R@2", "R@5", "AE@2", "AE@5", "answer", "p50 ms", "p95 ms"):
        table.add_column(column, justify="left" if column in ("mode", "questions") else "right")
    for mode, rows in results.items():
        for kind in ("all", "bridge", "comparison"):
            chosen = [row for row in rows if kind == "all" or kind_of[row.qid] == kind]
            if not chosen:
                continue
            matches = [row.answer_match for row in chosen if row.answer_match is not None]
            latency = latency_percentiles([row.latency_seconds for row in chosen])
            table.add_row(
                mode if kind == "all" else "",
                f"{kind} ({len(chosen)})",
                _percent([row.recall_at_k[2] for row in chosen]),
                _percent([row.recall_at_k[5] for row in chosen]),
                _percent([row.all_evidence_at_k[2] for row in chosen]),
                _percent([row.all_evidence_at_k[5] for row in chosen]),
                _percent(matches) if matches else "-",
                f"{latency['p50'] * 1000:.0f}",
                f"{latency['p95'] * 1000:.0f}",
            )
    Console(width=140).print(table)


def _percent(values) -> str:
    return f"{100.0 * sum(float(value) for value in values) / len(values):.1f}"


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
