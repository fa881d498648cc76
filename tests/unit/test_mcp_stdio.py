"""`memory-bank mcp --store DIR` over stdio, driven by the MCP SDK's own client: the CLI runs as
a subprocess, as Claude Desktop or an IDE would start it, and every tool is called, a write and
then a read of what it wrote included."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest
import yaml
from mcp import Client, StdioServerParameters

from tests.agents_support import copy_store

TOOLS = {
    "search", "fetch", "ls", "cat", "grep", "ask", "research", "add", "remove", "job_status",
    "history", "session_start", "session_intercept", "session_prompt",
    "conversation_add_turn", "conversation_recall",
}  # fmt: skip


@pytest.fixture(scope="module")
def stdio_server(tmp_path_factory, team_store_template) -> StdioServerParameters:
    root = tmp_path_factory.mktemp("stdio")
    store = copy_store(team_store_template, root)
    extra = root / "extra"
    extra.mkdir()
    (extra / "vega.md").write_text(
        "# Vega\n\nThe Vega rocket test fired for 92 seconds on 2 June.\n", encoding="utf-8"
    )
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({"agents": {"add_roots": [str(extra)]}}), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "memory_bank.cli.main",
            "mcp",
            "--store",
            str(store),
            "--config",
            str(config),
        ],
        env=env,
    )


def _data(result):
    assert not result.is_error, result.content
    return result.structured_content


def test_every_tool_over_stdio(stdio_server, tmp_path):
    async def drive():
        async with Client(stdio_server, read_timeout_seconds=120) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            found = _data(await client.call_tool("search", {"query": "Orion on-call rotation"}))
            first = found["results"][0]
            fetched = _data(await client.call_tool("fetch", {"id": first["id"]}))
            listing = _data(await client.call_tool("ls", {"path": "/"}))["result"]
            cat = _data(await client.call_tool("cat", {"path": first["path"]}))["result"]
            grep = _data(await client.call_tool("grep", {"pattern": "Tuesday"}))["result"]
            asked = _data(await client.call_tool("ask", {"question": "When does Falcon launch?"}))
            researched = _data(
                await client.call_tool("research", {"question": "Who approves Falcon spending?"})
            )
            history = _data(await client.call_tool("history", {"memory_id": first["id"]}))
            added = _data(await client.call_tool("add", {"paths": [str(vega_path)]}))
            status = _data(await client.call_tool("job_status", {"job_id": added["id"]}))
            vega = _data(
                await client.call_tool("search", {"query": "Vega rocket test", "top_k": 1})
            )
            removed = _data(await client.call_tool("remove", {"sources": [str(vega_path)]}))
            outside = await client.call_tool("add", {"paths": [str(tmp_path)]})
            session = _data(await client.call_tool("session_start", {"task_goal": "Staff Orion"}))
            intercepted = _data(
                await client.call_tool(
                    "session_intercept",
                    {"session_id": session["doc_id"], "context": "Orion hires two engineers."},
                )
            )
            prompt = _data(
                await client.call_tool("session_prompt", {"session_id": session["doc_id"]})
            )
            turn = _data(
                await client.call_tool(
                    "conversation_add_turn",
                    {
                        "conversation_id": "desk",
                        "speaker": "Ana",
                        "text": "My badge is number 4471.",
                    },
                )
            )
            recalled = _data(
                await client.call_tool(
                    "conversation_recall", {"conversation_id": "desk", "query": "badge number"}
                )
            )
            resources = (await client.list_resources()).resources
            read = await client.read_resource(f"memory:///{first['path']}")
            return locals()

    vega_path = stdio_server.args[-1].rsplit("/", 1)[0] + "/extra/vega.md"  # beside the config
    seen = asyncio.run(drive())

    assert seen["names"] == TOOLS
    assert "Tuesday" in seen["fetched"]["text"] and seen["fetched"]["memory"] == seen["cat"]
    assert {entry["name"] for entry in seen["listing"]} >= {"README.md"}
    assert seen["grep"] and all("tuesday" in m["line"].lower() for m in seen["grep"])
    assert "12 March" in seen["asked"]["answer"] and seen["asked"]["sources"]
    assert "Dana" in seen["researched"]["answer"]
    assert seen["history"]["id"] == seen["first"]["id"]
    assert seen["added"]["state"] == "succeeded" and seen["added"]["documents"] == 1
    assert seen["status"] == seen["added"]
    assert "92 seconds" in seen["vega"]["results"][0]["text"]  # the write, then its read
    assert seen["removed"]["removed_documents"] == 1
    assert seen["outside"].is_error and "add_roots" in seen["outside"].content[0].text
    assert seen["intercepted"]["new_nodes"] and seen["prompt"]["prompt"].startswith("<task>")
    assert seen["turn"]["turn_id"] == 0 and "4471" in seen["recalled"]["turns"][0]["text"]
    assert seen["resources"][0].uri == "memory:///README.md"
    assert seen["read"].contents[0].text == seen["cat"]
