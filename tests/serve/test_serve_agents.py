"""The agents' ways in on the real Serve app over HTTP on 127.0.0.1: MCP over streamable HTTP
through an ingress replica (writes through the write-job and writer actors, reads through the
query replica), the OpenAI-compatible endpoint in both modes, keys and scopes, and the
Host / Origin guard behind Serve's proxy. One store, one app for the module; the full matrix of
scopes per route runs without Ray in tests/unit/test_agents_http.py over the same routes."""

from __future__ import annotations

import asyncio
import fcntl
import json

import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_bank.agents.keys import KeyRing, KeyScope
from memory_bank.config import AgentsConfig, AppConfig, LimitsConfig, RouterConfig, StoreConfig
from tests.agents_support import copy_store
from tests.load_client import free_port
from tests.loopback_llm import serve_loopback

pytestmark = [pytest.mark.ray, pytest.mark.serve]
ROUTED_MODEL = "loopback-chat"
UPLOAD_LIMIT = 64 << 10
LOCK_WAIT_S = 2.0


@pytest.fixture(scope="module")
def upstream():
    with serve_loopback() as llm:
        llm.handle(
            "chat", lambda _, body: f"UPSTREAM SAW {len(body['messages'])} messages", plain=True
        )
        yield llm


@pytest.fixture(scope="module")
def app(ray_cluster, tmp_path_factory, team_store_template, upstream):
    from ray import serve

    from actors.serve_app import start

    store = copy_store(team_store_template, tmp_path_factory.mktemp("serve-agents"))
    notes = team_store_template.parent / "notes"
    ring = KeyRing(store)
    keys = {
        name: ring.create(name, permission, scope)[1]
        for name, permission, scope in [
            ("writer", "write", KeyScope()),
            ("reader", "read", KeyScope()),
            ("team-a", "read", KeyScope(documents=(str(notes / "team-a"),))),
        ]
    }
    config = AppConfig(
        agents=AgentsConfig(
            write_wait_seconds=120,
            router=RouterConfig(base_url=upstream.base_url, models=[ROUTED_MODEL]),
        ),
        limits=LimitsConfig(max_upload_bytes=UPLOAD_LIMIT),
        store=StoreConfig(lock_wait_s=LOCK_WAIT_S),
    )
    base_url = start(store, config, host="127.0.0.1", port=free_port())
    try:
        yield {"url": base_url, "keys": keys, "store": store}
    finally:
        serve.shutdown()


def _http(app, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {app['keys'][key]}"} if key else {}
    return httpx.Client(base_url=app["url"], headers=headers, timeout=180)


def _team_b(text: str) -> bool:
    return any(word in text for word in ("Orion", "Marco", "team-b", "/orion_"))


def _data(result):
    assert not result.is_error, result.content
    return result.structured_content


def test_mcp_over_streamable_http_on_serve_writes_then_reads(app):
    async def drive():
        headers = {"Authorization": f"Bearer {app['keys']['writer']}"}
        async with httpx2.AsyncClient(headers=headers, timeout=180) as http:
            transport = streamable_http_client(f"{app['url']}/mcp", http_client=http)
            async with Client(transport) as client:
                names = {tool.name for tool in (await client.list_tools()).tools}
                found = _data(await client.call_tool("search", {"query": "Falcon budget"}))
                fetched = _data(await client.call_tool("fetch", {"id": found["results"][0]["id"]}))
                asked = _data(
                    await client.call_tool("ask", {"question": "When does Falcon launch?"})
                )
                added = _data(
                    await client.call_tool(
                        "add",
                        {"text": "The Lyra telescope saw first light on 9 May.", "name": "lyra.md"},
                    )
                )
                lyra = _data(
                    await client.call_tool("search", {"query": "Lyra telescope first light"})
                )
                history = _data(
                    await client.call_tool("history", {"memory_id": found["results"][0]["id"]})
                )
                session = _data(
                    await client.call_tool("session_start", {"task_goal": "Plan Falcon"})
                )
                prompt = _data(
                    await client.call_tool("session_prompt", {"session_id": session["doc_id"]})
                )
                turn = _data(
                    await client.call_tool(
                        "conversation_add_turn",
                        {
                            "conversation_id": "serve-mcp",
                            "speaker": "Ana",
                            "text": "I moved to Porto.",
                        },
                    )
                )
                resources = (await client.list_resources()).resources
                return locals()

    seen = asyncio.run(drive())

    assert len(seen["names"]) == 16
    assert "40,000 euros" in seen["fetched"]["text"]
    assert "12 March" in seen["asked"]["answer"]
    assert seen["added"]["state"] == "succeeded", seen["added"]  # the job and writer actors
    assert "first light" in seen["lyra"]["results"][0]["text"]  # the write, then its read
    assert seen["history"]["id"] == seen["found"]["results"][0]["id"]
    assert seen["prompt"]["prompt"].startswith("<task>")
    assert seen["turn"]["turn_id"] == 0
    assert seen["resources"][0].uri == "memory:///README.md"


def test_writes_over_http_are_jobs_on_serve(app):
    with _http(app, "writer") as http, _http(app, "reader") as reader:
        submitted = http.post(
            "/documents/files/vega.md",
            content=b"# Vega\n\nThe Vega rocket test fired for 92 seconds.\n",
        )
        done = http.get(f"/jobs/{submitted.json()['id']}", params={"wait": 120}).json()
        refused = reader.post("/documents", json={"text": "A note."})
        hit = reader.post("/search", json={"query": "Vega rocket test fired", "top_k": 1}).json()

    assert submitted.status_code == 202
    assert done["state"] == "succeeded" and done["documents"] == 1, done
    assert refused.status_code == 403 and refused.json()["error"] == "AccessDenied"
    assert "92 seconds" in hit[0]["text"]


def test_a_scoped_key_sees_its_part_only_on_serve(app):
    with _http(app, "team-a") as http:
        searched = http.post("/search", json={"query": "Orion on-call Marco", "top_k": 10}).json()
        asked = http.post("/query", json={"question": "Who keeps the Orion schedule?"}).json()
        grep = http.get("/grep", params={"pattern": "Orion"}).json()
        tree = http.get("/tree").json()
    chat = openai.OpenAI(base_url=f"{app['url']}/v1", api_key=app["keys"]["team-a"], max_retries=0)
    reply = chat.chat.completions.create(
        model="memory-bank", messages=[{"role": "user", "content": "Who keeps the Orion schedule?"}]
    )

    assert not _team_b(json.dumps(searched)) and grep == []
    assert not _team_b(json.dumps([asked["answer"], asked["sources"], asked["files_read"]]))
    assert not _team_b(json.dumps(tree))
    assert not _team_b(reply.choices[0].message.content)


def test_the_chat_endpoint_on_serve_in_both_modes(app, upstream):
    client = openai.OpenAI(
        base_url=f"{app['url']}/v1", api_key=app["keys"]["writer"], max_retries=0
    )
    question = [{"role": "user", "content": "What is the Falcon budget?"}]

    models = [model.id for model in client.models.list()]
    answered = client.chat.completions.create(model="memory-bank", messages=question)
    streamed = list(
        client.chat.completions.create(model="memory-bank", messages=question, stream=True)
    )
    routed = client.chat.completions.create(
        model=ROUTED_MODEL,
        messages=[{"role": "system", "content": "role: chat"}, *question],
        metadata={"conversation_id": "serve-chat"},
    )
    routed_stream = list(
        client.chat.completions.create(
            model=ROUTED_MODEL,
            messages=[{"role": "system", "content": "role: chat"}, *question],
            stream=True,
        )
    )

    assert models == ["memory-bank", "memory-bank-research", ROUTED_MODEL]
    content = answered.choices[0].message.content
    assert "40,000" in content and "Sources:" in content and answered.usage.total_tokens > 0
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == content
    assert routed.choices[0].message.content == "UPSTREAM SAW 3 messages"  # system, memories, user
    assert routed.model_extra["memory_bank"]["injected_tokens"] > 0
    assert "".join(c.choices[0].delta.content or "" for c in routed_stream if c.choices) == (
        "UPSTREAM SAW 3 messages"
    )
    injected = upstream.requests[-1]["body"]["messages"][1]["content"]
    assert "40,000" in injected
    with _http(app, "writer") as http:
        assert http.get("/conversations/serve-chat").json()["turns"] == 2


def test_the_guard_on_serve(app):
    with _http(app) as http:
        local = http.get("/tree")
        rebinding = http.get("/tree", headers={"Host": "attacker.example"})
        foreign = http.post("/mcp", json={}, headers={"Origin": "http://attacker.example"})
        wrong = http.get("/tree", headers={"Authorization": "Bearer mbk_0_nope"})
        health = http.get("/healthz", headers={"Host": "lb.internal"})

    assert local.status_code == 200  # loopback, no key: the client address reached the replica
    assert rebinding.status_code == 403 and foreign.status_code == 403
    assert wrong.status_code == 401 and wrong.json()["error"] == "Unauthorized"
    assert health.status_code == 200


def test_the_request_guards_hold_on_the_agents_routes_on_serve(app):
    surrogate = b"\\ud800"  # as JSON escapes it: valid JSON, no valid UTF-8
    json_headers = {"Content-Type": "application/json"}
    with _http(app, "writer") as http:
        upload = http.post("/documents/files/big.md", content=b"x" * (2 * UPLOAD_LIMIT))
        streamed = http.post(
            "/documents/files/big.md",
            content=(b"x" * 1024 for _ in range(2 * UPLOAD_LIMIT // 1024)),
        )
        chat = http.post("/v1/chat/completions", content=b"x" * (2 << 20))  # past 1 MiB
        mcp = http.post("/mcp", content=b"x" * (2 << 20), headers={"Accept": "application/json"})
        text = http.post(
            "/documents", content=b'{"text": "' + surrogate + b'"}', headers=json_headers
        )
        chat_text = http.post(
            "/v1/chat/completions",
            content=b'{"model": "memory-bank", "messages": [{"role": "user", "content": "'
            + surrogate
            + b'"}]}',
            headers=json_headers,
        )

    for refused in (upload, streamed):
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"] == "ContentTooLarge"
        assert "limits.max_upload_bytes" in refused.json()["detail"]
    assert chat.status_code == 413 and chat.json()["error"]["type"] == "invalid_request_error"
    assert mcp.status_code == 413 and mcp.json()["error"] == "ContentTooLarge"
    assert text.status_code == 422 and "holds a lone surrogate" in text.text
    assert chat_text.status_code == 422
    assert "lone surrogate" in chat_text.json()["error"]["message"]


def test_a_write_job_meeting_a_held_lock_fails_with_one_line_on_serve(app):
    from memory_bank.store.location import StoreLocation

    lock_path = StoreLocation(app["store"]).lock_path
    lock_path.touch()
    with _http(app, "writer") as http, open(lock_path, "r+") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)  # as another writer would
        holder.truncate()
        holder.write("4242 memory-bank add notes/ --store store\n")
        holder.flush()
        submitted = http.post(
            "/documents/files/deneb.md", content=b"# Deneb\n\nDeneb is a blue-white supergiant.\n"
        )
        job = http.get(f"/jobs/{submitted.json()['id']}", params={"wait": 120}).json()

    assert submitted.status_code == 202
    assert job["state"] == "failed", job  # the writer actor's error, its own line, not Ray's
    assert "is locked by pid 4242: memory-bank add notes/ --store store" in job["error"]
    assert "\n" not in job["error"] and "Traceback" not in job["error"]
