"""`jobs.evaluate.main` end to end on a tiny JSONL dataset: prepare, ingest in-process, search, score, report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.evaluate import main, parse_modes
from memory_bank.errors import ConfigError

SOURCES = {
    "animals/axolotl.txt": (
        "Axolotl\n\nThe axolotl is a salamander that keeps its larval gills for life. "
        "It lives only in the lake complex of Xochimilco near Mexico City."
    ),
    "animals/octopus.txt": (
        "Octopus\n\nAn octopus has three hearts and blue blood. "
        "It can squeeze through any gap larger than its beak."
    ),
    "space/jupiter.txt": (
        "Jupiter\n\nJupiter is the largest planet of the solar system. "
        "Its Great Red Spot is a storm wider than the Earth."
    ),
    "space/mars.txt": (
        "Mars\n\nMars has the tallest volcano known, Olympus Mons. "
        "Its red colour comes from iron oxide dust."
    ),
    "food/sourdough.txt": (
        "Sourdough\n\nSourdough bread rises with a starter of wild yeast and lactobacilli. "
        "The bacteria give the loaf its sour taste."
    ),
    "food/kimchi.txt": (
        "Kimchi\n\nKimchi is fermented napa cabbage seasoned with chili and garlic. "
        "It is a staple side dish in Korea."
    ),
}
QUESTIONS = [
    {
        "id": "axolotl",
        "question": "Where does the axolotl salamander live?",
        "answers": ["Xochimilco"],
        "evidence_sources": ["animals/axolotl.txt"],
    },
    {
        "id": "volcano",
        "question": "Which planet has Olympus Mons, and which has the Great Red Spot?",
        "answers": ["Mars"],
        "evidence_sources": ["space/mars.txt", "space/jupiter.txt"],
    },
    {
        "id": "kimchi",
        "question": "What vegetable is kimchi made from?",
        "answers": ["napa cabbage"],
        "evidence_sources": ["food/kimchi.txt"],
    },
]
MODES = ("bm25", "hybrid")


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """Run the harness once for the module; returns the out dir and the parsed results file."""
    root = tmp_path_factory.mktemp("eval")
    dataset_dir = root / "toy"
    for relative, text in SOURCES.items():
        path = dataset_dir / "corpus" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    lines = [json.dumps(question) for question in QUESTIONS]
    (dataset_dir / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = root / "out"
    argv = [str(dataset_dir), "--format", "jsonl", "--out", str(out), "--modes", ",".join(MODES)]
    assert main(argv) == 0
    return out, json.loads((out / "jsonl-toy.results.json").read_text(encoding="utf-8"))


def test_writes_results_table_plot_and_manifest(evaluation: tuple[Path, dict]) -> None:
    out, results = evaluation
    for suffix in ("results.json", "table.txt", "recall_by_budget.png", "manifest.json"):
        assert (out / f"jsonl-toy.{suffix}").stat().st_size > 0
    table = (out / "jsonl-toy.table.txt").read_text(encoding="utf-8")
    assert all(mode in table for mode in MODES) and "R@5" in table
    manifest = json.loads((out / "jsonl-toy.manifest.json").read_text(encoding="utf-8"))
    assert manifest["corpus_files"] == len(SOURCES) and manifest["questions"] == len(QUESTIONS)
    assert manifest["config"]["modes"] == list(MODES)


def test_every_question_is_scored_in_every_mode_with_recalls_in_range(
    evaluation: tuple[Path, dict],
) -> None:
    _, results = evaluation
    scored = {(result["qid"], result["mode"]) for result in results["results"]}
    assert scored == {(question["id"], mode) for question in QUESTIONS for mode in MODES}
    for result in results["results"]:
        values = [*result["recall_at_k"].values(), *result["evidence_recall"].values()]
        assert values and all(0.0 <= value <= 1.0 for value in values)
        assert set(result["retrieved_sources"]) <= set(SOURCES)
    assert [summary["mode"] for summary in results["summaries"]] == list(MODES)


def test_a_question_with_a_unique_term_finds_its_evidence(evaluation: tuple[Path, dict]) -> None:
    _, results = evaluation
    by_key = {(result["qid"], result["mode"]): result for result in results["results"]}
    for mode in MODES:
        axolotl = by_key[("axolotl", mode)]
        assert axolotl["recall_at_k"]["5"] == 1.0
        assert axolotl["retrieved_sources"][0] == "animals/axolotl.txt"
        assert axolotl["answer_recall"]["512"] is True
    assert by_key[("volcano", "bm25")]["recall_at_k"]["5"] == 1.0  # both planets named


def test_unknown_modes_are_rejected() -> None:
    assert parse_modes(" bm25, ask,bm25") == ("bm25", "ask")
    with pytest.raises(ConfigError):
        parse_modes("bm25,grep")
    with pytest.raises(ConfigError):
        parse_modes(" , ")


def test_a_linked_default_store_loses_the_link_not_the_store(tmp_path):
    from jobs.evaluate import remove_old_store

    elsewhere = tmp_path / "kept"
    (elsewhere / ".bank").mkdir(parents=True)
    (elsewhere / ".bank" / "meta.json").write_text("{}")
    link = tmp_path / "store"
    link.symlink_to(elsewhere)
    remove_old_store(link)
    assert not link.exists() and not link.is_symlink()
    assert (elsewhere / ".bank" / "meta.json").read_text() == "{}"
