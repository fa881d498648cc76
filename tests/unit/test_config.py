"""Settings: the shipped configs load, configs/local.yaml is the defaults, bad keys are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bank.config import AppConfig, load_config, usable_cores
from memory_bank.errors import ConfigError
from memory_bank.ingest.runner import local_runner
from memory_bank.store.reader import StoreReader

REPO = Path(__file__).resolve().parents[2]


def test_local_yaml_is_exactly_the_built_in_defaults():
    assert load_config(REPO / "configs" / "local.yaml") == AppConfig()


def test_the_cluster_config_loads():
    assert load_config(REPO / "configs" / "cluster.yaml").ray.address == "auto"


def test_unknown_or_invalid_settings_are_config_errors(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("embedding:\n  model_name: all-MiniLM-L6-v2\n")  # not a setting any more
    with pytest.raises(ConfigError, match="model_name"):
        load_config(config)
    config.write_text("chunking:\n  min_tokens: 500\n  max_tokens: 100\n")
    with pytest.raises(ConfigError, match="min_tokens"):
        load_config(config)


def test_leaf_bounds_above_the_defaults_are_honoured_from_plan_to_write(tmp_path, embedder):
    config = AppConfig.model_validate({"taxonomy": {"max_leaf": 12, "hard_max_leaf": 15}})
    files = sorted(
        str(p) for p in (REPO / "data" / "sample").rglob("*") if p.suffix in {".md", ".txt"}
    )

    summary = local_runner(config, embedder).run(tmp_path / "store", files=files)

    leaves = StoreReader(tmp_path / "store").tree().leaves()
    assert summary.chunks > 50
    assert max(len(leaf.chunk_indices) for leaf in leaves) <= 15
    assert any(len(leaf.chunk_indices) > 10 for leaf in leaves)  # the old write-time default


def test_usable_cores_are_the_affinity_not_the_machine(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {3}, raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert usable_cores() == 1  # a node pinned to one core of a 64-core machine

    def no_affinity(pid):
        raise AttributeError("no affinity call on this platform")

    monkeypatch.setattr("os.sched_getaffinity", no_affinity, raising=False)
    assert usable_cores() == 64
