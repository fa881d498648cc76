"""`--runner auto`: in-process for small local ingests, Ray for large ones and on a cluster."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from memory_bank.cli.main import app
from memory_bank.ingest.runner_choice import choose_runner, estimated_tokens
from memory_bank.text.inputs import discover_files

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def test_auto_runs_small_local_ingests_in_process_and_large_ones_on_ray():
    small = choose_runner("auto", 10_000, joins_cluster=False, in_process_below_tokens=300_000)
    large = choose_runner("auto", 300_000, joins_cluster=False, in_process_below_tokens=300_000)

    assert small.runner == "local" and "below ray.in_process_below_tokens" in small.reason
    assert large.runner == "ray"


def test_a_cluster_or_an_explicit_choice_wins_over_the_size():
    assert choose_runner("auto", 10, joins_cluster=True, in_process_below_tokens=10**9).runner == (
        "ray"
    )
    assert choose_runner("ray", 10, joins_cluster=False, in_process_below_tokens=10**9).runner == (
        "ray"
    )
    assert choose_runner("local", 10**9, joins_cluster=True, in_process_below_tokens=0).runner == (
        "local"
    )


def test_the_token_estimate_is_close_to_the_counted_tokens_of_the_sample():
    from memory_bank.text.sources import read_files_serially
    from memory_bank.text.tokens import count_tokens

    files = discover_files([SAMPLE])
    counted = sum(
        count_tokens(outcome.text)
        for outcome in read_files_serially(files)
        if hasattr(outcome, "text")
    )

    assert 0.8 * counted <= estimated_tokens(files) <= 1.25 * counted


def test_the_cli_says_which_runner_it_chose(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # else auto joins that cluster
    document = SAMPLE / "notes/home/sourdough_baking.md"

    result = CliRunner().invoke(
        app, ["ingest", str(document), "--store", str(tmp_path / "s"), "--json"]
    )

    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["runner"] == "local" and summary["documents"] == 1
    assert "ray.in_process_below_tokens" in summary["runner_reason"]


def test_an_unknown_runner_is_refused(tmp_path):
    document = SAMPLE / "notes/home/sourdough_baking.md"

    result = CliRunner().invoke(
        app, ["ingest", str(document), "--store", str(tmp_path / "s"), "--runner", "spark"]
    )

    assert result.exit_code == 1 and "--runner must be auto, ray or local" in result.output
    assert not (tmp_path / "s").exists()
