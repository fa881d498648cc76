"""Live conversation memory: QMSum meetings replayed turn by turn, and tier latencies.

    python bench/conversation.py qmsum   [--meetings 8] [--store DIR] [--out DIR]
    python bench/conversation.py latency [--sizes 200,2000,20000] [--queries 50]
    python bench/conversation.py locomo  [--budgets 1024,2048]

qmsum: each QMSum val meeting (the first --meetings, by name) is replayed turn by turn through
a fresh `ConversationMemory` with the default settings (working memory 4,000 tokens, summary
400, at most a quarter of a recall's budget), recalled with episodes of ±0, ±2 (the default)
and ±4 turns around each hit; then each span-annotated query of that meeting is recalled within 1k and 2k tokens
(summary included, it covers no evidence) and scored like the evaluation harness: evidence
recall = share of the gold turns inside the context. Compared with hybrid search over the
batch-ingested store of the same meetings (`jobs.evaluate`'s QMSum corpus: 30-turn parts),
over all meetings as the harness runs it and restricted to the query's own meeting (the
conversation memory only ever holds one meeting).

locomo: each LoCoMo conversation (../shared/eval/locomo, the development five) is replayed turn
by turn with its sessions' dates (a shared photo's caption in brackets after the turn's text),
then every non-adversarial question is recalled within each budget (summary included):
evidence recall = share of the gold evidence turns among the recalled ones, by question
category; temporal answer-date recall = share of temporal questions whose gold answer names a
date that the recalled text writes (either "7 May 2023" or "2023-05-07").

latency: turns of the QMSum transcripts (real speech, cycled) go into one conversation up to
each size; reported per size: eviction latency (summary update and atomic state write; the
turn's embedding happens when it is added), the latency of adding one turn (embedding and
fsynced appends) and recall latency (query embedding, scoring every turn, selection), with the
load average, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from memory_bank.app.bank import MemoryBank  # noqa: E402
from memory_bank.config import AppConfig, ConversationConfig  # noqa: E402
from memory_bank.conversation.memory import ConversationMemory  # noqa: E402
from memory_bank.evaluation import Passage, prepare_dataset, score_question  # noqa: E402
from memory_bank.evaluation.dataset_files import development_eval_dir  # noqa: E402
from memory_bank.evaluation.locomo import (  # noqa: E402
    ADVERSARIAL,
    TEMPORAL,
    evidence_recall,
    gold_date,
    holds_date,
    load_conversation,
)
from memory_bank.evaluation.metrics import latency_percentiles  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.store.layout import is_store  # noqa: E402
from memory_bank.text.tokens import count_tokens  # noqa: E402

BUDGETS = (1024, 2048)
TURNS_PER_PART = 30  # prepare_dataset's default: the part files the harness ingests
HYBRID_TOP_K = 50


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _meetings(eval_dir: Path, count: int | None) -> list[Path]:
    return sorted((eval_dir / "qmsum" / "val").glob("*.json"))[:count]


# --- QMSum replay --------------------------------------------------------------------------------


def qmsum(args: argparse.Namespace) -> None:
    config = AppConfig()
    embedder = Embedder(config.embedding)
    dataset = prepare_dataset(
        args.eval_dir / "qmsum", "qmsum", args.out / "qmsum", max_groups=args.meetings
    )
    specific = [q for q in dataset.questions if q.kind == "specific" and q.gold_units]
    by_meeting: dict[str, list] = {}
    for question in specific:
        by_meeting.setdefault(question.meta["meeting"], []).append(question)

    replays = {f"replay, episodes of ±{n} turns": n for n in args.context_turns}
    results: dict[str, list] = {name: [] for name in replays}
    results |= {"hybrid (all meetings)": [], "hybrid (own meeting)": []}
    replay_seconds = []
    with tempfile.TemporaryDirectory() as scratch:
        for meeting_file in _meetings(args.eval_dir, args.meetings):
            meeting = meeting_file.stem
            record = json.loads(meeting_file.read_text(encoding="utf-8"))
            transcript = record["meeting_transcripts"]
            # Blank turns are refused; remember each replayed turn's number in the transcript.
            kept = [
                n for n, t in enumerate(transcript) if t["content"].strip() and t["speaker"].strip()
            ]
            turns = [(transcript[n]["speaker"], transcript[n]["content"], None) for n in kept]
            memory = ConversationMemory(Path(scratch) / meeting, embedder, ConversationConfig())
            began = time.perf_counter()
            memory.add_turns(turns)
            replay_seconds.append((time.perf_counter() - began) / max(1, len(turns)))
            for name, context in replays.items():
                memory.config = memory.config.model_copy(update={"context_turns": context})
                for question in by_meeting.get(meeting, []):
                    for budget in BUDGETS:
                        began = time.perf_counter()
                        recalled = memory.recall(question.question, max_tokens=budget)
                        elapsed = time.perf_counter() - began
                        passages = [Passage(None, recalled.summary)] if recalled.summary else []
                        passages += [
                            Passage(_part(meeting, kept[t.turn_id], len(transcript)), t.text)
                            for t in recalled.turns
                        ]
                        results[name].append(
                            (budget, _score(dataset, question, passages, budget, elapsed))
                        )

    store = args.store or args.out / "qmsum_store"
    bank = MemoryBank(store, config=config, embedder=embedder)
    if not is_store(store):
        print(f"ingesting {len(dataset.source_files)} meeting parts into {store} ...", flush=True)
        bank.add(files=[dataset.corpus_dir])
    source_key = {}
    for question in specific:
        began = time.perf_counter()
        hits = bank.search(question.question, top_k=4 * HYBRID_TOP_K, mode="hybrid")
        elapsed = time.perf_counter() - began
        for hit in hits:
            source_key.setdefault(hit.source, dataset.source_key(hit.source))
        every = [Passage(source_key[h.source], h.text) for h in hits[:HYBRID_TOP_K]]
        own = [
            Passage(source_key[h.source], h.text)
            for h in hits
            if (source_key[h.source] or "").startswith(question.meta["meeting"] + "/")
        ][:HYBRID_TOP_K]
        for budget in BUDGETS:
            results["hybrid (all meetings)"].append(
                (budget, _score(dataset, question, every, budget, elapsed))
            )
            results["hybrid (own meeting)"].append(
                (budget, _score(dataset, question, own, budget, elapsed))
            )

    table = Table(
        title=f"QMSum val, {len(by_meeting)} meetings, {len(specific)} span queries: "
        f"evidence recall (load {_load()})"
    )
    for column in ("retrieval", "ER@1k", "ER@2k", "all-gold@2k", "p50 ms"):
        table.add_column(column, justify="left" if column == "retrieval" else "right")
    for name, rows in results.items():
        cells = []
        for budget in BUDGETS:
            scored = [row for b, row in rows if b == budget]
            cells.append(f"{100 * np.mean([r.evidence_recall[budget] for r in scored]):.1f}")
        full = [row for b, row in rows if b == 2048]
        complete = np.mean([r.evidence_recall[2048] == 1.0 for r in full])
        latency = latency_percentiles([r.latency_seconds for b, r in rows])["p50"]
        table.add_row(name, *cells, f"{100 * complete:.1f}", f"{latency * 1000:.0f}")
    Console(width=140).print(table)
    print(f"replay: {1000 * np.mean(replay_seconds):.1f} ms per turn (batched embedding)")


def _part(meeting: str, turn_id: int, total: int) -> str:
    start = (turn_id // TURNS_PER_PART) * TURNS_PER_PART
    end = min(start + TURNS_PER_PART, total) - 1
    return f"{meeting}/turns_{start:04d}-{end:04d}.json"


def _score(dataset, question, passages, budget, elapsed):
    return score_question(
        dataset,
        question,
        passages,
        mode="x",
        latency_seconds=elapsed,
        count_tokens=count_tokens,
        budgets=(budget,),
    )


# --- LoCoMo replay -----------------------------------------------------------------------------

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


class CachedEncoder:
    """The embedder behind a text -> vector cache kept in a file (iteration over one data set
    re-embeds nothing it embedded before)."""

    def __init__(self, encoder: Embedder, path: Path) -> None:
        self.encoder, self.path = encoder, path
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            stored = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(stored["texts"].tolist(), stored["vectors"], strict=True))
        self.added = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            for text, vector in zip(missing, self.encoder.encode(missing), strict=True):
                self.vectors[text] = np.asarray(vector, dtype=np.float32)
            self.added += len(missing)
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            texts = list(self.vectors)
            np.savez(
                self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts])
            )


def locomo(args: argparse.Namespace) -> None:
    encoder = CachedEncoder(Embedder(AppConfig().embedding), args.out / "locomo_vectors.npz")
    budgets = [int(b) for b in args.budgets.split(",")]
    rows: list[dict] = []
    recall_seconds: list[float] = []
    files = sorted((args.eval_dir / "locomo").glob("*.json"))
    with tempfile.TemporaryDirectory() as scratch:
        for path in files:
            talk = load_conversation(path, captions=not args.no_captions)
            memory = ConversationMemory(
                Path(scratch) / talk.name, encoder, ConversationConfig(**args.config)
            )
            memory.add_turns([(t.speaker, t.text, t.timestamp) for t in talk.turns])
            dia_of = {number: turn.dia_id for number, turn in enumerate(talk.turns)}
            for question in talk.questions:
                if question.category == ADVERSARIAL or not question.evidence:
                    continue
                row = {"category": question.category, "date": gold_date(question.answer)}
                for budget in budgets:
                    began = time.perf_counter()
                    recalled = memory.recall(question.question, max_tokens=budget)
                    recall_seconds.append(time.perf_counter() - began)
                    returned = {dia_of[t.turn_id]: t.text for t in recalled.turns}
                    row[budget] = evidence_recall(set(returned), question.evidence)
                    if question.category == TEMPORAL and row["date"] is not None:
                        row[("date", budget)] = holds_date(recalled.context(), row["date"])
                        row[("evidence date", budget)] = any(
                            holds_date(returned[d], row["date"])
                            for d in question.evidence
                            if d in returned
                        )
                rows.append(row)
    encoder.save()
    captions = "without" if args.no_captions else "with"
    table = Table(
        title=f"LoCoMo dev, {len(files)} conversations, {len(rows)} questions ({captions} "
        "photo captions)"
    )
    table.add_column("questions")
    for budget in budgets:
        table.add_column(f"ER@{budget}", justify="right")
        table.add_column(f"all@{budget}", justify="right")
    for budget in budgets:
        table.add_column(f"date@{budget}", justify="right")
        table.add_column(f"in evidence@{budget}", justify="right")
    groups = [("all", rows)] + [
        (name, [r for r in rows if r["category"] == number])
        for number, name in LOCOMO_CATEGORIES.items()
    ]
    groups.append(
        (
            "temporal, gold names a day",
            [r for r in rows if r["date"] and r["date"].day and r["category"] == TEMPORAL],
        )
    )
    for name, chosen in groups:
        cells = []
        for budget in budgets:
            cells.append(f"{100 * np.mean([r[budget] for r in chosen]):.1f}")
            cells.append(f"{100 * np.mean([r[budget] == 1.0 for r in chosen]):.1f}")
        for budget in budgets:
            for key in ("date", "evidence date"):
                dated = [r[(key, budget)] for r in chosen if (key, budget) in r]
                cells.append(f"{100 * np.mean(dated):.1f} ({len(dated)})" if dated else "")
        table.add_row(f"{name} ({len(chosen)})", *cells)
    Console(width=160).print(table)
    print(
        "ER: mean share of the gold evidence turns recalled; all: share of questions with every "
        "gold turn recalled; date: the gold answer's date written in the recalled text; in "
        "evidence: written in a recalled gold evidence turn"
    )
    p50 = latency_percentiles(recall_seconds)["p50"]
    print(f"recall p50 {1000 * p50:.1f} ms (load {_load()}; embeddings cached)")


# --- latency ------------------------------------------------------------------------------------


def latency(args: argparse.Namespace) -> None:
    embedder = Embedder(AppConfig().embedding)
    embedder.encode(["warm up"])
    transcripts = []
    queries = []
    for meeting_file in _meetings(args.eval_dir, None):
        record = json.loads(meeting_file.read_text(encoding="utf-8"))
        transcripts += [
            (t["speaker"], t["content"])
            for t in record["meeting_transcripts"]
            if t["content"].strip() and t["speaker"].strip()
        ]
        queries += [q["query"] for q in record["specific_query_list"]]
    sizes = sorted(int(size) for size in args.sizes.split(","))
    table = Table(title=f"conversation memory latency (load before {_load()})")
    for column in (
        "turns",
        "evictions",
        "eviction p50 ms",
        "eviction p95 ms",
        "add turn p50 ms",
        "add turn p95 ms",
        "recall p50 ms",
        "recall p95 ms",
    ):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory() as scratch:
        memory = ConversationMemory(Path(scratch) / "talk", embedder, ConversationConfig())
        position = 0
        for size in sizes:
            seen = len(memory.eviction_seconds)
            while len(memory.turns) < size - args.single_adds:
                count = min(512, size - args.single_adds - len(memory.turns))
                batch = [transcripts[(position + i) % len(transcripts)] for i in range(count)]
                position += count
                memory.add_turns([(speaker, text, None) for speaker, text in batch])
            adds = []
            for _ in range(args.single_adds):
                speaker, text = transcripts[position % len(transcripts)]
                position += 1
                began = time.perf_counter()
                memory.add_turn(speaker, text)
                adds.append(time.perf_counter() - began)
            evictions = list(memory.eviction_seconds)[seen:]
            recalls = []
            for query in queries[: args.queries]:
                began = time.perf_counter()
                memory.recall(query)
                recalls.append(time.perf_counter() - began)
            evict = latency_percentiles(evictions) if evictions else {"p50": 0.0, "p95": 0.0}
            add = latency_percentiles(adds)
            recall = latency_percentiles(recalls)
            table.add_row(
                f"{len(memory.turns):,}",
                f"{len(evictions):,}",
                f"{evict['p50'] * 1000:.1f}",
                f"{evict['p95'] * 1000:.1f}",
                f"{add['p50'] * 1000:.1f}",
                f"{add['p95'] * 1000:.1f}",
                f"{recall['p50'] * 1000:.1f}",
                f"{recall['p95'] * 1000:.1f}",
            )
    Console(width=140).print(table)
    print(f"load after: {_load()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("qmsum", "latency", "locomo"))
    parser.add_argument("--eval-dir", type=Path, default=development_eval_dir(REPO))
    parser.add_argument("--out", type=Path, default=REPO / ".bench" / "conversation")
    parser.add_argument("--meetings", type=int, default=8)
    parser.add_argument("--store", type=Path, default=None, help="reuse this QMSum store")
    parser.add_argument("--sizes", default="200,2000,20000")
    parser.add_argument("--budgets", default="1024,2048", help="locomo: recall budgets")
    parser.add_argument("--no-captions", action="store_true", help="locomo: turns' text only")
    parser.add_argument(
        "--set",
        dest="config",
        type=lambda text: dict(json.loads(f"{{{text}}}")),
        default={},
        help="locomo: conversation settings, e.g. '\"context_turns\": 1'",
    )
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--single-adds", type=int, default=20)
    parser.add_argument(
        "--context-turns",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[0, 2, 4],
        help="episode widths to replay with (the default setting is 2)",
    )
    args = parser.parse_args()
    {"qmsum": qmsum, "latency": latency, "locomo": locomo}[args.part](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
