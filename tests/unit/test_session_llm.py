"""The session mode with the `openai` backend, through the real `openai` client and the loopback
server: the ReAct loop (tool calls, answer, token limit, forced answer) and the five session
roles asked of the model, with the offline role as fallback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.llm.endpoint import OpenAICompatible
from memory_bank.session.react import ReactAgent
from tests.loopback_llm import LoopbackLLM, loopback_llm_server

SECRET = "sk-loopback-session-0123456789"
llm_server = pytest.fixture(loopback_llm_server)


@pytest.fixture
def llm(llm_server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> LoopbackLLM:
    llm_server.reset()
    llm_server.handlers.clear()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return llm_server


def _config(llm: LoopbackLLM, tmp_path: Path) -> AppConfig:
    return AppConfig.model_validate(
        {
            "llm": {
                "backend": "openai",
                "base_url": llm.base_url,
                "model": "loopback-1",
                "cache_dir": str(tmp_path / "cache"),
                "timeout_seconds": 5,
                "max_retries": 1,
            }
        }
    )


def _tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def _search(searched: list[str]):
    def search(arguments: dict) -> str:
        searched.append(arguments["query"])
        return "The Louvre is a museum in Paris."

    return search


def test_the_react_loop_calls_tools_and_reaches_an_answer(llm, tmp_path):
    def react(_: dict, body: dict) -> dict:
        assert [tool["function"]["name"] for tool in body["tools"]] == ["search"]
        results = _tool_results(body)
        if not results:
            return {"tool_calls": [{"name": "search", "arguments": {"query": "Louvre city"}}]}
        return {"content": re.search(r"in (\w+)", results[-1])[1]}

    llm.handle("react", react)
    searched: list[str] = []
    agent = ReactAgent(OpenAICompatible(_config(llm, tmp_path).llm), {"search": _search(searched)})
    result = agent.run(
        "<task>Task goal: Where is the Louvre?</task>", question="Where is the Louvre?"
    )

    assert (result.prediction, result.termination) == ("Paris", "answer")
    assert searched == ["Louvre city"]
    assert result.tool_responses == ["The Louvre is a museum in Paris."]
    requests = llm.requests_for("react")
    assert len(requests) == 2  # the real client over HTTP, one request per turn
    assert requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"


def test_an_endpoint_without_tool_calls_gets_the_text_format(llm, tmp_path):
    llm.reject_tools_always()

    def react(_: dict, body: dict) -> str:
        assert "tools" not in body and "<tool_call>" in body["messages"][0]["content"]
        results = [
            m["content"] for m in body["messages"] if m["content"].startswith("<tool_response>")
        ]
        if not results:
            return (
                '<tool_call>{"name": "search", "arguments": {"query": "Louvre city"}}</tool_call>'
            )
        city = re.search(r"in (\w+)", results[-1])[1]
        return f"<answer>{city}</answer>"

    llm.handle("react", react)
    searched: list[str] = []
    model = OpenAICompatible(_config(llm, tmp_path).llm)
    result = ReactAgent(model, {"search": _search(searched)}).run("Where is the Louvre?")

    assert (result.prediction, result.termination) == ("Paris", "answer")
    assert searched == ["Louvre city"]
    refused, *asked = llm.requests_for("react")
    assert "tools" in refused["body"] and len(asked) == 2  # refused once, then tags
    assert model.ledger.peek().roles["react"].format_downgrades == 1


def test_the_react_loop_respects_the_token_limit_with_a_forced_answer(llm, tmp_path):
    def react(_: dict, body: dict) -> dict:
        if "You have reached the limit" in (body["messages"][-1]["content"] or ""):
            return {"content": "<answer>forced: what was found so far</answer>"}
        return {"tool_calls": [{"name": "visit", "arguments": {"path": "notes.txt"}}]}

    llm.handle("react", react)
    long_page = "word " * 2000  # each tool response adds about 2,000 tokens

    agent = ReactAgent(
        OpenAICompatible(_config(llm, tmp_path).llm),
        {"visit": lambda arguments: long_page},
        max_calls=50,
        max_context_tokens=5_000,
    )
    result = agent.run("Read everything about the notes.")

    assert result.termination == "token limit"
    assert result.prediction == "forced: what was found so far"
    calls = llm.requests_for("react")
    assert len(calls) < 10  # stopped by the limit, long before max_calls
    forced = calls[-1]["body"]["messages"]
    assert sum(len((m["content"] or "").split()) for m in forced) < 5_000 * 1.5  # trimmed to fit


def test_a_session_asks_the_model_for_every_role_and_keeps_its_results(llm, tmp_path, embedder):
    def classify(request: dict, _: dict) -> dict:
        return {
            "should_cluster": False,
            "clusters": [
                {
                    "cluster_id": "k1",
                    "context": "The Louvre museum (model topic)",
                    "content": request["context"],
                    "keywords": ["Louvre", "Paris"],
                }
            ],
        }

    def structure(request: dict, _: dict) -> dict:
        return {"summary": "MODEL SUMMARY: " + request["content"][:80]}

    def analyze(request: dict, _: dict) -> dict:
        return {"relationships": []}

    def plan(request: dict, _: dict) -> dict:
        doc = request["insight_doc"]
        completed = list(doc["completed_tasks"])
        if request["intercepted"]:
            completed.append(
                {
                    "type": "normal",
                    "description": "read",
                    "status": "success",
                    "context": "found it",
                }
            )
        return {
            "task_goal": doc["task_goal"],
            "completed_tasks": completed,
            "pending_tasks": [] if completed else ["Find the city of the Louvre"],
        }

    for role, handler in (
        ("classify", classify),
        ("structure", structure),
        ("analyze", analyze),
        ("plan", plan),
    ):
        llm.handle(role, handler)
    bank = MemoryBank(tmp_path / "store", _config(llm, tmp_path))
    bank._embedder = embedder

    session = bank.session("Where is the Louvre?")
    assert session.insight_doc.pending_tasks == ["Find the city of the Louvre"]
    result = session.intercept("The Louvre is a museum in Paris, France.")

    [node] = result.new_nodes
    assert node.context == "The Louvre museum (model topic)"
    assert node.summary.startswith("MODEL SUMMARY:")
    assert result.done
    for role in ("classify", "structure", "plan"):
        assert llm.requests_for(role), f"no {role} request reached the model"
        sent = json.dumps(llm.requests_for(role)[0]["body"])
        assert "encoder" not in sent  # offline-only fields stay home


def test_a_role_whose_replies_stay_unusable_falls_back_to_offline(llm, tmp_path, embedder):
    llm.handle("classify", lambda request, _: {"should_cluster": False, "clusters": []})
    llm.handle("structure", lambda request, _: {"summary": ""})
    llm.handle("analyze", lambda request, _: {"relationships": []})
    llm.handle(
        "plan", lambda request, _: {"task_goal": "x", "completed_tasks": [], "pending_tasks": []}
    )
    config = _config(llm, tmp_path)
    config.llm.repair_attempts = 0
    bank = MemoryBank(tmp_path / "store", config)
    bank._embedder = embedder

    result = bank.session("Where is the Louvre?").intercept(
        "The Louvre is a museum in Paris, France."
    )

    assert "Paris" in result.new_nodes[0].summary  # the offline classify and structure
