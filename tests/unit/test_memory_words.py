"""Memories' index words stored beside their segments, and a commit that reads them back."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest import stages
from memory_bank.ingest.runner import local_runner
from memory_bank.store import memory_words
from memory_bank.store.reader import StoreReader
from memory_bank.store.segment_writer import TableSetWriter
from memory_bank.store.segments import attached
from memory_bank.store.snapshot import load_snapshot
from memory_bank.store.verify import verify_store
from memory_bank.taxonomy.summary import index_text
from memory_bank.text.lexicon import search_tokens

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample"
BASE = sorted((SAMPLE / "articles").rglob("*.md"))[:6]
ADDED = SAMPLE / "notes" / "home" / "sourdough_baking.md"


def _stored(store: Path) -> dict[str, list[str]]:
    snapshot = load_snapshot(store)
    assert snapshot is not None
    return memory_words.stored_words(store.resolve(), snapshot.parts.memories)


def _readmes(store: Path) -> dict[str, str]:
    table = StoreReader(store).readmes()
    assert table is not None
    rows = table.select(["directory", "text"]).to_pylist()
    return {row["directory"]: row["text"] for row in rows}


def _recorded(monkeypatch: pytest.MonkeyPatch, module) -> list[str]:
    """The texts `module` tokenizes for the README index from now on."""
    seen: list[str] = []
    original = module.index_words

    def recording(texts):
        seen.extend(texts.values())
        return original(texts)

    monkeypatch.setattr(module, "index_words", recording)
    return seen


def test_every_memory_has_its_index_words_stored_and_an_add_reads_only_its_own(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = local_runner(AppConfig(), embedder)
    stored, unstored = tmp_path / "stored", tmp_path / "unstored"
    for store in (stored, unstored):
        runner.run(store, [str(path) for path in BASE])

    memories = StoreReader(stored).memories().to_pylist()
    assert _stored(stored) == {
        row["chunk_id"]: search_tokens(index_text(row["title"], row["keywords"], row["memory"]))
        for row in memories
    }

    tokenized = _recorded(monkeypatch, stages)
    runner.run(stored, [str(ADDED)])
    added = [
        row
        for row in StoreReader(stored).memories().to_pylist()
        if row["chunk_id"] not in {m["chunk_id"] for m in memories}
    ]
    assert added and sorted(tokenized) == sorted(
        index_text(row["title"], row["keywords"], row["memory"]) for row in added
    )

    # Without the stored words (as in a store written before them) every memory is read
    # again, and the READMEs come out the same.
    tokenized.clear()
    monkeypatch.setattr("memory_bank.ingest.commit.stored_words", lambda *_: {})
    runner.run(unstored, [str(ADDED)])
    assert len(tokenized) == len(memories) + len(added)
    assert _readmes(stored) == _readmes(unstored)
    assert verify_store(stored).ok


def test_a_merged_segment_carries_its_memories_words_and_reads_only_new_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _recorded(monkeypatch, memory_words)

    def rows(memories: dict[str, str]) -> pa.Table:
        return pa.table(
            {
                "chunk_id": list(memories),
                "title": [f"Title {key}" for key in memories],
                "keywords": [["canal", "locks"] for _ in memories],
                "memory": list(memories.values()),
            }
        )

    first, second = tmp_path / "v1" / ".bank", tmp_path / "v2" / ".bank"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    kept = {"a": "The Morrow Canal has 22 locks.", "b": "It opened in 1796."}
    with TableSetWriter(None, first, on_segment=memory_words.words_attachment) as writer:
        writer.replace("memories", rows(kept))
    read.clear()
    added = {"c": "The Ebb valley is cruised by narrowboats."}
    with TableSetWriter(first, second, on_segment=memory_words.words_attachment) as writer:
        writer.append("memories", rows(added))
        writer.compact("memories")
    assert read == [index_text("Title c", ["canal", "locks"], added["c"])]
    ((segment, path),) = attached(second, "memories", memory_words.WORDS_SUFFIX)
    assert path is not None and segment.rows == 3
    assert pq.read_table(path, columns=["words"])["words"].to_pylist() == [
        search_tokens(index_text(f"Title {key}", ["canal", "locks"], text))
        for key, text in (kept | added).items()
    ]
