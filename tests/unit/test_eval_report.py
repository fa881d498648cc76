"""Per-mode aggregation, the table, and the files written for a run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from memory_bank.evaluation.evidence import EvalDataset, EvalQuestion
from memory_bank.evaluation.report import build_table, summarize_by_mode, table_text, write_report
from memory_bank.evaluation.scoring import QuestionResult


def _result(
    qid: str, mode: str, *, recall: float | None, answer: bool | None, latency: float
) -> QuestionResult:
    return QuestionResult(
        qid=qid,
        mode=mode,
        kind="bridge",
        latency_seconds=latency,
        retrieved_sources=[],
        recall_at_k={} if recall is None else {2: recall, 5: recall},
        all_evidence_at_k={} if recall is None else {2: recall == 1.0, 5: recall == 1.0},
        evidence_recall={} if recall is None else {512: recall / 2, 1024: recall},
        answer_recall={} if answer is None else {512: False, 1024: answer},
        answer_token_recall={512: 0.5, 1024: 1.0},
        context_tokens={512: 512, 1024: 1000},
    )


RESULTS = [
    _result("q1", "bm25", recall=1.0, answer=True, latency=0.010),
    _result("q2", "bm25", recall=0.5, answer=None, latency=0.030),
    _result("q3", "bm25", recall=None, answer=False, latency=0.020),
    _result("q1", "vector", recall=0.0, answer=False, latency=0.100),
]


def test_summaries_average_each_metric_over_the_questions_it_applies_to() -> None:
    bm25, vector = summarize_by_mode(RESULTS)
    assert (bm25.mode, vector.mode) == ("bm25", "vector")
    assert bm25.questions == 3
    assert bm25.recall_at_k == {2: 0.75, 5: 0.75}  # q3 has no gold sources
    assert bm25.all_evidence_at_k == {2: 0.5, 5: 0.5}
    assert bm25.evidence_recall == {512: 0.375, 1024: 0.75}
    assert bm25.answer_recall == {512: 0.0, 1024: 0.5}  # q2 has no scoreable answer
    assert bm25.scored == {"recall": 2, "evidence": 2, "answer": 2, "answer_match": 0}
    assert bm25.latency_ms == {"p50": pytest.approx(20.0), "p95": pytest.approx(29.0)}
    assert bm25.answer_match is None


def test_table_lists_every_mode_with_percentages() -> None:
    text = table_text(build_table("toy", summarize_by_mode(RESULTS), answer_budget=1024))
    assert "R@2" in text and "AE@5" in text and "ER@1k" in text and "AR@1k" in text
    header = next(line for line in text.splitlines() if "mode" in line)
    assert "TokR" not in header and "answer" not in header  # no abstractive answers, no agent
    bm25_row = next(line for line in text.splitlines() if "bm25" in line)
    assert "75.0" in bm25_row and "50.0" in bm25_row


def test_write_report_writes_results_table_plot_and_manifest(tmp_path: Path) -> None:
    data_file = tmp_path / "data" / "questions.jsonl"
    data_file.parent.mkdir()
    data_file.write_bytes(b'{"question": "?"}\n')
    dataset = EvalDataset(
        name="toy",
        dataset_format="jsonl",
        dataset_dir=data_file.parent,
        dataset_files=[data_file],
        corpus_dir=tmp_path / "data" / "corpus",
        source_files=[],
        questions=[
            EvalQuestion(
                qid="q1",
                question="?",
                answers=["a"],
                gold_sources=["x"],
                gold_units=["x"],
                answer_scoreable=True,
            )
        ],
    )
    written = write_report(
        tmp_path / "out",
        dataset,
        RESULTS,
        config={"modes": ["bm25", "vector"]},
        token_counter="whitespace",
    )

    results = json.loads(written.results_path.read_text(encoding="utf-8"))
    assert [summary["mode"] for summary in results["summaries"]] == ["bm25", "vector"]
    assert results["questions"][0]["gold_sources"] == ["x"]
    assert len(results["results"]) == 4
    assert "vector" in written.table_path.read_text(encoding="utf-8")
    assert written.plot_path is not None
    assert written.plot_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    manifest = json.loads(written.manifest_path.read_text(encoding="utf-8"))
    file_digest = hashlib.sha256(b'{"question": "?"}\n').hexdigest()
    assert manifest["dataset_files"] == {"questions.jsonl": file_digest}
    listing = f"questions.jsonl\t{file_digest}\n"
    assert manifest["dataset_sha256"] == hashlib.sha256(listing.encode()).hexdigest()
    assert manifest["config"] == {"modes": ["bm25", "vector"]}
    assert manifest["token_counter"] == "whitespace"
    assert manifest["questions"] == 1
