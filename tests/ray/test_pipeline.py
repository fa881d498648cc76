"""The Ray pipeline end to end on a small corpus, and the distributed planning path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory_bank.config import AppConfig
from memory_bank.ingest.runner import local_runner
from memory_bank.ingest.stages import compose_readmes, plan_tree
from memory_bank.schemas import MemorizedChunk
from memory_bank.store.files import assign_chunk_paths
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy import validate_taxonomy
from pipeline.executor import RayExecutor, ray_runner
from tests.support import shared_embedder
from tests.unit.test_ingest import assert_valid_store

pytestmark = pytest.mark.ray

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
SMALL_CORPUS = [
    SAMPLE / "articles/machine_learning/transformers_and_attention.md",
    SAMPLE / "notes/home/sourdough_baking.md",
    SAMPLE / "meetings/2026-03-14_tidepool_launch_planning.json",
    SAMPLE / "articles/history/lighthouse_keeping_19th_century.pdf",
]


def test_ray_pipeline_matches_the_in_process_run(ray_cluster, tmp_path):
    config = AppConfig()
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    files = [*map(str, SMALL_CORPUS), str(tmp_path / "broken.pdf")]

    summary = ray_runner(config).run(tmp_path / "ray_store", files=files)
    local_runner(config, shared_embedder()).run(tmp_path / "local_store", files=files)

    meta = assert_valid_store(tmp_path / "ray_store")
    assert summary.documents == 4 and meta["total_documents"] == 4
    assert any("broken.pdf" in line for line in summary.skipped)
    stages = {"chunk", "embed+memorize", "commit", "commit: plan", "commit: write", "embed busy"}
    assert stages <= set(summary.stage_seconds)
    ray_reader, local_reader = (
        StoreReader(tmp_path / "ray_store"),
        StoreReader(tmp_path / "local_store"),
    )
    ray_rows = ray_reader.memories().drop_columns(["embedding"]).to_pylist()
    local_rows = local_reader.memories().drop_columns(["embedding"]).to_pylist()
    assert [r["title"] for r in ray_rows] == [r["title"] for r in local_rows]
    assert [r["path"] for r in ray_rows] == [r["path"] for r in local_rows]
    np.testing.assert_allclose(
        ray_reader.memory_vectors(), local_reader.memory_vectors(), atol=1e-4
    )
    kinds = {json.loads(Path(tmp_path / "ray_store/.gam_meta.json").read_text())["backend"]}
    assert kinds == {"offline"}


def test_distributed_planning_covers_a_large_corpus(ray_cluster):
    config = AppConfig().taxonomy.model_copy(update={"coarse_threshold": 100})
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(12, 384))
    labels = rng.integers(0, 12, size=900)
    vectors = centers[labels] + 0.3 * rng.normal(size=(900, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    memories = [
        MemorizedChunk(
            index=i,
            title=f"topic_{labels[i]}_note_{i}",
            memory=f"Topic {labels[i]} word{labels[i]} detail {i}.",
            tldr=f"Detail {i} of topic {labels[i]}.",
            keywords=[f"word{labels[i]}"],
        )
        for i in range(900)
    ]

    task_map = RayExecutor(AppConfig()).map
    tree = plan_tree(memories, vectors, config, None, task_map)
    paths = assign_chunk_paths(tree, memories)
    readmes = compose_readmes(tree, memories, paths, config, None, task_map)

    assert validate_taxonomy(tree, 900, config) == []
    assert len(tree.children) > 1  # planned in coarse groups, one Ray task each
    assert set(readmes) == {node.path for node in tree.iter_nodes()}
    assert readmes["/"].startswith("# ")
    # Ray only decides where the calls run: the in-process map gives the same plan and READMEs.
    assert tree == plan_tree(memories, vectors, config, None)
    assert readmes == compose_readmes(tree, memories, paths, config, None)


def test_read_tasks_and_the_driver_read_the_same_documents(ray_cluster, tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 truncated")
    paths = [*SMALL_CORPUS, tmp_path / "broken.pdf"]
    in_tasks = AppConfig.model_validate({"ray": {"read_in_tasks_from_bytes": 0}})

    from_tasks = RayExecutor(in_tasks).read_files(paths)
    from_driver = RayExecutor(AppConfig()).read_files(paths)

    assert [outcome.model_dump() for outcome in from_tasks] == [
        outcome.model_dump() for outcome in from_driver
    ]
    assert [type(outcome).__name__ for outcome in from_tasks] == ["Document"] * 4 + [
        "SkippedSource"
    ]


def test_both_runners_skip_the_same_sources(ray_cluster, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Alpha\n\nThe alpha document talks about sourdough starters.\n")
    (corpus / "b_copy.md").write_text(
        "# Alpha\n\nThe alpha document talks about sourdough starters.\n"
    )
    (corpus / "empty.txt").write_text("")
    (corpus / "c.txt").write_text(
        "A third text about lighthouses and their keepers on the coast.\n"
    )
    files = [str(corpus), str(tmp_path / "missing.md")]

    on_ray = ray_runner(AppConfig()).run(tmp_path / "ray_store", files=files)
    in_process = local_runner(AppConfig(), shared_embedder()).run(
        tmp_path / "local_store", files=files
    )

    assert on_ray.skipped == in_process.skipped
    assert any("same content as" in line and "b_copy.md" in line for line in on_ray.skipped)
    assert any("empty.txt" in line for line in on_ray.skipped)
    assert any("missing.md" in line for line in on_ray.skipped)
    assert on_ray.documents == in_process.documents == 2


def test_rebuild_job_replans_a_store(ray_cluster, tmp_path, capsys):
    from jobs.rebuild import main

    store = tmp_path / "store"
    local_runner(AppConfig(), shared_embedder()).run(store, files=list(map(str, SMALL_CORPUS[:2])))
    version = StoreReader(store).store_version

    assert main(["--store", str(store)]) == 0

    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["documents"] == 0 and summary["directories"] >= 1
    assert_valid_store(store)
    assert StoreReader(store).store_version == version  # same memories, same plan: same content
    assert main(["--store", str(tmp_path / "missing")]) == 1
