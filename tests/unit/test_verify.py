"""`verify_store` and `memory-bank verify`: a fresh store is clean, each kind of damage is named.

One real store is built per module; every test that damages a store works on its own copy of
the resolved version directory, so the shared one stays intact.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from memory_bank.app.bank import MemoryBank
from memory_bank.cli.main import app
from memory_bank.config import AppConfig, TaxonomyConfig
from memory_bank.index.corpus import StoreCorpus
from memory_bank.ingest.runner import local_runner
from memory_bank.store.integrity import HASHES_FILE, file_sha256, read_hashes
from memory_bank.store.reader import StoreReader
from memory_bank.store.segments import read_manifest
from memory_bank.store.tables import build_faiss_index, write_faiss_index
from memory_bank.store.verify import VerifyReport, verify_store

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
FILES = [
    "articles/machine_learning/transformers_and_attention.md",
    "notes/engineering/python_concurrency.md",
    "articles/science/photosynthesis.md",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    """A real store (a link to its version directory). Read-only: damage a `copy_of` it."""
    store = tmp_path_factory.mktemp("verify") / "store"
    files = [str(SAMPLE / name) for name in FILES]
    local_runner(AppConfig(), embedder).run(store, files=files)
    return store


def copy_of(store: Path, tmp_path: Path) -> Path:
    """A plain-directory copy of the store's current version, safe to damage."""
    target = tmp_path / "damaged"
    shutil.copytree(store.resolve(), target, symlinks=False)
    return target


def memory_path(store: Path, index: int) -> str:
    return StoreReader(store).chunk_path(index)


def problems_naming(report: VerifyReport, *words: str) -> list[str]:
    return [problem for problem in report.problems if all(word in problem for word in words)]


def test_a_fresh_store_verifies_clean(store: Path) -> None:
    report = verify_store(store)
    assert report.ok and report.problems == [], report.problems
    assert report.store == str(store.resolve())  # one version, resolved once
    meta = json.loads((store / ".gam_meta.json").read_text())
    assert report.store_version == meta["store_version"]
    counts = report.counts
    assert counts["documents"] == len(FILES) == meta["total_documents"]
    assert counts["memories"] == counts["chunks"] == counts["chunk_files"] == meta["total_chunks"]
    assert counts["faiss_vectors"] == meta["total_chunks"]
    assert counts["directories"] == meta["total_directories"]
    assert counts["readmes"] == counts["readme_rows"] == meta["total_directories"] + 1


def test_the_hand_built_query_store_verifies_clean(ml_tech_store: Path) -> None:
    assert verify_store(ml_tech_store).problems == []


def test_a_deleted_chunk_file_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    path = memory_path(damaged, 2)
    (damaged / path).unlink()
    report = verify_store(damaged)
    assert not report.ok
    assert problems_naming(report, "memory 2", path, "missing"), report.problems


def test_a_stray_chunk_file_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    directory = Path(memory_path(damaged, 0)).parent
    stray = directory / "not_a_memory.md"
    (damaged / stray).write_text("---\ntitle: not_a_memory\n---\n\nhello\n")
    report = verify_store(damaged)
    assert problems_naming(report, "stray chunk file", stray.as_posix()), report.problems


def test_meta_counts_that_differ_from_the_tables_are_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    meta_path = damaged / ".gam_meta.json"
    meta = json.loads(meta_path.read_text())
    meta["total_chunks"] += 1
    meta["source_files"] = meta["source_files"][:-1]
    meta_path.write_text(json.dumps(meta))
    report = verify_store(damaged)
    assert problems_naming(report, ".gam_meta.json", "total_chunks"), report.problems
    assert problems_naming(report, ".gam_meta.json", "source_files"), report.problems
    # The counts are not part of the content hash; the meta file's own recorded hash differs.
    assert problems_naming(report, ".gam_meta.json was changed after the store wrote it")
    assert len(report.problems) == 3, report.problems


def test_a_missing_readme_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    directory = Path(memory_path(damaged, 0)).parent
    (damaged / directory / "README.md").unlink()
    report = verify_store(damaged)
    assert problems_naming(report, "without a README", f"/{directory.as_posix()}"), report.problems


def with_memories_graph(damaged: Path, vectors: np.ndarray) -> None:
    """Give the store's memories segment an HNSW graph of `vectors` (as a segment of
    HNSW_MIN_VECTORS rows has one)."""
    manifest = read_manifest(damaged / ".bank")
    segment = manifest.tables["memories"].segments[0]
    name = Path(segment.file).with_suffix(".hnsw").name
    write_faiss_index(
        build_faiss_index(vectors, hnsw_min_vectors=1),
        damaged / ".bank/tables/memories" / name,
    )
    segment.attachments = [*(a for a in segment.attachments if a != name), name]
    (damaged / ".bank/tables.json").write_text(manifest.model_dump_json())
    # Recorded as a commit would record them, so only what the graph holds can be wrong.
    recorded = read_hashes(damaged)
    for relative in (".bank/tables.json", f".bank/tables/memories/{name}"):
        recorded[relative] = file_sha256(damaged / relative)
    pq.write_table(
        pa.table({"path": list(recorded), "sha256": list(recorded.values())}),
        damaged / HASHES_FILE,
    )


def test_a_segment_graph_one_vector_short_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    vectors = StoreReader(damaged).memory_vectors()
    with_memories_graph(damaged, vectors[:-1])
    report = verify_store(damaged)
    rows = len(vectors)
    assert problems_naming(report, ".hnsw", f"{rows - 1} vectors", f"segment {rows}"), (
        report.problems
    )


def test_a_segment_graph_of_other_vectors_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    vectors = StoreReader(damaged).memory_vectors().copy()
    with_memories_graph(damaged, vectors)
    assert verify_store(damaged).ok
    vectors[[0, 1]] = vectors[[1, 0]]
    with_memories_graph(damaged, vectors)
    report = verify_store(damaged)
    assert problems_naming(report, ".hnsw", "row 0 is not the segment's vector"), report.problems


def test_damaged_segments_are_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    manifest = read_manifest(damaged / ".bank")
    chunks = manifest.tables["chunks"].segments[0]
    (damaged / ".bank/tables" / chunks.file).unlink()
    documents = manifest.tables["documents"].segments[0]
    documents.rows += 1
    sentences = manifest.tables["sentences"].segments[0]
    sentences.deleted = [(5, 3)]
    (damaged / ".bank/tables/sentences/000009-stray.parquet").write_bytes(b"")
    (damaged / ".bank/tables.json").write_text(manifest.model_dump_json())
    report = verify_store(damaged)
    assert problems_naming(report, chunks.file, "missing"), report.problems
    assert problems_naming(report, documents.file, f"tables.json says {documents.rows}")
    assert problems_naming(report, sentences.file, "tombstones")
    assert problems_naming(report, "does not list", "sentences/000009-stray.parquet")


def test_corrupt_or_edited_frontmatter_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    edited, broken = memory_path(damaged, 0), memory_path(damaged, 1)
    text = (damaged / edited).read_text()
    (damaged / edited).write_text(text.replace("title: ", "title: renamed_", 1))
    (damaged / broken).write_text((damaged / broken).read_text().replace("---", "--", 2))
    report = verify_store(damaged)
    assert problems_naming(report, edited, "frontmatter differs", "title"), report.problems
    assert problems_naming(report, broken, "frontmatter"), report.problems


def test_a_dropped_memory_row_is_named(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    manifest = read_manifest(damaged / ".bank")
    last = StoreReader(damaged).memories().num_rows - 1
    for table in ("memories", "paths"):  # tombstoned, as a removal would, chunks left alone
        segment = manifest.tables[table].segments[0]
        segment.deleted = [(last, last + 1)]
    (damaged / ".bank/tables.json").write_text(manifest.model_dump_json())
    report = verify_store(damaged)
    assert problems_naming(report, "tree", f"indices outside 0..{last - 1}: {last}")
    assert problems_naming(report, "memories and chunks must match")
    assert problems_naming(report, "stray chunk file")  # the dropped memory's file
    assert problems_naming(report, "total_chunks")


def test_an_edited_table_no_longer_matches_its_store_version(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    readme = damaged / "README.md"
    readme.write_text(readme.read_text() + "\nedited by hand\n")
    report = verify_store(damaged)
    assert problems_naming(report, "store_version", "not the content's hash"), report.problems
    assert problems_naming(report, "readmes.parquet", "text of /"), report.problems


def test_directories_outside_the_tree_and_manifest_drift_are_named(
    store: Path, tmp_path: Path
) -> None:
    damaged = copy_of(store, tmp_path)
    (damaged / "unplanned").mkdir()
    manifest_path = damaged / ".bank/manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["documents"].popitem()
    manifest_path.write_text(json.dumps(manifest))
    report = verify_store(damaged)
    assert problems_naming(report, "directory unplanned on disk is not in tree.json")
    assert problems_naming(report, "manifest.json documents differ"), report.problems


def test_the_tree_is_checked_against_the_given_taxonomy_config(store: Path) -> None:
    largest_leaf = max(len(node.chunk_indices) for node in StoreReader(store).tree().iter_nodes())
    tight = TaxonomyConfig(hard_max_leaf=largest_leaf - 1, max_leaf=largest_leaf - 1)
    report = verify_store(store, tight)
    assert problems_naming(report, "tree:", "more than hard_max_leaf"), report.problems


def test_the_bm25_cache_of_the_version_is_checked(store: Path, tmp_path: Path) -> None:
    damaged = copy_of(store, tmp_path)
    corpus = StoreCorpus(StoreReader(damaged))
    corpus.bm25.get()  # the query side persists the index of this version
    report = verify_store(damaged)
    assert report.ok, report.problems
    assert report.counts["bm25_documents"] == report.counts["memories"]

    stamp_path = corpus.bm25.directory / "stamp.json"
    stamp = json.loads(stamp_path.read_text())
    stamp["num_docs"] -= 1
    stamp_path.write_text(json.dumps(stamp))
    assert problems_naming(verify_store(damaged), "BM25 cache", "documents")

    stamp["num_docs"] += 1
    stamp["format"] = 0  # an older format: the query side rebuilds it, nothing is wrong
    stamp_path.write_text(json.dumps(stamp))
    report = verify_store(damaged)
    assert report.ok and any("stale" in note for note in report.notes), report


def test_a_store_that_cannot_be_opened_is_one_problem(store: Path, tmp_path: Path) -> None:
    missing = verify_store(tmp_path / "nowhere")
    assert not missing.ok and len(missing.problems) == 1 and missing.store_version is None
    damaged = copy_of(store, tmp_path)
    (damaged / ".bank/tree.json").unlink()
    report = verify_store(damaged)
    assert report.problems == [problems_naming(report, ".bank/tree.json")[0]]


def test_memory_bank_verify_uses_its_taxonomy_config(store: Path) -> None:
    assert MemoryBank(store).verify().ok


def test_cli_exit_status_and_json(store: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    clean = runner.invoke(app, ["verify", "--store", str(store)])
    assert clean.exit_code == 0, clean.output
    assert "every check passed" in clean.stdout

    damaged = copy_of(store, tmp_path)
    path = memory_path(damaged, 0)
    (damaged / path).unlink()
    result = runner.invoke(app, ["verify", "--store", str(damaged), "--json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and any(path in problem for problem in report["problems"])

    plain = runner.invoke(app, ["verify", "--store", str(damaged)])
    assert plain.exit_code == 1 and "problem" in plain.stdout
