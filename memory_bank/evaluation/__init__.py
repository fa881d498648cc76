"""Evaluation harness, pure-Python part: datasets, metrics, scoring and reports.

The runner (bench/evaluate.py) prepares a dataset, ingests `dataset.corpus_dir`, retrieves with
`question.question` only, and scores the ranked passages:

    dataset = prepare_dataset(dataset_dir, "hotpotqa", work_dir)
    result = score_question(dataset, question, passages_from_hits(hits), mode="hybrid",
                            latency_seconds=elapsed, count_tokens=count_tokens)
    written = write_report(out_dir, dataset, results, config=config, token_counter=name)
"""

from memory_bank.evaluation.datasets import prepare_dataset
from memory_bank.evaluation.evidence import (
    DATASET_FORMATS,
    DatasetFormat,
    EvalDataset,
    EvalQuestion,
    EvidenceUnit,
)
from memory_bank.evaluation.metrics import Passage, TokenCounter, default_token_counter
from memory_bank.evaluation.report import (
    ModeSummary,
    RunManifest,
    WrittenReport,
    build_table,
    write_report,
)
from memory_bank.evaluation.scoring import (
    DEFAULT_BUDGETS,
    DEFAULT_KS,
    QuestionResult,
    passages_from_hits,
    score_question,
)

__all__ = [
    "DATASET_FORMATS",
    "DEFAULT_BUDGETS",
    "DEFAULT_KS",
    "DatasetFormat",
    "EvalDataset",
    "EvalQuestion",
    "EvidenceUnit",
    "ModeSummary",
    "Passage",
    "QuestionResult",
    "RunManifest",
    "TokenCounter",
    "WrittenReport",
    "build_table",
    "default_token_counter",
    "passages_from_hits",
    "prepare_dataset",
    "score_question",
    "write_report",
]
