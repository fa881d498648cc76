"""Ingest throughput of the Ray pipeline next to the raw `encode` throughput of the same model.

    python bench/ingest.py [--tokens 1000000] [--store bench/out/ingest_store] [--quick]
                           [--set ray.memorize.concurrency=2 ...]
    python bench/ingest.py --runners [stories,1000000]   # in-process runner beside Ray
    python bench/ingest.py --nodes 1,2,3                 # on local clusters of 1-CPU nodes

Builds (once, cached under bench/out/corpus_<tokens>/) a corpus of at least `--tokens` cl100k
tokens of real text: the QMSum validation meetings as conversation JSON, the HotpotQA corpus
paragraphs in Markdown documents of 20 paragraphs, the FairytaleQA validation stories as text,
and data/sample. When those are not enough, new documents are made by recombining their real
paragraphs and meeting turns (fixed seed). It then ingests the corpus into a fresh store with
`ray_runner` (configs/local.yaml, with `--set` overrides) and, after Ray is shut down, times the
model's own `encode` (batch 64, torch threads = cores) on the stored chunks twice: (a) the chunk
texts, which the model truncates at 256 word-pieces, and (b) the very windows the pipeline
embeds, i.e. equal model work. Prints one table and the whole-ingest / raw-encode ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench.corpus import OUT, SEED, Corpus, build_corpus  # noqa: E402
from memory_bank.config import AppConfig, load_config  # noqa: E402
from memory_bank.store.layout import looks_like_store  # noqa: E402

RAW_BATCH_SIZE = 64
TARGET_RATIO = 0.8
BUSY_LOAD = 1.0  # 1-minute load average above which another process is competing for the cores
# Ray starts its workers at this niceness (raylet's `worker_niceness` default); the raw runs take
# it too, so that on a machine busy with other work both sides yield the CPU alike.
RAY_WORKER_NICENESS = 15


# --- measuring ----------------------------------------------------------------------------------


@dataclass
class Row:
    stage: str
    seconds: float
    note: str = ""
    rated: bool = True  # False: a fixed cost shown for reference, no throughput


@dataclass
class Totals:
    documents: int
    chunks: int
    tokens: int

    def cells(self, row: Row) -> list[str]:
        def rate(count: int) -> str:
            return f"{count / row.seconds:,.1f}" if row.rated and row.seconds > 0 else "-"

        return [
            row.stage,
            f"{row.seconds:.1f}",
            rate(self.documents),
            rate(self.chunks),
            rate(self.tokens),
            row.note,
        ]


def with_overrides(config: AppConfig, overrides: list[str]) -> AppConfig:
    """Apply `dotted.key=value` settings (values parsed as YAML) and validate the result."""
    import yaml

    raw = config.model_dump()
    for override in overrides:
        key, _, value = override.partition("=")
        *parents, leaf = key.split(".")
        node = raw
        for part in parents:
            node = node[part]
        node[leaf] = yaml.safe_load(value)
    return AppConfig.model_validate(raw)


def fresh_store(store: Path) -> None:
    """Remove a previous bench store; refuse to delete anything that is not a store."""
    if not store.exists():
        return
    if not looks_like_store(store):
        raise SystemExit(f"{store} exists and is not a memory-bank store; choose another --store")
    shutil.rmtree(store)


@dataclass
class IngestRun:
    rows: list[Row]
    total_seconds: float
    skipped: list[str]


def run_ingest(corpus: Corpus, store: Path, config: AppConfig) -> IngestRun:
    """Ingest the corpus with Ray already up, so the rows time the ingest, not cluster start."""
    import ray

    from actors.runtime import ensure_ray
    from pipeline.executor import ray_runner

    fresh_store(store)
    started = time.perf_counter()
    started_ray = ensure_ray(config.ray)
    ray_seconds = time.perf_counter() - started
    try:
        summary = ray_runner(config).run(store, files=[corpus.directory])
    finally:
        if started_ray:
            ray.shutdown()  # the raw runs below get the machine to themselves
    notes = {
        "embed+memorize": "wall time of the streaming stage",
        "embed busy": "sum of embed actor batch times",
        "memorize busy": "sum of memorize task batch times",
        "readme vectors": "each directory's mean memory direction, no model",
    }
    rows = [Row("(ray start, before the ingest)", ray_seconds, "not counted below", rated=False)]
    # Stages in the order they ran; "<stage> busy" sums a stage's own batch times inside the one
    # streaming Ray Data stage "embed+memorize", so it is shown indented, as a part of it.
    for stage, seconds in summary.stage_seconds.items():
        if stage != "start ray":
            label = f"  {stage}" if stage.endswith(" busy") else stage
            rows.append(Row(label, seconds, notes.get(stage, "")))
    rows.append(
        Row(
            "whole ingest",
            summary.total_seconds,
            f"{summary.documents} docs, {summary.chunks} chunks, {summary.directories} dirs",
        )
    )
    return IngestRun(rows, summary.total_seconds, summary.skipped)


def pipeline_windows(texts: list[str], config: AppConfig, model) -> tuple[list[str], int]:
    """The text of every window `Embedder.encode_chunks` feeds the model, in chunk order, and
    the word-pieces the pipeline feeds for them (with [CLS]/[SEP])."""
    from memory_bank.index.embedding import Embedder

    # `_tokenize` is how the pipeline cuts windows; reusing it keeps the two runs' work equal.
    tokenized = Embedder(config.embedding, model=model)._tokenize(texts)
    offsets = [chunk_offsets for _, chunk_offsets in model.tokenizer.pieces(texts)]
    windows, pieces = [], 0
    for text, chunk, chunk_offsets in zip(texts, tokenized, offsets, strict=True):
        for start, end in chunk.windows:
            windows.append(
                text[chunk_offsets[start][0] : chunk_offsets[end - 1][1]] if end > start else ""
            )
            pieces += end - start + 2
    return windows, pieces


def model_pieces(model, texts: list[str]) -> int:
    """Word-pieces the model actually reads (with [CLS]/[SEP], after truncation)."""
    ids = model.tokenizer(texts, add_special_tokens=True, verbose=False)["input_ids"]
    return sum(min(len(row), model.max_seq_length) for row in ids)


def run_raw_encode(chunk_texts: list[str], config: AppConfig) -> list[Row]:
    """Time `model.encode` on the chunk texts and on the pipeline's windows of them."""
    from memory_bank.index.minilm_torch import TorchMiniLM

    os.nice(max(0, RAY_WORKER_NICENESS - os.nice(0)))
    # As the pipeline's embed actor does: same threads, same precision.
    runtime = TorchMiniLM(num_threads=os.cpu_count(), precision=config.embedding.precision)
    model = runtime.model
    windows, pipeline_pieces = pipeline_windows(chunk_texts, config, runtime)
    model.encode(chunk_texts[:RAW_BATCH_SIZE], batch_size=RAW_BATCH_SIZE)  # warm up
    rows = []
    for label, texts in [
        ("raw encode (a) chunk texts", chunk_texts),
        ("raw encode (b) pipeline windows", windows),
    ]:
        started = time.perf_counter()
        model.encode(texts, batch_size=RAW_BATCH_SIZE, show_progress_bar=False)
        seconds = time.perf_counter() - started
        note = f"{len(texts):,} inputs, {model_pieces(model, texts):,} word-pieces"
        if texts is windows:
            note += f" (pipeline: {pipeline_pieces:,})"
        rows.append(Row(label, seconds, note))
    return rows


# --- output -------------------------------------------------------------------------------------


def print_table(rows: list[Row], totals: Totals) -> None:
    header = ["stage", "seconds", "docs/s", "chunks/s", "tokens/s", "note"]
    table = [header] + [totals.cells(row) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for number, line in enumerate(table):
        print(
            "  ".join(
                cell.ljust(width) if i in (0, 5) else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(line, widths, strict=True))
            ).rstrip()
        )
        if number == 0:
            print("  ".join("-" * width for width in widths))


def load_note(label: str) -> tuple[str, float]:
    one, five, fifteen = os.getloadavg()
    return f"{label} {one:.2f}/{five:.2f}/{fifteen:.2f}", one


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tokens", type=int, default=1_000_000, help="corpus size in cl100k tokens"
    )
    parser.add_argument("--store", type=Path, default=OUT / "ingest_store")
    parser.add_argument("--quick", action="store_true", help="a 100k-token corpus for a smoke run")
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "local.yaml")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting, e.g. ray.memorize.concurrency=2 (repeatable)",
    )
    parser.add_argument(
        "--nodes",
        default=None,
        metavar="1,2,3",
        help="instead: ingest with `ray job submit` on local clusters of these many 1-CPU "
        "nodes (bench/ingest_nodes.py), next to the ideal linear line",
    )
    parser.add_argument(
        "--runners",
        nargs="?",
        const="stories,TOKENS",
        default=None,
        metavar="SIZES",
        help="instead: the in-process runner and Ray side by side, each a whole `memory-bank "
        "ingest` process, on these corpora (bench/runners.py; `stories` is the ~70k-token one, "
        "a number this script's corpus of that many tokens; default: stories and --tokens)",
    )
    args = parser.parse_args()
    target = 100_000 if args.quick else args.tokens
    if args.runners:
        from bench.runners import compare

        compare(args.runners.replace("TOKENS", str(target)).split(","))
        return
    config = with_overrides(load_config(args.config), args.overrides)

    corpus = build_corpus(target)
    if args.nodes:
        from bench.ingest_nodes import run_node_sweep

        run_node_sweep(corpus, [int(n) for n in args.nodes.split(",")], config, OUT / "nodes")
        return
    loads = [load_note("before ingest")]
    ingest = run_ingest(corpus, args.store, config)
    loads.append(load_note("after ingest"))

    import pyarrow.compute as pc

    from memory_bank.store.reader import StoreReader

    reader = StoreReader(args.store)
    chunk_texts = reader.chunks().column("text").to_pylist()
    totals = Totals(
        documents=reader.documents().num_rows,
        chunks=len(chunk_texts),
        tokens=int(pc.sum(reader.documents().column("token_count")).as_py()),
    )
    raw_rows = run_raw_encode(chunk_texts, config)
    loads.append(load_note("after raw encode"))

    print()
    recombined = (
        f"; {corpus.recombined_documents} of them ({corpus.recombined_tokens:,} tokens) recombined "
        f"from real paragraphs and meeting turns (seed {SEED}) to reach the target"
        if corpus.recombined_documents
        else "; all real text, none recombined"
    )
    print(
        f"Corpus {corpus.directory.relative_to(REPO)}: {corpus.documents} files, "
        f"{corpus.tokens:,} cl100k tokens (QMSum val meetings as JSON conversations, HotpotQA "
        f"paragraphs as Markdown, FairytaleQA val stories as text, data/sample){recombined}."
    )
    print(
        f"Ingested: {totals.documents} documents, {totals.chunks} chunks, {totals.tokens:,} tokens"
        + (f"; {len(ingest.skipped)} files skipped: {ingest.skipped[:3]}" if ingest.skipped else "")
        + "."
    )
    stages = {
        name: getattr(config.ray, name).model_dump() for name in ("chunk", "embed", "memorize")
    }
    print(
        f"Ray ingest, {args.config.relative_to(REPO) if args.config.is_relative_to(REPO) else args.config}"
        f"{' + ' + ', '.join(args.overrides) if args.overrides else ''}: {stages}, embedding "
        f"{config.embedding.model_dump()}; {os.cpu_count()} cores. Raw encode: "
        f"TorchMiniLM(num_threads={os.cpu_count()}, precision={config.embedding.precision}), model.encode(batch_size={RAW_BATCH_SIZE}), after "
        f"ray.shutdown(), at the Ray workers' niceness {os.nice(0)}."
    )
    print("Load average (1/5/15 min): " + "; ".join(note for note, _ in loads) + ".")
    if loads[0][1] > BUSY_LOAD:
        print(
            f"WARNING: 1-minute load {loads[0][1]:.2f} before the ingest: other work competed "
            f"for the {os.cpu_count()} cores; rerun when the machine is idle."
        )
    print()
    print_table(ingest.rows + raw_rows, totals)
    print()
    for raw in raw_rows:
        ratio = (totals.chunks / ingest.total_seconds) / (totals.chunks / raw.seconds)
        verdict = "meets" if ratio >= TARGET_RATIO else "misses"
        print(
            f"whole ingest / {raw.stage.removeprefix('raw encode ')}: {ratio:.2f} chunks/s ratio "
            f"({verdict} the >= {TARGET_RATIO} target)"
        )
    truncated, windows = raw_rows
    print(
        f"(a) / (b) raw encode alone: {truncated.seconds / windows.seconds:.2f}, "
        f"the most the (a) ratio could reach if everything but the model were free: the pipeline "
        f"embeds whole chunks, (a) only their first 256 word-pieces."
    )


if __name__ == "__main__":
    main()
