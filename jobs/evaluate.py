"""`python -m jobs.evaluate DATASET_DIR --format F --out DIR ...`: the evaluation harness.

Prepares a benchmark's corpus as ordinary source files, ingests it with the normal pipeline,
asks every question in each retrieval mode on the same store and scores the results
(memory_bank.evaluation). Writes `<out>/<dataset>.results.json`, `.table.txt`,
`.recall_by_budget.png` and `.manifest.json`, and prints the table.

    python -m jobs.evaluate ../shared/eval/hotpotqa --format hotpotqa --out .eval
    python -m jobs.evaluate ../shared/eval/hotpotqa --format hotpotqa --out .eval \
        --store .eval/hotpotqa/store --modes bm25,hybrid      # reuse an ingested store

Without --store the store at `<out>/<dataset>/store` is rebuilt, so changes to chunking or
memorizing are always measured; --store reuses a store and only adds corpus documents it lacks.
`--runner ray` ingests with the Ray pipeline (joining RAY_ADDRESS or a `ray job submit` cluster);
queries always run in this process.

What is scored is what each mode hands a reader:
- search modes: the chunk text of each hit (`SearchHit.text`), in rank order, attributed to the
  hit's source document; a README hit of tree mode is attributed sentence by sentence: the
  TL;DRs its summary quotes from memories of its subtree belong to those memories' sources,
  the rest (heading, what the directory holds) to no source.
- descent1 / descent3: every memory of the leaves reached from the root by README scores alone
  (beam 1 / beam 3), best hybrid score first; `hit` counts a gold source among them.
- ask and research: the answer. Each cited chunk file becomes one passage holding the answer sentences
  quoted from that chunk (so the answer's tokens count once against a budget); a cited chunk the
  answer does not quote carries the whole answer. R@k ranks the cited files' sources in citation
  order, and the answer itself is matched against the gold answers.
Only `EvalQuestion.question` reaches retrieval; gold fields are read by `score_question` alone.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from rich.console import Console

from memory_bank.app.bank import MemoryBank
from memory_bank.cli.progress_display import IngestProgress
from memory_bank.config import load_config
from memory_bank.errors import ConfigError, MemoryBankError
from memory_bank.evaluation import (
    DATASET_FORMATS,
    DatasetFormat,
    EvalDataset,
    QuestionResult,
    TokenCounter,
    WrittenReport,
    default_token_counter,
    prepare_dataset,
    score_question,
    write_report,
)
from memory_bank.evaluation.dataset_files import dataset_name
from memory_bank.evaluation.store_index import StoreIndex
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.text.inputs import load_sources

EVAL_MODES: tuple[str, ...] = (
    "bm25",
    "vector",
    "hybrid",
    "tree",
    "ask",
    "research",
    "descent1",
    "descent3",
)
ANSWER_MODES = ("ask", "research")  # modes that answer (a ChatResult) rather than rank hits
# Descent modes: the memories of the leaves a README-only descent from the root reaches with a
# beam of this many directories per level (`MemoryBank.descend`); scored like a search result,
# plus `hit`, whether any of them comes from a gold source.
DESCENT_BEAMS = {"descent1": 1, "descent3": 3}
# Search modes scoped to the document a question is asked of (`EvalDataset.asked_of`: the
# FairytaleQA story, the QMSum meeting), as `MemoryBank.search(within=...)`; on datasets whose
# questions are asked of the whole corpus they search the whole store. Not in the default modes.
SCOPED_MODES = {"hybrid-doc": "hybrid", "tree-doc": "tree"}
Runner = Literal["local", "ray"]
# Hits per search: enough chunk texts to fill the largest token budget (4k tokens) even where
# memories are short (HotpotQA paragraphs average about 95 tokens).
DEFAULT_TOP_K = 50
_NOISY_LOGGERS = ("bm25s", "sentence_transformers", "transformers", "httpx", "filelock")

log = logging.getLogger("jobs.evaluate")


@dataclass(frozen=True)
class EvalOptions:
    dataset_dir: Path
    dataset_format: DatasetFormat
    out_dir: Path
    modes: tuple[str, ...] = EVAL_MODES
    limit: int | None = None
    max_groups: int | None = None
    config_path: Path | None = None
    store: Path | None = None  # None: rebuild `<out>/<dataset>/store`
    runner: Runner = "local"
    top_k: int = DEFAULT_TOP_K
    max_iterations: int | None = None  # None: the config's retrieval.max_iterations


@dataclass
class EvalRun:
    """A finished evaluation: the written report and where the time went."""

    report: WrittenReport
    store: Path
    ingest_seconds: float
    ingested: bool
    query_seconds: dict[str, float] = field(default_factory=dict)  # per mode, summed over questions
    total_seconds: float = 0.0


def parse_args(argv: Sequence[str] | None = None) -> EvalOptions:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.evaluate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "dataset_dir", type=Path, help="the dataset folder (e.g. ../shared/eval/hotpotqa)"
    )
    parser.add_argument("--format", required=True, choices=DATASET_FORMATS)
    parser.add_argument(
        "--out", required=True, type=Path, help="directory for corpus, store and report"
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="evaluate at most this many questions"
    )
    parser.add_argument(
        "--max-groups", type=int, default=None, help="first N stories / meetings only"
    )
    parser.add_argument("--config", type=Path, default=None, help="YAML config (default: built-in)")
    parser.add_argument(
        "--modes",
        default=",".join(EVAL_MODES),
        help=f"comma-separated subset of {','.join(EVAL_MODES)}",
    )
    parser.add_argument(
        "--store", type=Path, default=None, help="reuse this store (ingest only what it lacks)"
    )
    parser.add_argument(
        "--runner", choices=get_args(Runner), default="local", help="ingest in-process or with Ray"
    )
    parser.add_argument(
        "--top-k", type=int, default=DEFAULT_TOP_K, help="hits per search (default %(default)s)"
    )
    parser.add_argument("--max-iterations", type=int, default=None, help="tool calls per `ask`")
    args = parser.parse_args(None if argv is None else list(argv))
    return EvalOptions(
        dataset_dir=args.dataset_dir,
        dataset_format=args.format,
        out_dir=args.out,
        modes=parse_modes(args.modes),
        limit=args.limit,
        max_groups=args.max_groups,
        config_path=args.config,
        store=args.store,
        runner=args.runner,
        top_k=args.top_k,
        max_iterations=args.max_iterations,
    )


def parse_modes(text: str) -> tuple[str, ...]:
    """ "bm25, hybrid" -> ("bm25", "hybrid"); unknown or no modes raise ConfigError."""
    modes = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    known = (*EVAL_MODES, *SCOPED_MODES)
    unknown = [mode for mode in modes if mode not in known]
    if unknown or not modes:
        raise ConfigError(f"--modes must name some of {', '.join(known)}; got {text!r}")
    return modes


def main(argv: Sequence[str] | None = None) -> int:
    # The handler's own level, because some libraries (bm25s) set their loggers to DEBUG on import.
    handler = logging.StreamHandler()
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        options = parse_args(argv)
        run = evaluate(options)
    except MemoryBankError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_run(run)
    return 0


def evaluate(options: EvalOptions) -> EvalRun:
    """Prepare, ingest, query every mode and write the report for one dataset."""
    started = time.perf_counter()
    for name, value in (("--top-k", options.top_k), ("--max-iterations", options.max_iterations)):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
    config = load_config(options.config_path)
    max_iterations = options.max_iterations or config.retrieval.max_iterations
    work_dir = options.out_dir / dataset_name(options.dataset_format, options.dataset_dir)
    dataset = prepare_dataset(
        options.dataset_dir,
        options.dataset_format,
        work_dir,
        limit=options.limit,
        max_groups=options.max_groups,
    )
    log.info(
        "%s: %d questions, %d corpus files",
        dataset.name,
        len(dataset.questions),
        len(dataset.source_files),
    )

    store = options.store or work_dir / "store"
    if options.store is None:
        remove_old_store(store)
    bank = MemoryBank(store, config=config, executor=executor_factory(options.runner))
    ingest_started = time.perf_counter()
    ingested = ingest_corpus(bank, dataset)
    ingest_seconds = time.perf_counter() - ingest_started

    token_counter_name, count_tokens = default_token_counter()
    results, query_seconds = run_questions(
        bank,
        dataset,
        options.modes,
        count_tokens,
        top_k=options.top_k,
        max_iterations=max_iterations,
    )
    run_config = {
        "app": config.model_dump(mode="json"),
        "modes": list(options.modes),
        "top_k": options.top_k,
        "max_iterations": max_iterations,
        "runner": options.runner,
        "limit": options.limit,
        "max_groups": options.max_groups,
        "store": str(store.resolve()),
        "store_reused": options.store is not None,
        "search_passage_text": "chunk",
    }
    report = write_report(
        options.out_dir, dataset, results, config=run_config, token_counter=token_counter_name
    )
    return EvalRun(
        report=report,
        store=store,
        ingest_seconds=ingest_seconds,
        ingested=ingested,
        query_seconds=query_seconds,
        total_seconds=time.perf_counter() - started,
    )


def executor_factory(runner: Runner):
    """None (in-process) for "local"; the Ray executor for "ray"."""
    if runner == "local":
        return None
    from pipeline.executor import RayExecutor

    return RayExecutor


def remove_old_store(store: Path) -> None:
    """Clear the default store location for a fresh build; refuse to delete anything but a store."""
    if store.is_symlink():
        # A link the user made to a store elsewhere: drop the link, never the store behind it.
        store.unlink()
    elif is_store(store):
        shutil.rmtree(store)
    elif store.exists() and any(store.iterdir()):
        raise ConfigError(f"{store} exists and is not a memory store; remove it or pass --store")


def ingest_corpus(bank: MemoryBank, dataset: EvalDataset) -> bool:
    """Ingest the corpus unless the store already holds every corpus document; True if it ran."""
    corpus_ids = set(corpus_sources_by_document(dataset))
    if is_store(bank.store) and corpus_ids <= set(
        StoreReader(bank.store).manifest.get("documents", {})
    ):
        log.info("store %s already holds the corpus; not ingesting", bank.store)
        return False
    with _ingest_progress() as progress:
        summary = bank.add(files=[dataset.corpus_dir.resolve()], progress=progress)
    for line in summary.skipped:
        log.warning("skipped %s", line)
    stages = ", ".join(
        f"{stage} {seconds:.0f}s" for stage, seconds in summary.stage_seconds.items()
    )
    log.info(
        "ingested %d documents (%d unchanged) into %d chunks in %.0fs (%s)",
        summary.documents,
        summary.unchanged_documents,
        summary.chunks,
        summary.total_seconds,
        stages,
    )
    return True


def _ingest_progress() -> AbstractContextManager[IngestProgress | None]:
    """A rich progress display on an interactive stderr; none (silent) in logs and CI."""
    console = Console(stderr=True)
    return IngestProgress(console) if console.is_terminal else nullcontext()


def corpus_sources_by_document(dataset: EvalDataset) -> dict[str, str]:
    """document_id -> corpus-relative source for every readable corpus file.

    Hits are attributed to corpus files through the document's content hash, not its stored path,
    so a store ingested from another copy of the corpus (another --out) still scores correctly.
    """
    loaded = load_sources([dataset.corpus_dir])
    by_document: dict[str, str] = {}
    for document in loaded.documents:
        source = dataset.source_key(document.source)
        if source is not None:
            by_document[document.document_id] = source
    return by_document


def run_questions(
    bank: MemoryBank,
    dataset: EvalDataset,
    modes: Sequence[str],
    count_tokens: TokenCounter,
    *,
    top_k: int,
    max_iterations: int,
) -> tuple[list[QuestionResult], dict[str, float]]:
    """Every question in every mode; returns the results and the query seconds per mode."""
    sources_by_document = corpus_sources_by_document(dataset)
    index = StoreIndex(bank.store, sources_by_document)
    documents_of: dict[str, list[str]] = {}  # corpus folder -> its stored documents' ids
    for document_id, source in sources_by_document.items():
        documents_of.setdefault(source.partition("/")[0], []).append(document_id)
    # One untimed call per mode loads the model, BM25 and README vectors: latencies are warm.
    for mode in modes:
        if mode == "ask":
            bank.request("warm up", max_iterations=max_iterations)
        elif mode == "research":
            bank.research("warm up")
        elif mode in DESCENT_BEAMS:
            bank.descend("warm up", beam_width=DESCENT_BEAMS[mode])
        else:
            bank.search("warm up", top_k=1, mode=SCOPED_MODES.get(mode, mode))

    results: list[QuestionResult] = []
    seconds: dict[str, float] = dict.fromkeys(modes, 0.0)
    for number, question in enumerate(dataset.questions, start=1):
        for mode in modes:
            generated_answer = None
            began = time.perf_counter()
            if mode in ANSWER_MODES:
                if mode == "ask":
                    answered = bank.request(question.question, max_iterations=max_iterations)
                else:
                    answered = bank.research(question.question)
                elapsed = time.perf_counter() - began
                passages = index.answer_passages(answered.answer, answered.sources)
                generated_answer = answered.answer
            else:
                if mode in DESCENT_BEAMS:
                    hits = bank.descend(question.question, beam_width=DESCENT_BEAMS[mode])
                elif mode in SCOPED_MODES:
                    asked_of = dataset.asked_of(question)
                    hits = bank.search(
                        question.question,
                        top_k=top_k,
                        mode=SCOPED_MODES[mode],
                        within=documents_of.get(asked_of, []) if asked_of else (),
                    )
                else:
                    hits = bank.search(question.question, top_k=top_k, mode=mode)
                elapsed = time.perf_counter() - began
                passages = index.hit_passages(hits)
            seconds[mode] += elapsed
            results.append(
                score_question(
                    dataset,
                    question,
                    passages,
                    mode=mode,
                    latency_seconds=elapsed,
                    count_tokens=count_tokens,
                    generated_answer=generated_answer,
                    whole_result_hit=mode in DESCENT_BEAMS,
                )
            )
        if number % 25 == 0 or number == len(dataset.questions):
            log.info("%s: %d/%d questions", dataset.name, number, len(dataset.questions))
    return results, seconds


def print_run(run: EvalRun) -> None:
    console = Console()
    if not console.is_terminal:  # logs and pipes: wide enough that no column gets truncated
        console = Console(width=160)
    console.print(run.report.table)
    per_mode = ", ".join(f"{mode} {seconds:.1f}s" for mode, seconds in run.query_seconds.items())
    ingest = (
        f"ingest {run.ingest_seconds:.0f}s" if run.ingested else "ingest skipped (store reused)"
    )
    console.print(
        f"wall time {run.total_seconds:.0f}s: {ingest}; queries {per_mode}", highlight=False
    )
    console.print(f"results: {run.report.results_path}", highlight=False)


if __name__ == "__main__":
    sys.exit(main())
