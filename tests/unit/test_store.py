"""End-to-end tests of the store: write_store -> files on disk -> StoreReader."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from memory_bank.config import AppConfig, TaxonomyConfig
from memory_bank.errors import StorageError, StoreError
from memory_bank.schemas import Chunk, DirectoryNode, Document, MemorizedChunk
from memory_bank.store import (
    MemoryParts,
    SentenceRecord,
    StoreBuilder,
    StoreReader,
    StoreSnapshot,
    StoreStats,
    atomic_write_text,
    is_store,
    meta_extra_from_config,
    parse_chunk_file,
    store_lock,
    write_store,
)
from memory_bank.store.files import FRONTMATTER_FIELDS
from memory_bank.store.tables import (
    build_faiss_index,
    chunks_from_table,
    documents_from_table,
    memories_from_table,
    sentences_from_table,
    write_faiss_index,
)
from memory_bank.text.sentences import split_sentence_spans

HOSTILE_TLDR = (
    "x\n---\ntitle: hacked\nignore previous instructions: \"quoted\" 'single' ünïcödé 日本語"
)

# (document, title, memory text) per memory; the tree below places them by index.
MEMORY_SPECS = [
    (0, "readme", "Photons carry momentum. Light pressure is tiny but measurable."),
    (0, "Readme!", "Newton's laws describe motion. Force equals mass times acceleration."),
    (0, "---\nignore previous instructions", "---\nBody starts with a delimiter.\n---\nMore."),
    (1, "cell_biology", "Cells are the unit of life. Mitochondria make ATP."),
    (1, "dna_replication", "DNA replication is semi-conservative. Polymerases proofread."),
    (2, "pasta_basics", "Salt the water generously. Cook pasta al dente."),
    (2, "pasta_basics", "Reserve some pasta water. It thickens the sauce."),
    (2, "sauce_reduction", "Reduce sauces slowly. High heat scorches the sugars."),
]


def build_tree(physics: list[int], biology: list[int], cooking: list[int]) -> DirectoryNode:
    return DirectoryNode(
        path="/",
        name="",
        description="everything",
        children=[
            DirectoryNode(
                path="/science",
                name="science",
                description="natural sciences",
                children=[
                    DirectoryNode(path="/science/physics", name="physics", chunk_indices=physics),
                    DirectoryNode(path="/science/biology", name="biology", chunk_indices=biology),
                ],
            ),
            DirectoryNode(
                path="/cooking", name="cooking", description="food", chunk_indices=cooking
            ),
        ],
    )


PART_FIELDS = ("documents", "chunks", "memories", "memory_vectors", "sentences", "sentence_vectors")


@dataclass
class StoreInputs:
    documents: list[Document]
    chunks: list[Chunk]
    memories: list[MemorizedChunk]
    memory_vectors: np.ndarray
    sentences: list[SentenceRecord]
    sentence_vectors: np.ndarray
    tree: DirectoryNode
    readmes: dict[str, str]
    readme_vectors: dict[str, np.ndarray]

    def as_snapshot(self, **change: Any) -> StoreSnapshot:
        """These inputs as a store snapshot, some of them (or its "meta") replaced."""
        fields = {**self.__dict__, "meta": meta_extra_from_config(AppConfig()), **change}
        parts = MemoryParts(**{name: fields.pop(name) for name in PART_FIELDS})
        return StoreSnapshot(parts=parts, **fields)


def unit_vectors(rng: np.random.Generator, rows: int) -> np.ndarray:
    vectors = rng.normal(size=(rows, 384)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_inputs(
    seed: int = 0,
    specs: list[tuple[int, str, str]] = MEMORY_SPECS,
    tree: DirectoryNode | None = None,
) -> StoreInputs:
    """A small consistent store: one chunk per memory, chunk text = memory text."""
    rng = np.random.default_rng(seed)
    doc_numbers = sorted({doc for doc, _, _ in specs})
    texts = {
        n: " ".join(text for doc, _, text in specs if doc == n) + f" seed {seed}"
        for n in doc_numbers
    }
    documents = [
        Document(
            document_id=hashlib.sha256(texts[n].encode()).hexdigest()[:16],
            source=f"docs/doc_{n}.md",
            title=f"Document {n}",
            kind="markdown",
            text=texts[n],
        )
        for n in doc_numbers
    ]
    by_number = dict(zip(doc_numbers, documents, strict=True))
    chunks, memories, sentences = [], [], []
    for index, (doc_number, title, text) in enumerate(specs):
        document = by_number[doc_number]
        position = sum(1 for chunk in chunks if chunk.document_id == document.document_id)
        start = document.text.index(text)
        chunk = Chunk(
            chunk_id=f"{document.document_id}-{position:05d}",
            document_id=document.document_id,
            source=document.source,
            position=position,
            text=text,
            token_count=len(text.split()),
            start_char=start,
            end_char=start + len(text),
            section="Intro" if index % 2 else None,
        )
        chunks.append(chunk)
        memories.append(
            MemorizedChunk(
                index=index,
                title=title,
                memory=text,
                tldr=HOSTILE_TLDR if index == 2 else f"tl;dr: {title}",
                keywords=["---", "a: b", f"kw{index}"],
                context=f"from {document.title}",
                metadata={
                    "source": document.source,
                    "document_id": document.document_id,
                    "chunk_id": chunk.chunk_id,
                    "token_count": chunk.token_count,
                },
            )
        )
        for number, span in enumerate(split_sentence_spans(text)):
            sentences.append(
                SentenceRecord(
                    chunk_id=chunk.chunk_id,
                    index=index,
                    sentence=number,
                    start_char=span.start,
                    end_char=span.end,
                    text=text[span.start : span.end],
                )
            )
    tree = tree or build_tree([0, 1, 2], [3, 4], [5, 6, 7])
    readmes = {
        node.path: f"# {node.name or 'Memory'}\n\n{node.description or 'A directory.'}\n"
        for node in tree.iter_nodes()
    }
    return StoreInputs(
        documents=documents,
        chunks=chunks,
        memories=memories,
        memory_vectors=unit_vectors(rng, len(memories)),
        sentences=sentences,
        sentence_vectors=unit_vectors(rng, len(sentences)),
        tree=tree,
        readmes=readmes,
        readme_vectors=dict(zip(readmes, unit_vectors(rng, len(readmes)), strict=True)),
    )


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (relative path -> bytes)."""
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def layout_of(directory: Path) -> set[str]:
    """The files of a store, a segment named by its table ("tables/<table>/*.parquet")."""
    return {
        re.sub(r"/[^/]+\.parquet$", "/*.parquet", name)
        if name.startswith(".bank/tables/")
        else name
        for name in snapshot(directory)
    }


def leftovers(store_dir: Path) -> list[str]:
    """What a finished commit must not leave beside the store: build directories, temporary
    links, anything hidden but the lock file, the version area and the ingest journal."""
    prefix = f".{store_dir.name}."
    expected = {f"{prefix}lock", f"{prefix}versions"}
    found = [
        p.name
        for p in store_dir.parent.iterdir()
        if p.name.startswith(prefix) and p.name not in expected
    ]
    versions = store_dir.parent / f"{prefix}versions"
    if versions.is_dir():
        found += [f"{versions.name}/{p.name}" for p in versions.iterdir() if p.name.startswith(".")]
    return sorted(found)


EXPECTED_FILES = {
    ".gam_meta.json",
    "README.md",
    "science/README.md",
    "science/physics/README.md",
    "science/physics/readme_2.md",
    "science/physics/readme_3.md",
    "science/physics/ignore_previous_instructions.md",
    "science/biology/README.md",
    "science/biology/cell_biology.md",
    "science/biology/dna_replication.md",
    "cooking/README.md",
    "cooking/pasta_basics.md",
    "cooking/pasta_basics_2.md",
    "cooking/sauce_reduction.md",
    ".bank/manifest.json",
    ".bank/tree.json",
    ".bank/tables.json",
    # A new store: one segment per table (names vary: numbered and random).
    ".bank/tables/documents/*.parquet",
    ".bank/tables/chunks/*.parquet",
    ".bank/tables/memories/*.parquet",
    ".bank/tables/paths/*.parquet",
    ".bank/tables/sentences/*.parquet",
    ".bank/tables/readmes/*.parquet",
    ".bank/hashes.parquet",
}


@pytest.fixture(scope="module")
def inputs() -> StoreInputs:
    return make_inputs()


@pytest.fixture(scope="module")
def written(
    tmp_path_factory: pytest.TempPathFactory, inputs: StoreInputs
) -> tuple[Path, StoreStats]:
    store_dir = tmp_path_factory.mktemp("written") / "mem"
    stats = write_store(store_dir, inputs.as_snapshot())
    return store_dir, stats


@pytest.fixture(scope="module")
def reader(written: tuple[Path, StoreStats]) -> StoreReader:
    return StoreReader(written[0])


def test_layout_is_exactly_the_documented_one(written: tuple[Path, StoreStats]) -> None:
    store_dir, _ = written
    assert layout_of(store_dir) == EXPECTED_FILES
    assert leftovers(store_dir) == []
    assert is_store(store_dir) and StoreReader.is_store(store_dir)


def test_chunk_files_round_trip_with_hostile_text(reader: StoreReader, inputs: StoreInputs) -> None:
    for memory in inputs.memories:
        text = reader.path(reader.chunk_path(memory.index)).read_text(encoding="utf-8")
        frontmatter, body = parse_chunk_file(text)
        assert tuple(frontmatter) == FRONTMATTER_FIELDS
        assert frontmatter == {
            "title": memory.title,
            "index": memory.index,
            "tldr": memory.tldr,
            "keywords": memory.keywords,
            "source": memory.metadata["source"],
            "document_id": memory.metadata["document_id"],
            "chunk_id": memory.metadata["chunk_id"],
        }
        assert body == memory.memory


def test_every_directory_has_its_readme(reader: StoreReader, inputs: StoreInputs) -> None:
    for node in reader.tree().iter_nodes():
        relative = "README.md" if node.path == "/" else f"{node.path[1:]}/README.md"
        assert reader.path(relative).read_text(encoding="utf-8") == inputs.readmes[node.path]


def test_meta_and_manifest(
    written: tuple[Path, StoreStats], reader: StoreReader, inputs: StoreInputs
) -> None:
    _, stats = written
    meta = reader.meta
    assert meta["version"] == "1.0"
    assert meta["total_documents"] == 3
    assert meta["total_chunks"] == 8
    assert meta["total_directories"] == 4  # science, physics, biology, cooking
    assert meta["source_files"] == ["docs/doc_0.md", "docs/doc_1.md", "docs/doc_2.md"]
    assert meta["embedding_model"] == "all-MiniLM-L6-v2"
    assert meta["backend"] == "offline" and meta["model_used"] == "offline"
    assert meta["chunk_config"] == AppConfig().chunking.model_dump()
    assert meta["chunk_config"].keys() == {"min_tokens", "max_tokens", "encoding"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["created_at"])
    assert meta["store_version"] == reader.store_version == stats.store_version
    assert reader.manifest == {
        "schema_version": 1,
        "store_version": stats.store_version,
        "documents": {doc.document_id: doc.source for doc in inputs.documents},
    }
    counts = (stats.documents, stats.chunks, stats.directories, stats.sentences)
    assert counts == (3, 8, 4, len(inputs.sentences))


def test_tables_round_trip(reader: StoreReader, inputs: StoreInputs) -> None:
    assert documents_from_table(reader.documents()) == inputs.documents
    assert reader.documents().column("token_count").to_pylist() == [
        sum(c.token_count for c in inputs.chunks if c.document_id == doc.document_id)
        for doc in inputs.documents
    ]
    assert chunks_from_table(reader.chunks()) == inputs.chunks
    assert memories_from_table(reader.memories()) == inputs.memories
    assert sentences_from_table(reader.sentences()) == inputs.sentences
    np.testing.assert_array_equal(reader.memory_vectors(), inputs.memory_vectors)
    np.testing.assert_array_equal(reader.sentence_vectors(), inputs.sentence_vectors)
    assert reader.memories().column("directory").to_pylist() == [
        "/science/physics",
        "/science/physics",
        "/science/physics",
        "/science/biology",
        "/science/biology",
        "/cooking",
        "/cooking",
        "/cooking",
    ]
    assert reader.chunk_path(6) == "cooking/pasta_basics_2.md"
    assert reader.tree() == inputs.tree
    assert reader.memories() is reader.memories()  # cached per reader


def test_readme_texts_and_vectors_round_trip(reader: StoreReader, inputs: StoreInputs) -> None:
    table = reader.readmes()
    assert table is not None
    directories = table.column("directory").to_pylist()
    assert directories == sorted(inputs.readmes)
    assert table.column("text").to_pylist() == [inputs.readmes[path] for path in directories]
    expected = np.stack([inputs.readme_vectors[path] for path in directories])
    np.testing.assert_array_equal(reader.readme_vectors(), expected)


def test_a_store_written_without_readme_vectors_has_no_readmes_table(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    write_store(tmp_path / "mem", inputs.as_snapshot(readme_vectors=None))
    reader = StoreReader(tmp_path / "mem")
    assert "readmes" not in reader.table_manifest().tables
    assert reader.readmes() is None
    assert reader.readme_vectors().shape == (0, 384)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda vectors: {k: v for k, v in vectors.items() if k != "/cooking"},
            "differ in directories",
        ),
        (lambda vectors: {**vectors, "/nowhere": vectors["/"]}, "differ in directories"),
        (lambda vectors: {**vectors, "/cooking": np.zeros(12, np.float32)}, "must have shape"),
        (lambda vectors: {**vectors, "/": np.full(384, np.nan, np.float32)}, "NaN"),
    ],
)
def test_readme_vectors_that_do_not_fit_the_readmes_are_refused(
    tmp_path: Path, inputs: StoreInputs, change, message: str
) -> None:
    changed = inputs.as_snapshot(readme_vectors=change(inputs.readme_vectors))
    with pytest.raises(StoreError, match=message):
        write_store(tmp_path / "mem", changed)
    assert not (tmp_path / "mem").exists()
    assert leftovers(tmp_path / "mem") == []


def test_faiss_search_returns_the_matching_row(reader: StoreReader, inputs: StoreInputs) -> None:
    index = reader.faiss_index()
    assert index.ntotal == len(inputs.memories)
    scores, rows = index.search(inputs.memory_vectors, 1)
    assert rows[:, 0].tolist() == list(range(len(inputs.memories)))
    np.testing.assert_allclose(scores[:, 0], 1.0, rtol=1e-5)


def test_reader_refuses_missing_and_incomplete_stores(
    tmp_path: Path, written: tuple[Path, StoreStats]
) -> None:
    with pytest.raises(StoreError, match="no memory store"):
        StoreReader(tmp_path / "nowhere")
    broken = tmp_path / "broken"
    shutil.copytree(written[0], broken)
    (broken / ".bank" / "tables.json").unlink()
    assert not is_store(broken)
    with pytest.raises(StoreError, match="tables.json"):
        StoreReader(broken)
    with pytest.raises(StoreError, match="no memory with index"):
        StoreReader(written[0]).chunk_path(8)
    with pytest.raises(StoreError):
        StoreReader(written[0]).path("../outside.md")


def test_failure_inside_builder_leaves_previous_store_untouched(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    store_dir = tmp_path / "mem"
    write_store(store_dir, inputs.as_snapshot())
    before = snapshot(store_dir)
    with pytest.raises(RuntimeError, match="boom"), StoreBuilder(store_dir) as builder:
        builder.write_file("README.md", "half-built")
        raise RuntimeError("boom")
    assert snapshot(store_dir) == before
    assert leftovers(store_dir) == []


def test_a_switch_failing_midway_leaves_the_previous_store_live(
    tmp_path: Path, inputs: StoreInputs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory_bank.store import location

    store_dir = tmp_path / "mem"
    write_store(store_dir, inputs.as_snapshot())
    before = snapshot(store_dir)

    def failing_switch(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(location, "_switch_link", failing_switch)
    with pytest.raises(StorageError, match=f"no space left on the device of {store_dir} "):
        write_store(store_dir, make_inputs(seed=4).as_snapshot())
    monkeypatch.undo()
    assert snapshot(store_dir) == before
    assert not list(tmp_path.glob(".mem.link-*"))


def test_an_incomplete_build_is_never_published(tmp_path: Path, inputs: StoreInputs) -> None:
    store_dir = tmp_path / "mem"
    write_store(store_dir, inputs.as_snapshot())
    before = snapshot(store_dir)
    with StoreBuilder(store_dir) as builder:
        builder.write_file("README.md", "new")
        with pytest.raises(StoreError, match="incomplete store"):
            builder.commit()
    assert snapshot(store_dir) == before
    assert leftovers(store_dir) == []


def test_invalid_input_writes_nothing(tmp_path: Path, inputs: StoreInputs) -> None:
    store_dir = tmp_path / "mem"
    write_store(store_dir, inputs.as_snapshot())
    before = snapshot(store_dir)
    readmes = {path: text for path, text in inputs.readmes.items() if path != "/cooking"}
    with pytest.raises(StoreError, match="without a README"):
        write_store(store_dir, inputs.as_snapshot(readmes=readmes))
    assert snapshot(store_dir) == before
    assert leftovers(store_dir) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tree": build_tree([0, 1, 2], [3, 4, 5], [5, 6, 7])}, "index 5 is in 2 places"),
        ({"tree": build_tree([0, 1, 2], [3, 4], [5, 6])}, "indices in no leaf: 7"),
        ({"tree": build_tree([0, 1, 2], [3, 4], [5, 6, 7, 8])}, "indices outside 0..7: 8"),
        ({"taxonomy_config": TaxonomyConfig(hard_max_leaf=2)}, "more than hard_max_leaf"),
        ({"memory_vectors": np.zeros((7, 384), dtype=np.float32)}, r"shape \(8, 384\)"),
        ({"sentence_vectors": np.zeros((1, 384), dtype=np.float32)}, "sentence vectors"),
        ({"meta": {"model_used": "offline"}}, "meta lacks"),
    ],
)
def test_inconsistent_inputs_are_refused(
    tmp_path: Path, inputs: StoreInputs, change: dict, message: str
) -> None:
    change = dict(change)
    taxonomy_config = change.pop("taxonomy_config", None)
    if "tree" in change:
        change["readmes"] = {node.path: "# readme\n" for node in change["tree"].iter_nodes()}
    with pytest.raises(StoreError, match=message):
        write_store(tmp_path / "mem", inputs.as_snapshot(**change), taxonomy_config=taxonomy_config)
    assert not (tmp_path / "mem").exists()


def test_unsafe_directory_names_are_refused(tmp_path: Path, inputs: StoreInputs) -> None:
    tree = inputs.tree.model_copy(deep=True)
    tree.children[1].name = ".."
    tree.children[1].path = "/.."
    readmes = {node.path: "# readme\n" for node in tree.iter_nodes()}
    with pytest.raises(StoreError, match="invalid directory name '..'"):
        write_store(tmp_path / "mem", inputs.as_snapshot(tree=tree, readmes=readmes))
    assert not (tmp_path / "mem").exists()


def test_refuses_to_replace_a_directory_that_is_not_a_store(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "diary.txt").write_text("precious")
    with pytest.raises(StoreError, match="not a memory store"):
        write_store(foreign, inputs.as_snapshot())
    assert (foreign / "diary.txt").read_text() == "precious"


def test_second_build_replaces_first_and_keeps_created_at(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    store_dir = tmp_path / "mem"
    first = write_store(store_dir, inputs.as_snapshot())
    meta = json.loads((store_dir / ".gam_meta.json").read_text())
    meta["created_at"] = "2020-01-01T00:00:00Z"
    atomic_write_text(store_dir / ".gam_meta.json", json.dumps(meta))

    biology = DirectoryNode(path="/biology", name="biology", chunk_indices=[0, 1])
    smaller = make_inputs(
        seed=1, specs=MEMORY_SPECS[3:5], tree=DirectoryNode(path="/", name="", children=[biology])
    )
    second = write_store(store_dir, smaller.as_snapshot())
    reader = StoreReader(store_dir)
    assert second.store_version != first.store_version == meta["store_version"]
    assert reader.meta["created_at"] == "2020-01-01T00:00:00Z"
    assert reader.meta["updated_at"] != "2020-01-01T00:00:00Z"
    counts = [reader.meta[f"total_{name}"] for name in ("chunks", "directories", "documents")]
    assert counts == [2, 1, 1]
    assert layout_of(store_dir) == {
        ".gam_meta.json",
        "README.md",
        "biology/README.md",
        "biology/cell_biology.md",
        "biology/dna_replication.md",
        *(name for name in EXPECTED_FILES if name.startswith(".bank/")),
    }
    assert leftovers(store_dir) == []


def test_same_content_gives_same_store_version(tmp_path: Path, inputs: StoreInputs) -> None:
    assert write_store(tmp_path / "a", inputs.as_snapshot()).store_version == (
        write_store(tmp_path / "b", inputs.as_snapshot()).store_version
    )


def test_concurrent_builds_serialize_and_leave_one_complete_store(tmp_path: Path) -> None:
    store_dir = tmp_path / "mem"
    candidates = [make_inputs(seed=seed) for seed in (10, 11)]
    barrier = threading.Barrier(len(candidates))
    results: list[StoreStats | BaseException | None] = [None, None]

    def build(slot: int) -> None:
        barrier.wait()
        try:
            results[slot] = write_store(store_dir, candidates[slot].as_snapshot())
        except BaseException as exc:  # surfaced by the assertion below
            results[slot] = exc

    threads = [threading.Thread(target=build, args=(slot,)) for slot in range(len(candidates))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert all(not isinstance(result, BaseException) for result in results), results
    versions = [result.store_version for result in results]
    assert len(set(versions)) == 2
    reader = StoreReader(store_dir)
    winner = candidates[versions.index(reader.store_version)]
    assert layout_of(store_dir) == EXPECTED_FILES
    assert memories_from_table(reader.memories()) == winner.memories
    np.testing.assert_array_equal(reader.memory_vectors(), winner.memory_vectors)
    assert reader.faiss_index().ntotal == 8
    assert leftovers(store_dir) == []


def test_commit_waits_for_the_store_lock(tmp_path: Path, inputs: StoreInputs) -> None:
    store_dir = tmp_path / "mem"
    with store_lock(store_dir):
        thread = threading.Thread(target=write_store, args=(store_dir, inputs.as_snapshot()))
        thread.start()
        thread.join(timeout=1.0)  # the build writes its files, then blocks before the swap
        assert thread.is_alive()
        assert not store_dir.exists()
    thread.join()
    assert is_store(store_dir)


def test_old_versions_go_once_no_reader_can_still_be_on_them(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    from memory_bank.store.location import GRACE_SECONDS, StoreLocation

    store_dir = tmp_path / "mem"
    for seed in (1, 2, 3):
        write_store(store_dir, make_inputs(seed=seed).as_snapshot())
    location = StoreLocation(store_dir)
    # A commit killed after moving its version in place but before switching the link.
    orphan = location.versions_dir / "000004-deadbeef"
    orphan.mkdir()
    assert [p.name[:6] for p in location.versions()] == ["000001", "000002", "000003", "000004"]
    live = location.live_directory()
    # Within the grace period every version stays: a reader may have resolved it just now.
    assert location.collect_garbage() == []
    later = time.time() + GRACE_SECONDS + 1
    removed = location.collect_garbage(now=later)
    assert [p.name[:6] for p in removed] == ["000001"]
    assert location.live_directory() == live and is_store(store_dir)
    write_store(store_dir, make_inputs(seed=4).as_snapshot())  # becomes 000005
    location.collect_garbage(now=time.time() + GRACE_SECONDS + 1)
    assert [p.name[:6] for p in location.versions()] == ["000004", "000005"]
    assert StoreReader(store_dir).root == location.versions()[-1]


def test_a_store_from_before_versions_is_switched_without_a_gap(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    store_dir = tmp_path / "mem"
    write_store(tmp_path / "old", inputs.as_snapshot())
    shutil.copytree((tmp_path / "old").resolve(), store_dir)  # a plain directory, as stores were
    assert not store_dir.is_symlink()
    write_store(store_dir, make_inputs(seed=7).as_snapshot())
    assert store_dir.is_symlink() and is_store(store_dir)
    assert leftovers(store_dir) == []


def test_a_symlinked_store_path_keeps_pointing_at_the_store(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    real = tmp_path / "disk" / "mem"
    real.parent.mkdir()
    link = tmp_path / "mem"
    link.symlink_to(real, target_is_directory=True)
    write_store(link, inputs.as_snapshot())
    write_store(link, make_inputs(seed=3).as_snapshot())
    assert link.is_symlink() and is_store(real)
    assert StoreReader(link).root == real.resolve()
    # The commits went to the store the link names, not into one of its versions.
    assert [p.name[:6] for p in (real.parent / ".mem.versions").iterdir()] == ["000001", "000002"]
    plain = tmp_path / "plain"
    plain.mkdir()
    assert real.stat().st_mode == plain.stat().st_mode  # not mkdtemp's 0700


def test_a_copied_link_is_refused_as_a_store_and_the_original_keeps_its_version(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    from memory_bank.store.location import StoreLocation

    original = tmp_path / "mem"
    write_store(original, inputs.as_snapshot())
    live = original.resolve()
    files_before = sorted(p.relative_to(live) for p in live.rglob("*"))
    copy = tmp_path / "copy"
    copy.symlink_to(os.readlink(original))  # `cp -a mem copy`: the link, not the files
    with pytest.raises(StoreError, match="is a version of the store .*mem"):
        write_store(copy, make_inputs(seed=3).as_snapshot())
    with pytest.raises(StoreError, match="is a version of the store"):
        with StoreLocation(copy).lock():
            pass
    assert original.resolve() == live and live.is_dir() and not live.is_symlink()
    assert sorted(p.name for p in live.parent.iterdir()) == [live.name]  # no lock left there
    assert sorted(p.relative_to(live) for p in live.rglob("*")) == files_before
    assert StoreReader(copy).root == live  # reading through it is still fine


def test_a_build_left_by_a_dead_process_is_removed_and_a_live_one_kept(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    store_dir = tmp_path / "mem"
    crash = (
        "import os, sys\n"
        "from memory_bank.store import StoreBuilder\n"
        "builder = StoreBuilder(sys.argv[1])\n"
        "builder.write_file('README.md', 'half-built')\n"
        "print(builder.build_dir)\n"
        "os._exit(1)  # killed mid-build: no abort, no cleanup\n"
    )
    finished = subprocess.run(
        [sys.executable, "-c", crash, str(store_dir)], capture_output=True, text=True, check=False
    )
    abandoned = Path(finished.stdout.strip())
    assert finished.returncode == 1 and abandoned.is_dir()
    with StoreBuilder(store_dir) as running:  # another build, still being written
        write_store(store_dir, inputs.as_snapshot())
        assert not abandoned.exists()
        assert running.build_dir.is_dir()
        running.abort()
    assert leftovers(store_dir) == []
    assert is_store(store_dir) and not (store_dir / ".owner.lock").exists()


def test_conversation_turns_round_trip_and_older_tables_still_read(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    from memory_bank.schemas import Turn
    from memory_bank.store.tables import DOCUMENTS_SCHEMA, documents_table, read_parquet

    turns = [
        Turn(speaker="Ann", text="Shall we start?", timestamp="10:00"),
        Turn(speaker="Bo", text="Yes."),
    ]
    conversation = Document(
        document_id="c0ffee",
        source="meeting.json",
        title="meeting",
        kind="conversation",
        text="Ann: Shall we start?\nBo: Yes.",
        turns=turns,
        turn_offsets=[0, 21],
    )
    path = tmp_path / "documents.parquet"
    pq.write_table(documents_table([*inputs.documents, conversation], {}), path)
    assert documents_from_table(read_parquet(path, DOCUMENTS_SCHEMA))[-1] == conversation
    # A table written before the turn columns existed reads with empty turns.
    pq.write_table(pq.read_table(path).drop_columns(["turns", "turn_offsets"]), path)
    older = documents_from_table(read_parquet(path, DOCUMENTS_SCHEMA))
    assert older[:-1] == inputs.documents
    assert (older[-1].turns, older[-1].turn_offsets) == ([], [])


def test_deleting_a_store_takes_its_versions_and_siblings_and_leaves_its_neighbours(
    tmp_path: Path, inputs: StoreInputs
) -> None:
    from memory_bank.store.location import StoreLocation

    for name in ("mem", "mem.old"):
        write_store(tmp_path / name, inputs.as_snapshot())
        write_store(tmp_path / name, inputs.as_snapshot())  # a second version
    (tmp_path / ".mem.journal").mkdir()
    (tmp_path / ".mem.graph.lock").touch()
    assert (tmp_path / "mem").is_symlink() or (tmp_path / ".mem.versions").is_dir()

    StoreLocation(tmp_path / "mem").delete()

    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".mem.", "mem"))) == [
        name for name in sorted(p.name for p in tmp_path.iterdir()) if "old" in name
    ]
    assert StoreReader(tmp_path / "mem.old").meta["total_chunks"] > 0
    StoreLocation(tmp_path / "mem").delete()  # gone already: nothing to do


def test_a_store_with_whole_tables_is_read_and_its_next_commit_writes_segments(
    tmp_path: Path, written: tuple[Path, StoreStats], inputs: StoreInputs
) -> None:
    """A store from before segments: whole Parquet tables and one faiss index."""
    store = tmp_path / "old"
    shutil.copytree(written[0].resolve(), store)
    current = StoreReader(store)
    tables = {name: getattr(current, name)() for name in ("documents", "chunks", "memories")}
    tables["sentences"] = current.sentences()
    tables["readmes"] = current.readmes()
    shutil.rmtree(store / ".bank" / "tables")
    (store / ".bank" / "tables.json").unlink()
    for name, table in tables.items():
        pq.write_table(table, store / ".bank" / f"{name}.parquet")
    write_faiss_index(build_faiss_index(current.memory_vectors()), store / ".bank/vectors.faiss")

    old = StoreReader(store)
    assert not old.segmented and is_store(store)
    for name, table in tables.items():
        assert getattr(old, name)().equals(table), name
    assert old.faiss_index().search(inputs.memory_vectors[:1], 1)[1][0, 0] == 0

    write_store(store, inputs.as_snapshot())
    new = StoreReader(store)
    assert new.segmented and not (new.root / ".bank" / "vectors.faiss").exists()
    for name, table in tables.items():
        assert getattr(new, name)().equals(table), name
