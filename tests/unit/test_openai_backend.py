"""The `openai` backend through the real `openai` client and a loopback server on 127.0.0.1:
an end-to-end ingest and question, retries, repairs, format downgrades, the organize fallback,
the response cache, the tool-calling loop, and a key that never leaks."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.llm.endpoint import OpenAICompatible
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.organize_role import organize
from memory_bank.taxonomy.roles import OrganizeRequest
from tests.llm_offline_model import OfflineModel
from tests.llm_roles import register_literal_model
from tests.loopback_llm import LoopbackLLM, loopback_llm_server

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"
SOURCES = [
    str(SAMPLE / "articles" / "science" / "apollo_11.md"),
    str(SAMPLE / "articles" / "science" / "photosynthesis.md"),
    str(SAMPLE / "notes" / "home" / "sourdough_baking.md"),
]
SECRET = "sk-loopback-secret-0123456789"

llm_server = pytest.fixture(loopback_llm_server)


@pytest.fixture
def llm(llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> LoopbackLLM:
    llm_server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return register_literal_model(llm_server)


def _config(llm: LoopbackLLM, tmp_path: Path, **overrides: object) -> AppConfig:
    settings = {
        "backend": "openai",
        "base_url": llm.base_url,
        "model": "loopback-1",
        "cache_dir": str(tmp_path / "llm-cache"),
        "timeout_seconds": 5,
        **overrides,
    }
    return AppConfig.model_validate({"llm": settings})


def _bank(tmp_path: Path, config: AppConfig, embedder: Embedder) -> MemoryBank:
    return MemoryBank(
        tmp_path / "store", config=config, executor=lambda c: LocalExecutor(c, embedder)
    )


def test_ingest_and_ask_through_the_protocol(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    config = _config(llm, tmp_path)
    bank = _bank(tmp_path, config, embedder)
    summary = bank.add(files=SOURCES)
    assert summary.chunks > 0 and verify_store(tmp_path / "store", config.taxonomy).ok
    roles = {record["role"] for record in llm.requests}
    assert {"memorize", "organize", "readme"} <= roles
    # Several chunks per memorize request.
    assert len(llm.requests_for("memorize")) <= -(-summary.chunks // config.llm.memorize_batch)
    assert summary.llm["roles"]["memorize"]["calls"] == len(llm.requests_for("memorize"))
    titles = StoreReader(tmp_path / "store").memories().column("title").to_pylist()
    assert any("apollo" in title for title in titles)  # the model's titles, not the extracts'

    result = bank.request("Who walked on the Moon during Apollo 11?", system_prompt="Be brief.")
    assert result.sources and result.sources[0] in result.files_read
    assert result.chunk_ids and 0 < result.confidence <= 0.8
    navigate = llm.requests_for("navigate")
    assert [step.action for step in result.steps][:2] == ["bm25_search", "cat"]
    assert "Be brief." in navigate[0]["body"]["messages"][0]["content"]

    # The key went to the server, and nowhere else: not the store, the summary or the logs.
    assert llm.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    for path in (tmp_path / "store").resolve().rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in summary.model_dump_json() and SECRET not in caplog.text
    assert SECRET not in result.model_dump_json()


def test_a_model_answering_like_the_offline_roles_builds_the_offline_store(
    llm_server: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    llm_server.reset()
    offline = AppConfig()
    offline_bank = MemoryBank(
        tmp_path / "offline", config=offline, executor=lambda c: LocalExecutor(c, embedder)
    )
    offline_bank.add(files=SOURCES)
    OfflineModel(offline, embedder).learn(tmp_path / "offline").register(llm_server)
    config = _config(llm_server, tmp_path)
    summary = _bank(tmp_path, config, embedder).add(files=SOURCES)
    assert summary.llm["roles"]["memorize"]["calls"] > 0

    def layout(store: Path) -> dict[str, tuple[str, str]]:
        table = StoreReader(store).memories()
        return {
            chunk_id: (path, title)
            for chunk_id, path, title in zip(
                *(table.column(name).to_pylist() for name in ("chunk_id", "path", "title")),
                strict=True,
            )
        }

    assert layout(tmp_path / "store") == layout(tmp_path / "offline")


def test_reingest_and_rebuild_of_unchanged_content_make_no_request(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    config = _config(llm, tmp_path)
    bank = _bank(tmp_path, config, embedder)
    bank.add(files=SOURCES)
    sent = len(llm.requests)
    assert bank.add(files=SOURCES).unchanged_documents == len(SOURCES)
    bank.rebuild()  # organize + READMEs again: every reply comes from the cache
    assert len(llm.requests) == sent


def test_transient_errors_are_retried_and_broken_replies_repaired(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    config = _config(llm, tmp_path, memorize_batch=64)
    # All for the one memorize request: the 429 (its Retry-After honoured) and the 500 are
    # retried, the schema-violating object is re-asked with the error, and the re-asked reply,
    # in Python-literal style with a trailing comma, is read leniently.
    for kind in ("rate_limit", "server_error", "invalid", "malformed"):
        llm.inject(kind, **({"retry_after": 0} if kind == "rate_limit" else {}))
    summary = _bank(tmp_path, config, embedder).add(files=SOURCES[:1])
    usage = summary.llm["roles"]["memorize"]
    assert (usage["retries"], usage["repairs"], usage["fallbacks"]) == (2, 1, 0)
    memorize = llm.requests_for("memorize")
    assert [record["fault"] for record in memorize] == [
        "rate_limit",
        "server_error",
        "invalid",
        "malformed",
    ]
    assert "cannot be used" in memorize[-1]["body"]["messages"][-1]["content"]
    titles = StoreReader(tmp_path / "store").memories().column("title").to_pylist()
    assert any("apollo" in title for title in titles)  # the model's memories were kept


def test_a_server_without_json_schema_gets_json_mode(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    llm.reject_response_format_always({"json_schema"})
    config = _config(llm, tmp_path)
    summary = _bank(tmp_path, config, embedder).add(files=SOURCES[:1])
    assert summary.chunks > 0
    assert summary.llm["roles"]["memorize"]["format_downgrades"] == 1
    formats = [r["body"].get("response_format", {}).get("type") for r in llm.requests]
    assert formats[0] == "json_schema" and set(formats[1:]) == {"json_object"}


def test_organize_falls_back_to_a_flat_tree_after_three_invalid_plans(
    llm: LoopbackLLM, tmp_path: Path
) -> None:
    def overlapping(data: dict, _: dict) -> dict:
        everything = [memory["index"] for memory in data["memories"]]
        return {
            "leaves": [
                {"path": "/a", "memories": everything},
                {"path": "/b", "memories": everything},
            ]
        }

    llm.handle("organize", overlapping)
    backend = OpenAICompatible(_config(llm, tmp_path).llm)
    items = [
        TaxonomyItem(index=i, title=f"note_{i}", tldr=f"Note {i}.", keywords=[]) for i in range(9)
    ]
    import numpy as np

    result = organize(
        OrganizeRequest(items=items, vectors=np.eye(9, 384, dtype=np.float32)), backend
    )
    assert len(llm.requests_for("organize")) == 3
    assert result.fallbacks and "flat fallback" in result.fallbacks[-1]
    leaves = [leaf.chunk_indices for leaf in result.tree.leaves()]
    assert sorted(i for leaf in leaves for i in leaf) == list(range(9))
    assert backend.ledger.take().roles["organize"].fallbacks == 1


def test_after_max_iterations_the_answer_role_answers_from_what_was_read(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    config = _config(llm, tmp_path)
    bank = _bank(tmp_path, config, embedder)
    bank.add(files=SOURCES)
    memory_file = StoreReader(tmp_path / "store").memories().column("path").to_pylist()[0]

    def wandering(data: dict, body: dict) -> dict:
        read = any(m["role"] == "tool" for m in body["messages"])
        if not read:
            return {"tool_calls": [{"name": "cat", "arguments": {"path": memory_file}}]}
        return {"tool_calls": [{"name": "ls", "arguments": {"path": "/"}}]}

    llm.handle("navigate", wandering)
    result = bank.request("What is sourdough?", max_iterations=3, system_prompt="Be brief.")
    assert [step.action for step in result.steps] == ["cat", "ls", "ls", "answer"]
    (asked,) = llm.requests_for("answer")
    evidence = json.loads(
        asked["body"]["messages"][1]["content"].split("```json\n")[1].split("\n```")[0]
    )["evidence"]
    assert [e["path"] for e in evidence] == [memory_file] and evidence[0]["chunk_id"]
    assert "Be brief." in asked["body"]["messages"][0]["content"]
    assert result.sources == [memory_file] and result.chunk_ids
    assert result.confidence == pytest.approx(0.7 * 0.6)  # the model's 0.7, forced


def test_an_answer_citing_what_was_not_read_falls_back_to_the_extractive_answer(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    config = _config(llm, tmp_path)
    bank = _bank(tmp_path, config, embedder)
    bank.add(files=SOURCES)
    memory_file = next(
        path
        for path in StoreReader(tmp_path / "store").memories().column("path").to_pylist()
        if "sourdough" in path or "starter" in path
    )

    def reading(data: dict, body: dict) -> dict:
        return {"tool_calls": [{"name": "cat", "arguments": {"path": memory_file}}]}

    def inventing(data: dict, _: dict) -> dict:
        return {"answer": "Yes.", "sources": ["no/such/file.md"], "confidence": 0.9}

    llm.handle("navigate", reading)
    llm.handle("answer", inventing)
    result = bank.request("How is a sourdough starter fed?", max_iterations=1)
    assert len(llm.requests_for("answer")) == 1 + config.llm.repair_attempts
    assert result.sources == [memory_file]  # the extractive answer cites what was read
    assert result.answer != "Yes." and result.confidence > 0


def test_a_stated_confidence_of_zero_stays_zero(
    llm: LoopbackLLM, tmp_path: Path, embedder: Embedder
) -> None:
    bank = _bank(tmp_path, _config(llm, tmp_path), embedder)
    bank.add(files=SOURCES[:1])
    nothing = {"answer": "The memory does not say.", "sources": [], "confidence": 0}
    llm.handle("navigate", lambda *_: {"tool_calls": [{"name": "answer", "arguments": nothing}]})
    assert bank.request("Who won the 1930 World Cup?").confidence == 0.0


def test_tool_schemas_are_plain_json() -> None:
    from memory_bank.query.toolbox import TOOL_SCHEMAS

    names = [tool["function"]["name"] for tool in json.loads(json.dumps(TOOL_SCHEMAS))]
    assert names == [
        "ls",
        "cat",
        "grep",
        "bm25_search",
        "vector_search",
        "deep_retrieval",
        "answer",
    ]
