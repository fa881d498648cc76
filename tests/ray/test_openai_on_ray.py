"""The `openai` backend on Ray: split requests from the chunk tasks, memorize batches from the
memorize tasks, one organize request per coarse group from the planning tasks, and every task's
LLM usage back in the ingest's ledger."""

from __future__ import annotations

import pytest

from memory_bank.config import AppConfig
from memory_bank.store.verify import verify_store
from pipeline.executor import ray_runner
from tests.llm_roles import register_literal_model
from tests.loopback_llm import loopback_llm_server
from tests.ray.test_pipeline import SMALL_CORPUS

pytestmark = pytest.mark.ray

llm_server = pytest.fixture(loopback_llm_server)


def test_an_openai_ingest_on_ray_accounts_for_every_request(ray_cluster, llm_server, tmp_path):
    register_literal_model(llm_server)
    config = AppConfig.model_validate(
        {
            "chunking": {"min_tokens": 60, "max_tokens": 300},
            "taxonomy": {"coarse_threshold": 20},
            "llm": {
                "backend": "openai",
                "base_url": llm_server.base_url,
                "model": "loopback-1",
                "cache_dir": str(tmp_path / "llm-cache"),
                "timeout_seconds": 10,
            },
        }
    )
    summary = ray_runner(config).run(tmp_path / "store", files=[str(p) for p in SMALL_CORPUS])
    assert verify_store(tmp_path / "store", config.taxonomy).ok
    assert summary.chunks > config.taxonomy.coarse_threshold
    roles = summary.llm["roles"]
    for role in ("split", "memorize", "organize", "readme"):
        sent = len(llm_server.requests_for(role))
        assert sent > 0 and roles[role]["calls"] == sent, role
    assert len(llm_server.requests_for("organize")) >= 2  # one per coarse group
    assert all(roles[role]["fallbacks"] == 0 for role in roles)
