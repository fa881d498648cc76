"""The `memory-bank` command line, in-process (`--local` ingest, no Ray)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_bank.cli.main import app
from memory_bank.store.reader import StoreReader

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("cli") / "store"
    files = [
        SAMPLE / "articles/machine_learning/transformers_and_attention.md",
        SAMPLE / "notes/home/sourdough_baking.md",
        SAMPLE / "notes/engineering/python_concurrency.md",
    ]
    result = CliRunner().invoke(
        app, ["ingest", *map(str, files), "--store", str(store), "--local", "--json"]
    )
    assert result.exit_code == 0, result.output
    return store


def _json_stdout(result) -> object:
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_ingest_json_summary(store):
    meta = json.loads((store / ".gam_meta.json").read_text())
    assert meta["total_documents"] == 3
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            str(SAMPLE / "notes/home/sourdough_baking.md"),
            "--store",
            str(store),
            "--local",
            "--json",
        ],
    )
    assert result.exit_code == 0
    summary = _json_stdout(result)
    assert summary["unchanged_documents"] == 1 and summary["documents"] == 0


def test_search_json_records(store):
    result = CliRunner().invoke(
        app,
        ["search", "BERT masked language model", "--store", str(store), "--top-k", "3", "--json"],
    )
    assert result.exit_code == 0, result.output
    hits = _json_stdout(result)
    assert 1 <= len(hits) <= 3
    assert {"chunk_path", "chunk_id", "source", "document_id", "score", "text"} <= set(hits[0])
    assert hits[0]["source"].endswith("transformers_and_attention.md")
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


def test_search_within_a_document_or_under_a_directory(store):
    sourdough = str(SAMPLE / "notes/home/sourdough_baking.md")
    query = ["search", "BERT masked language model", "--store", str(store), "--json"]
    result = CliRunner().invoke(app, [*query, "--within", sourdough])
    assert result.exit_code == 0, result.output
    hits = _json_stdout(result)
    assert hits and {hit["source"] for hit in hits} == {sourdough}
    directory = "/" + hits[0]["chunk_path"].split("/")[0]
    under = _json_stdout(CliRunner().invoke(app, [*query, "--under", directory]))
    assert under and all(hit["chunk_path"].startswith(directory[1:] + "/") for hit in under)
    unknown = CliRunner().invoke(app, [*query, "--within", "no/such/file.md"])
    assert unknown.exit_code != 0 and "not in the store" in unknown.output


def test_ask_json_chat_result(store):
    result = CliRunner().invoke(
        app,
        [
            "ask",
            "How long does a sourdough starter take to become active?",
            "--store",
            str(store),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    answer = _json_stdout(result)
    assert answer["confidence"] > 0.5
    source_of = {
        row["path"]: row["source"]
        for row in StoreReader(store).memories().select(["path", "source"]).to_pylist()
    }
    assert answer["sources"]
    assert source_of[answer["sources"][0]].endswith("sourdough_baking.md")


def test_unknown_mode_is_a_clear_error(store):
    result = CliRunner().invoke(app, ["search", "x", "--store", str(store), "--mode", "fuzzy"])
    assert result.exit_code != 0
    assert "unknown mode" in result.output


def test_nothing_ingestible_exits_non_zero(tmp_path):
    (tmp_path / "blank.md").write_text("\n\n")
    result = CliRunner().invoke(
        app, ["ingest", str(tmp_path / "blank.md"), "--store", str(tmp_path / "s"), "--local"]
    )
    assert result.exit_code == 1
    assert "blank.md" in result.output
    assert not (tmp_path / "s").exists()


def test_missing_store_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["ask", "anything?", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 1
    assert "no memory store" in result.output


def test_rebuild_of_a_missing_store_fails_with_a_message(tmp_path):
    result = CliRunner().invoke(app, ["rebuild", "--store", str(tmp_path / "nowhere"), "--local"])
    assert result.exit_code != 0
    assert "no memory store" in result.output


def test_ask_in_research_mode_shows_its_rounds(store):
    result = CliRunner().invoke(
        app,
        [
            "ask",
            "What does the Global Interpreter Lock allow?",
            "--store",
            str(store),
            "--mode",
            "research",
            "--max-iterations",
            "2",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    answered = _json_stdout(result)
    assert answered["sources"] and "thread" in answered["answer"].lower()
    actions = [step["action"] for step in answered["steps"]]
    assert actions[0] == "plan" and "integrate" in actions and "reflect" in actions
    assert actions.count("plan") <= 2

    bad = CliRunner().invoke(app, ["ask", "x?", "--store", str(store), "--mode", "deep"])
    assert bad.exit_code == 1 and "unknown mode" in bad.output


def test_chat_keeps_turns_and_recalls_them(store):
    lines = "\n".join(
        [
            "I went to the sourdough workshop yesterday and fed the starter twice.",
            "/as Sam",
            "The workshop teacher said the dough must double within six hours.",
            "/recall workshop dough",
            "/info",
            "/bogus",
            "/quit",
        ]
    )
    result = CliRunner().invoke(
        app,
        ["chat", "--store", str(store), "--conversation", "cli-test", "--no-consolidate"],
        input=lines + "\n",
    )
    assert result.exit_code == 0, result.output
    assert "yesterday = " in result.output  # the resolved date is shown as it is stored
    assert "#1" in result.output and "Sam:" in result.output
    assert '"turns": 2' in result.output and "unknown command /bogus" in result.output

    again = CliRunner().invoke(
        app,
        ["chat", "--store", str(store), "--conversation", "cli-test", "--no-consolidate"],
        input="/quit\n",
    )
    assert "(2 turns, 0 evicted)" in again.output  # kept on disk beside the store
