"""The research role through an OpenAI-compatible endpoint: the real `openai` client against the
loopback server, a literal model planning, integrating and reflecting, the store's tools in
between; and the offline loop taking over when the model's plans stay unusable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.ingest.executor import LocalExecutor
from tests.loopback_llm import LoopbackLLM, loopback_llm_server
from tests.unit.test_research import BRIDGE_QUESTION, DOCUMENTS

llm_server = pytest.fixture(loopback_llm_server)
_NAME = re.compile(r"[A-Z][a-z]+(?: of [A-Z][a-z]+| [A-Z][a-z]+)*")


def plan(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """Keyword searches for the names in the request (what a literal model would do)."""
    question = data["question"]
    return {
        "info_needs": [question],
        "tools": ["keyword"],
        "keyword_collection": _NAME.findall(question)[:3],
    }


def integrate(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    """Keeps the result and adds the first sentence of each hit that names a question word."""
    words = {word.lower() for word in re.findall(r"[A-Za-z]{4,}", data["question"])}
    facts, sources = [data["result"]] if data["result"] else [], []
    for hit in data["evidence"]:
        body = hit["snippet"].split("\n\n", 1)[-1]
        for sentence in re.split(r"(?<=[a-z]{2}\.)\s+", " ".join(body.split())):
            if words & {word.lower() for word in re.findall(r"[A-Za-z]{4,}", sentence)}:
                facts.append(sentence)
                sources.append(hit["page_id"])
                break
    return {"content": " ".join(dict.fromkeys(facts)), "sources": list(dict.fromkeys(sources))}


def reflect(data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
    if "Oregon" in data["result"]["content"]:
        return {"enough": True, "new_requests": []}
    return {"enough": False, "new_requests": ["Where is M. Ward from?"]}


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder) -> Path:
    corpus = tmp_path_factory.mktemp("llm_research_corpus")
    for name, text in DOCUMENTS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    bank = MemoryBank(
        tmp_path_factory.mktemp("llm_research") / "store",
        executor=lambda c: LocalExecutor(c, embedder),
        embedder=embedder,
    )
    bank.add(files=[corpus])  # built offline; only the questions go to the model
    return bank.store


@pytest.fixture
def llm(llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> LoopbackLLM:
    llm_server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    llm_server.handle("research_plan", plan)
    llm_server.handle("research_integrate", integrate)
    llm_server.handle("research_reflect", reflect)
    return llm_server


def _bank(store: Path, llm: LoopbackLLM, tmp_path: Path, embedder) -> MemoryBank:
    config = AppConfig.model_validate(
        {
            "llm": {
                "backend": "openai",
                "base_url": llm.base_url,
                "model": "loopback-1",
                "cache_dir": str(tmp_path / "cache"),
                "timeout_seconds": 5,
                "repair_attempts": 1,
            }
        }
    )
    return MemoryBank(store, config=config, embedder=embedder)


def test_the_model_plans_integrates_and_reflects_until_enough(
    store: Path, llm: LoopbackLLM, tmp_path: Path, embedder
) -> None:
    result = _bank(store, llm, tmp_path, embedder).research(BRIDGE_QUESTION)

    assert "Oregon" in result.answer and "M. Ward" in result.answer
    assert any("portland" in source for source in result.sources), result.sources
    assert result.notes == "research through the model" and 0 < result.confidence <= 1
    plans = llm.requests_for("research_plan")
    assert len(plans) == 2 == len(llm.requests_for("research_reflect"))
    # Round two plans the model's own follow-up request, not the question again.
    assert "Where is M. Ward from?" in plans[1]["body"]["messages"][-1]["content"]
    actions = [step.action for step in result.steps]
    assert actions.count("plan") == 2 and actions[-1] == "answer"
    assert any(step.action == "search" and step.number for step in result.steps)


def test_max_iterations_bounds_the_model_rounds(
    store: Path, llm: LoopbackLLM, tmp_path: Path, embedder
) -> None:
    llm.handle("research_plan", lambda data, _: {**plan(data, _), "page_index": [0, 1]})
    result = _bank(store, llm, tmp_path, embedder).research(BRIDGE_QUESTION, max_iterations=1)
    assert len(llm.requests_for("research_plan")) == 1
    assert result.sources  # what one round integrated


def test_unusable_plans_fall_back_to_the_offline_loop(
    store: Path, llm: LoopbackLLM, tmp_path: Path, embedder
) -> None:
    llm.handle("research_plan", lambda *_: {"info_needs": "not a list", "tools": ["telepathy"]})
    bank = _bank(store, llm, tmp_path, embedder)
    result = bank.research(BRIDGE_QUESTION)

    assert result.notes and result.notes.startswith("offline research")
    assert "Oregon" in result.answer  # the offline loop found the bridge on its own
    assert len(llm.requests_for("research_plan")) == 2  # the reply and one repair
    assert not llm.requests_for("research_integrate")
