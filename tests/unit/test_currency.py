"""A later document contradicts a stored fact: ask, search and `memory-bank graph` say what is
current and keep the superseded claim as history (the Query Graph that ingest builds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memory_bank.app.bank import MemoryBank
from memory_bank.cli.main import app
from memory_bank.config import AppConfig
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.store.verify import verify_store
from tests.support import stated_as_current

FACT = """# Acme Corporation

Acme Corporation is an American manufacturer of anvils, rocket skates and the RoadRunner trap.
It was founded in 1948 in Phoenix, Arizona. The CEO of Acme is Alice Moreno. The company
employs 4,200 people.
"""
OTHER = """# Jazz

Jazz originated in New Orleans in the late 19th century. Louis Armstrong was one of its most
influential trumpeters.
"""
UPDATE = """# Acme leadership change

Acme Corporation announced that Bob Tanaka is now the CEO of Acme, replacing Alice Moreno.
"""


def _bank(store: Path, embedder) -> MemoryBank:
    bank = MemoryBank(store, AppConfig(), executor=lambda config: LocalExecutor(config, embedder))
    bank._embedder = embedder
    return bank


@pytest.fixture(scope="module")
def updated(tmp_path_factory, embedder) -> MemoryBank:
    root = tmp_path_factory.mktemp("currency")
    (root / "acme.md").write_text(FACT, encoding="utf-8")
    (root / "jazz.md").write_text(OTHER, encoding="utf-8")
    (root / "update.md").write_text(UPDATE, encoding="utf-8")
    bank = _bank(root / "store", embedder)
    bank.add(files=[str(root / "acme.md"), str(root / "jazz.md")])
    summary = bank.add(files=[str(root / "update.md")])
    assert summary.commit is not None and summary.commit.graph["conflicts"] == 1
    return bank


def test_ask_states_the_current_value_and_keeps_the_old_one_as_history(updated):
    result = updated.request("Who is the CEO of Acme?")

    assert "Bob Tanaka" in result.answer
    assert "Alice" not in stated_as_current(result.answer)
    assert "(previously Alice Moreno, until " in result.answer
    [note] = result.history
    assert (note.superseded_value, note.current_value) == ("Alice Moreno", "Bob Tanaka")
    assert note.superseded_text == "The CEO of Acme is Alice Moreno."
    assert note.recorded_at <= note.superseded_at
    assert note.superseded_source.endswith(".md") and note.current_source.endswith(".md")


def test_search_ranks_the_current_memory_above_the_superseded_claim(updated):
    hits = updated.search("Who is the CEO of Acme?", top_k=3)

    sources = [Path(hit.source).name for hit in hits]
    assert sources.index("update.md") < sources.index("acme.md")
    stale = next(hit for hit in hits if Path(hit.source).name == "acme.md")
    assert [n.superseded_value for n in stale.history] == ["Alice Moreno"]


def test_the_graph_command_shows_the_conflict_with_both_claims(updated):
    runner = CliRunner()
    result = runner.invoke(app, ["graph", "--store", str(updated.store), "--json"])

    assert result.exit_code == 0, result.output
    graph = json.loads(result.output)
    [conflict] = graph["conflicts"]
    assert conflict["status"] == "resolved"
    assert (conflict["old_value"], conflict["new_value"]) == ("Alice Moreno", "Bob Tanaka")
    assert conflict["current"] == conflict["newer"] and conflict["superseded"] == conflict["older"]
    shown = runner.invoke(
        app, ["graph", "--store", str(updated.store), "--node", conflict["older"]]
    )
    assert shown.exit_code == 0 and "conflict" in shown.output and "Alice Moreno" in shown.output
    assert verify_store(updated.store).ok


def test_contradicting_documents_of_one_ingest_are_an_open_conflict(tmp_path, embedder):
    (tmp_path / "a.md").write_text("# Acme\n\nThe CEO of Acme is Alice Moreno.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Acme\n\nThe CEO of Acme is Bob Tanaka.\n", encoding="utf-8")
    bank = _bank(tmp_path / "store", embedder)
    bank.add(files=[str(tmp_path / "a.md"), str(tmp_path / "b.md")])

    [conflict] = bank.graph().conflicts
    assert conflict.status == "open" and conflict.current is None  # no order, no winner
    assert bank.request("Who is the CEO of Acme?").history == []


def test_removing_the_update_makes_the_old_claim_current_again(tmp_path, embedder):
    (tmp_path / "acme.md").write_text(FACT, encoding="utf-8")
    (tmp_path / "update.md").write_text(UPDATE, encoding="utf-8")
    bank = _bank(tmp_path / "store", embedder)
    bank.add(files=[str(tmp_path / "acme.md")])
    bank.add(files=[str(tmp_path / "update.md")])

    bank.remove([str(tmp_path / "update.md")])

    assert bank.graph().conflicts == []
    assert "Alice Moreno" in bank.request("Who is the CEO of Acme?").answer
