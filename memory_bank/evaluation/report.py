"""Evaluation report: per-mode averages, a table, a recall-by-budget plot and a run manifest."""

from __future__ import annotations

import hashlib
import io
import json
import platform
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.table import Table

from memory_bank.evaluation.evidence import EvalDataset
from memory_bank.evaluation.metrics import latency_percentiles
from memory_bank.evaluation.scoring import QuestionResult

_REPO_DIR = Path(__file__).resolve().parents[2]


class ModeSummary(BaseModel):
    """Averages of one mode over a dataset's questions. Each metric averages only the questions
    it applies to; `scored` says how many those were."""

    mode: str
    questions: int
    recall_at_k: dict[int, float]
    all_evidence_at_k: dict[int, float]
    hit_at_k: dict[int, float] = {}
    hit: float | None = None  # share of questions with a gold source anywhere in the result
    evidence_recall: dict[int, float]  # by token budget
    answer_recall: dict[int, float]  # by token budget
    answer_token_recall: dict[int, float]  # by token budget
    answer_match: float | None
    answer_precision: float | None = None  # mean share of the answer's words that are gold words
    answer_word_recall: float | None = None  # mean share of the gold words the answer holds
    latency_ms: dict[str, float]  # "p50", "p95"
    scored: dict[str, int]  # questions counted by: "recall", "evidence", "answer", "answer_match"


class RunManifest(BaseModel):
    """What is needed to reproduce and compare a run."""

    created_at: str
    commit: str | None  # None outside a git checkout or before the first commit
    uncommitted_changes: bool | None
    dataset: str
    dataset_format: str
    dataset_dir: str
    questions: int
    corpus_files: int
    dataset_sha256: str  # over the sorted (path, sha256) pairs of `dataset_files`
    dataset_files: dict[str, str]  # path relative to dataset_dir -> sha256
    token_counter: str
    config: dict[str, Any]
    python: str


@dataclass(frozen=True)
class WrittenReport:
    summaries: list[ModeSummary]
    table: Table
    results_path: Path
    table_path: Path
    plot_path: Path | None  # None when no question has a budgeted metric
    manifest_path: Path


def summarize_by_mode(results: Sequence[QuestionResult]) -> list[ModeSummary]:
    """One summary per mode, in the order the modes first appear."""
    by_mode: dict[str, list[QuestionResult]] = {}
    for result in results:
        by_mode.setdefault(result.mode, []).append(result)
    return [_summarize(mode, mode_results) for mode, mode_results in by_mode.items()]


def _summarize(mode: str, results: list[QuestionResult]) -> ModeSummary:
    matches = [result.answer_match for result in results if result.answer_match is not None]
    precisions = [r.answer_precision for r in results if r.answer_precision is not None]
    word_recalls = [r.answer_word_recall for r in results if r.answer_word_recall is not None]
    hits = [result.hit for result in results if result.hit is not None]
    latency = latency_percentiles([result.latency_seconds for result in results])
    return ModeSummary(
        mode=mode,
        questions=len(results),
        recall_at_k=_mean_by_key([result.recall_at_k for result in results]),
        all_evidence_at_k=_mean_by_key([result.all_evidence_at_k for result in results]),
        hit_at_k=_mean_by_key([result.hit_at_k for result in results]),
        hit=sum(hits) / len(hits) if hits else None,
        evidence_recall=_mean_by_key([result.evidence_recall for result in results]),
        answer_recall=_mean_by_key([result.answer_recall for result in results]),
        answer_token_recall=_mean_by_key([result.answer_token_recall for result in results]),
        answer_match=sum(matches) / len(matches) if matches else None,
        answer_precision=sum(precisions) / len(precisions) if precisions else None,
        answer_word_recall=sum(word_recalls) / len(word_recalls) if word_recalls else None,
        latency_ms={name: seconds * 1000.0 for name, seconds in latency.items()},
        scored={
            "recall": sum(1 for result in results if result.recall_at_k),
            "evidence": sum(1 for result in results if result.evidence_recall),
            "answer": sum(1 for result in results if result.answer_recall),
            "answer_match": len(matches),
        },
    )


def _mean_by_key(values: Sequence[Mapping[int, float | bool]]) -> dict[int, float]:
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for mapping in values:
        for key, value in mapping.items():
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sorted(sums)}


def budget_label(budget: int) -> str:
    """512 -> "512", 1024 -> "1k", 2048 -> "2k"."""
    return f"{budget // 1024}k" if budget % 1024 == 0 else str(budget)


def build_table(
    title: str, summaries: Sequence[ModeSummary], *, answer_budget: int = 2048
) -> Table:
    """A rich table with one row per mode; columns for metrics no mode has are left out.

    Answer-string recall is shown at `answer_budget`; where no question has an extractive answer
    (QMSum), the answer-token recall (ROUGE-1) takes its place.
    """
    ks = sorted({k for summary in summaries for k in summary.recall_at_k})
    budgets = sorted({budget for summary in summaries for budget in summary.evidence_recall})
    has_answer_recall = any(answer_budget in summary.answer_recall for summary in summaries)
    has_token_recall = any(answer_budget in summary.answer_token_recall for summary in summaries)
    has_answer_match = any(summary.answer_match is not None for summary in summaries)

    columns: list[tuple[str, Callable[[ModeSummary], float | None]]] = [
        (f"R@{k}", lambda s, k=k: s.recall_at_k.get(k)) for k in ks
    ]
    if ks:
        columns.append((f"AE@{ks[-1]}", lambda s: s.all_evidence_at_k.get(ks[-1])))
        columns.append((f"H@{ks[-1]}", lambda s: s.hit_at_k.get(ks[-1])))
    if any(summary.hit is not None for summary in summaries):
        columns.append(("hit", lambda s: s.hit))
    columns += [(f"ER@{budget_label(b)}", lambda s, b=b: s.evidence_recall.get(b)) for b in budgets]
    if has_answer_recall:
        columns.append(
            (f"AR@{budget_label(answer_budget)}", lambda s: s.answer_recall.get(answer_budget))
        )
    elif has_token_recall:
        header = f"TokR@{budget_label(answer_budget)}"
        columns.append((header, lambda s: s.answer_token_recall.get(answer_budget)))
    if has_answer_match:
        columns.append(("answer", lambda s: s.answer_match))
    if any(summary.answer_precision is not None for summary in summaries):
        columns.append(("answer P", lambda s: s.answer_precision))
        columns.append(("answer R", lambda s: s.answer_word_recall))

    table = Table(title=title)
    table.add_column("mode")
    table.add_column("n", justify="right")
    for header, _ in columns:
        table.add_column(header, justify="right")
    table.add_column("p50 ms", justify="right")
    table.add_column("p95 ms", justify="right")
    for summary in summaries:
        cells = [_percent(value(summary)) for _, value in columns]
        latency = [f"{summary.latency_ms[name]:.0f}" for name in ("p50", "p95")]
        table.add_row(summary.mode, str(summary.questions), *cells, *latency)
    return table


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100.0 * value:.1f}"


def table_text(table: Table, width: int = 160) -> str:
    """The table as plain text, for files and logs."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False)
    console.print(table)
    return console.file.getvalue()


def plot_recall_by_budget(summaries: Sequence[ModeSummary], path: Path, title: str) -> Path:
    """PNG: evidence recall (and answer recall, where defined) against the token budget, per mode."""
    # The object API with an explicit Agg canvas: no pyplot, no global backend switch.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [("evidence recall (%)", {s.mode: s.evidence_recall for s in summaries})]
    if any(summary.answer_recall for summary in summaries):
        panels.append(("answer-string recall (%)", {s.mode: s.answer_recall for s in summaries}))
    elif any(summary.answer_token_recall for summary in summaries):
        panels.append(
            ("answer-token recall (%)", {s.mode: s.answer_token_recall for s in summaries})
        )
    panels = [(label, series) for label, series in panels if any(series.values())]
    if not panels:
        raise ValueError("no budgeted metric to plot")

    figure = Figure(figsize=(6.0 * len(panels), 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, len(panels), squeeze=False)[0]
    for axis, (label, series) in zip(axes, panels, strict=True):
        for number, (mode, by_budget) in enumerate(series.items()):
            budgets = sorted(by_budget)
            if budgets:
                values = [100.0 * by_budget[budget] for budget in budgets]
                axis.plot(budgets, values, marker="o", color=f"C{number % 10}", label=mode)
        all_budgets = sorted({budget for by_budget in series.values() for budget in by_budget})
        axis.set_xscale("log", base=2)
        axis.set_xticks(all_budgets, [budget_label(budget) for budget in all_budgets])
        axis.set_xlabel("context budget (tokens)")
        axis.set_ylabel(label)
        axis.set_ylim(-2, 102)  # keep markers at 0 and 100 visible
        axis.grid(True, alpha=0.3)
        axis.legend(loc="lower right")
    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def git_commit(repo_dir: Path = _REPO_DIR) -> tuple[str | None, bool | None]:
    """(HEAD commit, whether tracked files have uncommitted changes); Nones when git cannot tell."""
    head = _git(repo_dir, "rev-parse", "HEAD")
    if head is None:
        return None, None
    status = _git(repo_dir, "status", "--porcelain", "--untracked-files=no")
    return head, None if status is None else bool(status)


def _git(repo_dir: Path, *args: str) -> str | None:
    try:
        completed = subprocess.run(
            ["git", *args], cwd=repo_dir, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None


def file_hashes(files: Sequence[Path], root: Path) -> dict[str, str]:
    """sha256 of each file, keyed by its POSIX path relative to `root` (absolute if outside)."""
    hashes: dict[str, str] = {}
    for path in files:
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        key = (
            path.relative_to(root).as_posix()
            if path.is_relative_to(root)
            else path.resolve().as_posix()
        )
        hashes[key] = digest
    return dict(sorted(hashes.items()))


def build_manifest(
    dataset: EvalDataset,
    *,
    config: BaseModel | Mapping[str, Any],
    token_counter: str,
    repo_dir: Path = _REPO_DIR,
) -> RunManifest:
    """The manifest of a run over `dataset`; `config` is whatever the runner ran with."""
    hashes = file_hashes(dataset.dataset_files, dataset.dataset_dir)
    listing = "".join(f"{name}\t{digest}\n" for name, digest in hashes.items())
    combined = hashlib.sha256(listing.encode("utf-8"))
    commit, uncommitted = git_commit(repo_dir)
    return RunManifest(
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        commit=commit,
        uncommitted_changes=uncommitted,
        dataset=dataset.name,
        dataset_format=dataset.dataset_format,
        dataset_dir=str(dataset.dataset_dir.resolve()),
        questions=len(dataset.questions),
        corpus_files=len(dataset.source_files),
        dataset_sha256=combined.hexdigest(),
        dataset_files=hashes,
        token_counter=token_counter,
        config=TypeAdapter(Any).dump_python(config, mode="json"),
        python=platform.python_version(),
    )


def write_report(
    out_dir: str | Path,
    dataset: EvalDataset,
    results: Sequence[QuestionResult],
    *,
    config: BaseModel | Mapping[str, Any],
    token_counter: str,
    answer_budget: int = 2048,
) -> WrittenReport:
    """Write `<dataset>.results.json`, `.table.txt`, `.recall_by_budget.png` and `.manifest.json`.

    The results file holds the per-mode summaries, the questions with their gold evidence, and
    every per-question result, so misses can be inspected without rerunning.
    """
    out_path = Path(out_dir)
    out_path.mkdir(parents=True, exist_ok=True)
    summaries = summarize_by_mode(results)
    title = f"{dataset.name} ({len(dataset.questions)} questions)"
    table = build_table(title, summaries, answer_budget=answer_budget)
    stem = out_path / dataset.name
    results_path = stem.with_name(f"{dataset.name}.results.json")
    results_document = {
        "dataset": dataset.name,
        "summaries": [summary.model_dump(mode="json") for summary in summaries],
        "questions": [question.model_dump(mode="json") for question in dataset.questions],
        "results": [result.model_dump(mode="json") for result in results],
    }
    results_text = json.dumps(results_document, ensure_ascii=False, indent=1) + "\n"
    results_path.write_text(results_text, encoding="utf-8")
    table_path = stem.with_name(f"{dataset.name}.table.txt")
    table_path.write_text(table_text(table), encoding="utf-8")
    plot_path = None
    if any(summary.evidence_recall or summary.answer_token_recall for summary in summaries):
        plot_path = plot_recall_by_budget(
            summaries, stem.with_name(f"{dataset.name}.recall_by_budget.png"), dataset.name
        )
    manifest = build_manifest(dataset, config=config, token_counter=token_counter)
    manifest_path = stem.with_name(f"{dataset.name}.manifest.json")
    manifest_path.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return WrittenReport(summaries, table, results_path, table_path, plot_path, manifest_path)
