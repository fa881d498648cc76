"""Chunks' sentence facts stored beside their segments, and a graph step that reads them back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from memory_bank.config import AppConfig
from memory_bank.graph import sentence_facts as facts_module
from memory_bank.graph import stored_facts
from memory_bank.graph import subjects as subjects_module
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.runner import local_runner
from memory_bank.store.reader import StoreReader
from memory_bank.store.segment_writer import TableSetWriter
from memory_bank.store.segments import attached, read_manifest
from memory_bank.store.verify import verify_store
from memory_bank.text.lexicon import MARKDOWN_HEADER
from memory_bank.text.sentences import split_sentences

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
BASE = sorted((SAMPLE / "articles").rglob("*.md"))[:6]
ADDED = sorted((SAMPLE / "articles").rglob("*.md"))[6:8]


def _chunks(store: Path) -> dict[str, str]:
    rows = StoreReader(store).rows("chunks", ["chunk_id", "text"]).to_pylist()
    return {row["chunk_id"]: row["text"] for row in rows}


def _sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if not MARKDOWN_HEADER.match(s)]


def test_every_chunk_keeps_its_sentence_facts_and_an_add_reads_its_candidates_from_them(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = local_runner(AppConfig(), embedder)
    stored, unstored = tmp_path / "stored", tmp_path / "unstored"
    for store in (stored, unstored):
        runner.run(store, [str(path) for path in BASE])

    chunks = _chunks(stored)
    found = stored_facts.stored_facts(stored.resolve(), chunks)
    assert set(found) == set(chunks)
    for chunk_id, text in chunks.items():
        # what a sentence is read as, field for field, whatever reads it
        assert found[chunk_id] == {s: facts_module.sentence_facts(s) for s in _sentences(text)}

    read: list[str] = []
    original = facts_module.sentence_facts

    def recording(sentence: str):
        read.append(sentence)
        return original(sentence)

    monkeypatch.setattr(facts_module, "sentence_facts", recording)
    monkeypatch.setattr(subjects_module, "sentence_facts", recording)  # texts read there
    first = runner.run(stored, [str(path) for path in ADDED])
    new_chunks = {k: v for k, v in _chunks(stored).items() if k not in chunks}
    assert first.commit.graph["pairs_analysed"] > 0
    own = {s for text in new_chunks.values() for s in _sentences(text)}
    assert read and set(read) <= own  # no stored candidate's sentence was read again

    # Without them (a store written before, or under other rules) the candidates are read
    # from their text, and the graph reaches the same verdicts.
    read.clear()
    monkeypatch.setattr("memory_bank.graph.memory_source.stored_facts", lambda *_: {})
    second = runner.run(unstored, [str(path) for path in ADDED])
    assert set(read) - own
    assert _verdicts(second) == _verdicts(first)
    assert verify_store(stored).ok


def _verdicts(result) -> dict:
    return {k: v for k, v in result.commit.graph.items() if k != "checkpoint"}


def test_facts_stored_under_other_rules_are_not_read(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    local_runner(AppConfig(), embedder).run(store, [str(path) for path in BASE[:2]])
    chunks = _chunks(store)
    assert stored_facts.stored_facts(store.resolve(), chunks)
    monkeypatch.setattr(stored_facts, "facts_version", lambda: "rules of another day")
    assert stored_facts.stored_facts(store.resolve(), chunks) == {}


def test_known_facts_are_taken_instead_of_reading_the_sentence() -> None:
    sentence = "The bridge opened in 1932."
    other = facts_module.sentence_facts("The tunnel opened in 1950.")
    facts = subjects_module.text_facts(f"# Bridges\n\n{sentence}", known={sentence: other})
    assert facts.sentences == (other,)
    assert subjects_module.text_facts(sentence).sentences == (
        facts_module.sentence_facts(sentence),
    )


def _chunk_rows(texts: dict[str, str]) -> pa.Table:
    return pa.table({"chunk_id": list(texts), "text": list(texts.values())})


def _bank(root: Path, number: int) -> Path:
    bank = root / f"v{number}" / ".bank"
    bank.mkdir(parents=True)
    return bank


def test_a_merged_segment_carries_its_chunks_facts_and_reads_only_new_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[str] = []
    original = stored_facts.text_facts

    def recording(text: str, *args, **kwargs):
        read.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(stored_facts, "text_facts", recording)
    first, second = _bank(tmp_path, 1), _bank(tmp_path, 2)
    texts = {
        "a-0": "The Morrow Canal opened in 1796. It has 22 locks.",
        "b-0": "Halden Mutual is headquartered in Wrexford.",
    }
    with TableSetWriter(None, first, on_segment=stored_facts.facts_attachment) as writer:
        writer.replace("chunks", _chunk_rows(texts))
    assert sorted(read) == sorted(texts.values())

    read.clear()
    changed = {"b-0": "Halden Mutual moved its head office to Ambleside Cross in 2020."}
    added = {"c-0": "The Grand Ossory Hotel has 112 rooms."}
    with TableSetWriter(first, second, on_segment=stored_facts.facts_attachment) as writer:
        writer.delete("chunks", "chunk_id", ["b-0"])
        writer.append("chunks", _chunk_rows(changed | added))
        writer.compact("chunks")
    (segment,) = read_manifest(second).tables["chunks"].segments
    assert sorted(read) == sorted([changed["b-0"], added["c-0"]])  # "a-0" carried over

    found = stored_facts.stored_facts(second.parent, ["a-0", "b-0", "c-0"])
    for chunk_id, text in (texts | changed | added).items():
        assert found[chunk_id] == {s: facts_module.sentence_facts(s) for s in _sentences(text)}


def test_an_unreadable_facts_file_is_read_as_text_again(tmp_path: Path) -> None:
    first, second = _bank(tmp_path, 1), _bank(tmp_path, 2)
    texts = {"a-0": "The Morrow Canal opened in 1796.", "b-0": "It has 22 locks."}
    with TableSetWriter(None, first, on_segment=stored_facts.facts_attachment) as writer:
        writer.replace("chunks", _chunk_rows(texts))
    ((_, path),) = attached(first, "chunks", stored_facts.FACTS_SUFFIX)
    assert path is not None
    path.write_bytes(b"not parquet at all")
    assert stored_facts.stored_facts(first.parent, texts) == {}
    with TableSetWriter(first, second, on_segment=stored_facts.facts_attachment) as writer:
        writer.append("chunks", _chunk_rows({"c-0": "Halden Mutual is based in Wrexford."}))
        writer.compact("chunks")
    found = stored_facts.stored_facts(second.parent, [*texts, "c-0"])
    assert set(found) == {"a-0", "b-0", "c-0"}  # read from the text, written whole again
