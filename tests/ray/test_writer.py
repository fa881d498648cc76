"""The store's writer actor: concurrent drivers' commits go through one named actor, in turn."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from actors.writer import NAMESPACE, writer_name
from memory_bank.config import AppConfig
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store
from pipeline.executor import ray_runner

pytestmark = pytest.mark.ray

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


def test_concurrent_ray_adds_commit_through_one_writer_actor(ray_cluster, tmp_path: Path) -> None:
    config = AppConfig()
    store = tmp_path / "store"
    ray_runner(config).run(store, [str(SAMPLE / "articles" / "science")])
    batches = [
        [str(SAMPLE / "notes" / "home" / "sourdough_baking.md")],
        [str(SAMPLE / "notes" / "engineering" / "postgresql_indexing.md")],
        [str(SAMPLE / "support")],
    ]
    errors: list[BaseException] = []

    def add(files: list[str]) -> None:
        try:
            ray_runner(config).run(store, files)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(files,)) for files in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    sources = {Path(source).name for source in StoreReader(store).meta["source_files"]}
    assert {
        "sourdough_baking.md",
        "postgresql_indexing.md",
        "halden_t3_thermostat_faq.txt",
    } <= sources
    assert len(sources) == 4 + 3
    # One detached actor per store, found by name from any driver.
    actor = ray_cluster.get_actor(writer_name(store), namespace=NAMESPACE)
    assert actor is not None
    assert verify_store(store, config.taxonomy).ok
