"""The agents' routes over real HTTP on 127.0.0.1, without Ray: the JSON API with keys and
scopes, writes as jobs, MCP over streamable HTTP (the SDK's own client), the OpenAI-compatible
chat endpoint (the `openai` client, streaming and not, as a model and as a router in front of
the loopback LLM), and the Host / Origin guard. The Serve app mounts the same routes
(tests/serve/test_serve_agents.py checks them there)."""

from __future__ import annotations

import asyncio
import errno
import json

import httpx
import httpx2
import openai
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_bank.agents.gateway import MemoryGateway
from memory_bank.agents.keys import KeyRing, KeyScope
from memory_bank.agents.local import LocalMemory
from memory_bank.app.bank import MemoryBank
from memory_bank.config import AgentsConfig, AppConfig, LimitsConfig, RouterConfig
from memory_bank.store.layout import FAISS_FILE
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store
from tests.agents_support import agents_app, browse_tree, copy_store, memories_below
from tests.loopback_llm import serve_asgi, serve_loopback

ROUTED_MODEL = "loopback-chat"


@pytest.fixture(scope="module")
def upstream():
    """The router's upstream: answers with the system messages it was given, so a test sees
    what was injected."""
    with serve_loopback() as llm:

        def chat(_: dict, body: dict) -> str:
            system = [m["content"] for m in body["messages"] if m["role"] == "system"]
            return "UPSTREAM SAW: " + " || ".join(system)

        llm.handle("chat", chat, plain=True)
        yield llm


@pytest.fixture(scope="module")
def server(tmp_path_factory, team_store_template, upstream, embedder):
    store = copy_store(team_store_template, tmp_path_factory.mktemp("agents"))
    notes = team_store_template.parent / "notes"  # the sources as ingested
    config = AppConfig(
        agents=AgentsConfig(
            add_roots=[str(notes)],
            write_wait_seconds=60,
            router=RouterConfig(
                base_url=upstream.base_url, models=[ROUTED_MODEL], inject_tokens=300
            ),
        )
    )
    bank = MemoryBank(store, config=config, embedder=embedder)
    ring = KeyRing(store)
    keys = {
        name: ring.create(name, permission, scope)[1]
        for name, permission, scope in [
            ("admin", "admin", KeyScope()),
            ("reader", "read", KeyScope()),
            ("writer", "write", KeyScope()),
            ("team-a", "read", KeyScope(documents=(str(notes / "team-a"),))),
            ("team-a-writer", "write", KeyScope(documents=(str(notes / "team-a"),))),
        ]
    }
    memory = LocalMemory(bank)
    with serve_asgi(agents_app(MemoryGateway(memory, config))) as base_url:
        yield {"url": base_url, "keys": keys, "store": store, "notes": notes}
    memory.close()


def _http(server, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {server['keys'][key]}"} if key else {}
    return httpx.Client(base_url=server["url"], headers=headers, timeout=120)


def _team_b(text: str) -> bool:
    """Whether `text` shows anything of team B's notes: their words, sources or memory files.
    (Not directory names: a directory holding both teams' memories is named from all of them,
    the documented limit of a documents scope; a directory scope has no such directory.)"""
    return any(word in text for word in ("Orion", "Marco", "team-b", "/orion_"))


def _shown(result: dict) -> str:
    """What an answer shows of the store (its question, the caller's own words, aside)."""
    shown = ("answer", "sources", "files_read", "history")
    return json.dumps([result[k] for k in shown if k in result])


# --- the JSON API, keys and scopes ---------------------------------------------------------------


def test_loopback_needs_no_key_but_a_wrong_key_is_refused(server):
    with _http(server) as http:
        anonymous = http.post("/search", json={"query": "Falcon launch"})
        wrong = http.post(
            "/search", json={"query": "x"}, headers={"Authorization": "Bearer mbk_00_nope"}
        )

    assert anonymous.status_code == 200 and anonymous.json()
    assert wrong.status_code == 401
    assert wrong.json() == {
        "error": "Unauthorized",
        "detail": "a valid API key is required: 'Authorization: Bearer <key>'",
    }
    assert wrong.headers["www-authenticate"] == "Bearer"


def test_off_loopback_every_route_needs_a_key():
    from actors.serve_access import AccessPolicy
    from memory_bank.agents.keys import LOCAL_OWNER

    class Keys:
        def authenticate(self, token):
            return None

    policy = AccessPolicy(Keys(), AgentsConfig())
    strict = AccessPolicy(Keys(), AgentsConfig(require_keys_on_loopback=True))

    assert policy.caller("", "127.0.0.1") == LOCAL_OWNER
    assert policy.caller("", "::1") == LOCAL_OWNER
    assert policy.caller("", "10.1.2.3") is None
    assert policy.caller("", None) is None
    assert strict.caller("", "127.0.0.1") is None


def test_a_read_key_cannot_write(server):
    with _http(server, "reader") as http:
        refused = [
            http.post("/documents", json={"text": "A note."}),
            http.post("/documents/files/note.md", content=b"A note."),
            http.post("/documents/remove", json={"sources": ["team-a"]}),
            http.post("/rebuild"),
            http.post("/conversations/c1/turns", json={"speaker": "a", "text": "hi"}),
            http.post("/sessions", json={"task_goal": "plan the launch"}),
        ]

    for response in refused:
        assert response.status_code == 403, response.text
        assert response.json()["error"] == "AccessDenied"
        assert "read permission" in response.json()["detail"]


def test_a_write_key_cannot_rebuild(server):
    with _http(server, "writer") as http:
        response = http.post("/rebuild")

    assert response.status_code == 403 and "needs admin" in response.json()["detail"]


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector", "tree"])
def test_a_scoped_key_searches_its_part_only(server, mode):
    with _http(server, "team-a") as http, _http(server, "reader") as everyone:
        scoped = http.post("/search", json={"query": "Orion on-call rotation Marco", "mode": mode})
        unscoped = everyone.post("/search", json={"query": "Orion on-call rotation Marco"})

    assert scoped.status_code == 200, scoped.text
    assert not any(_team_b(json.dumps(hit)) for hit in scoped.json())
    assert any(_team_b(hit["text"]) for hit in unscoped.json())  # the question is answerable


def test_a_scoped_key_never_sees_the_other_part_in_files(server):
    with _http(server, "team-a") as http, _http(server, "reader") as everyone:
        tree = http.get("/tree").json()
        root = http.get("/ls", params={"path": "/"}).json()
        grep = http.get("/grep", params={"pattern": "Marco"}).json()
        falcon = http.get("/grep", params={"pattern": "Falcon"}).json()
        orion_files = [m["file"] for m in everyone.get("/grep", params={"pattern": "Orion"}).json()]
        cat = http.get("/cat", params={"path": orion_files[0]})
        root_readme = http.get("/cat", params={"path": "README.md"})

    assert not _team_b(json.dumps(tree)) and not _team_b(json.dumps(root))
    assert grep == []
    assert falcon and all("falcon" in m["line"].lower() for m in falcon)
    assert cat.status_code == 400 and "no such file" in cat.json()["detail"]
    # The root README summarizes both teams: a scoped key cannot read it.
    assert root_readme.status_code == 400


def test_a_scoped_key_fetches_and_reads_graph_nodes_of_its_part_only(server):
    orion = _orion(server)
    with _http(server, "team-a") as http:
        falcon = http.post("/search", json={"query": "Falcon launch Dana"}).json()[0]
        fetched = http.get(f"/fetch/{falcon['chunk_id']}")
        hidden = http.get(f"/fetch/{orion['chunk_id']}")
        node = http.get(f"/memory/{orion['chunk_id']}")
        own_node = http.get(f"/memory/{falcon['chunk_id']}")

    assert fetched.status_code == 200 and "Falcon" in fetched.json()["text"]
    assert hidden.status_code == 400 and "no memory" in hidden.json()["detail"]
    assert node.status_code == 404
    assert own_node.status_code == 200
    assert not _team_b(json.dumps(own_node.json()))


def test_a_scoped_key_asks_and_gets_answers_from_its_part_only(server):
    with _http(server, "team-a") as http:
        own = http.post("/query", json={"question": "When does Project Falcon launch?"})
        other = http.post(
            "/query", json={"question": "When does the Orion on-call rotation change?"}
        )
        research = http.post(
            "/query", json={"question": "Who owns the Falcon checklist?", "mode": "research"}
        )

    assert own.status_code == 200, own.text
    assert "12 March" in own.json()["answer"]
    assert own.json()["sources"] and all("falcon" in s for s in own.json()["sources"])
    assert not _team_b(_shown(other.json()))
    assert "Dana" in research.json()["answer"] and not _team_b(_shown(research.json()))


def test_a_scoped_key_keeps_its_conversations_and_runs_no_sessions(server):
    with _http(server, "team-a-writer") as http, _http(server, "admin") as admin:
        added = http.post(
            "/conversations/plan/turns", json={"speaker": "Dana", "text": "Launch moved?"}
        )
        own = http.get("/conversations").json()
        everyone = admin.get("/conversations").json()
        session = http.post("/sessions", json={"task_goal": "Plan the launch"})

    assert added.status_code == 200
    assert own == ["plan"]
    assert "plan" not in everyone and any(cid.endswith(".plan") for cid in everyone)
    assert session.status_code == 403 and "whole store" in session.json()["detail"]


def _team_of(everyone: httpx.Client, memory: dict) -> str:
    page = everyone.get("/browse/memory", params={"ref": memory["chunk_id"]}).json()
    return "team-a" if "/team-a/" in page["document"]["source"] else "other"


def test_the_page_needs_no_key_and_shows_a_scoped_key_its_part_only(server):
    page = httpx.get(f"{server['url']}/ui/", headers={"Authorization": "Bearer mbk_0_nope"})
    with _http(server, "team-a") as scoped, _http(server, "reader") as everyone:
        whole = browse_tree(everyone)
        team = {m["chunk_id"]: _team_of(everyone, m) for m in memories_below(whole, "/")}
        seen = browse_tree(scoped)
        others = [m for m in memories_below(whole, "/") if team[m["chunk_id"]] != "team-a"]
        refused = [
            scoped.get("/browse/memory", params={"ref": ref})
            for m in others
            for ref in (m["chunk_id"], m["path"])
        ]
        missing = scoped.get("/browse/memory", params={"ref": "no-such-memory"})
        shown = [
            scoped.get("/browse/memory", params={"ref": m["chunk_id"]}).json()
            for m in memories_below(seen, "/")
        ]
        status, all_status = scoped.get("/browse/status").json(), everyone.get("/browse/status")

    assert page.status_code == 200  # the page holds no data: no key asked, a wrong one ignored
    assert not _team_b(json.dumps([seen, shown, status]))
    # The tree: the directories leading to the key's memories, counted over those only.
    ours = {m["chunk_id"] for m in memories_below(whole, "/") if team[m["chunk_id"]] == "team-a"}
    assert {m["chunk_id"] for m in memories_below(seen, "/")} == ours
    for path, directory in seen.items():
        visible = [m for m in memories_below(whole, path) if team[m["chunk_id"]] == "team-a"]
        assert directory["memories"] == len(visible) > 0, path
        partly = len(visible) < len(memories_below(whole, path))
        assert directory["readme_hidden"] == partly, path
        if partly:
            assert directory["summary"] == "" and directory["key_terms"] == [], path
    # The teams' notes share a directory here, whose README covers both: hidden from this key.
    assert any(directory["readme_hidden"] for path, directory in seen.items() if path != "/")
    assert seen["/"]["readme_hidden"] and not whole["/"]["readme_hidden"]
    # Another team's memories are not there for it: 404, as for one that does not exist.
    assert refused and {r.status_code for r in refused} == {404}
    assert refused[0].json()["error"] == missing.json()["error"] == "NotFound"
    for memory in shown:
        assert all(n["id"] in ours for n in memory["neighbours"]), memory["neighbours"]
        values = [v["node_id"] for t in memory["timelines"] for v in t["values"]]
        assert set(values) <= ours
    assert status["chunks"] == len(ours) and status["documents"] == 2
    assert status["reorganizations"] == [] and len(status["versions"]) == 1
    assert all_status.json()["chunks"] == len(team) == whole["/"]["memories"]


def test_the_page_shows_a_scoped_key_its_own_conversations_only(server):
    with (
        _http(server, "team-a-writer") as own,
        _http(server, "team-a") as other,
        _http(server, "admin") as admin,
    ):
        own.post("/conversations/page-plan/turns", json={"speaker": "Dana", "text": "Go?"})
        listed = own.get("/browse/conversations").json()
        opened = own.get("/browse/conversations/page-plan")
        hidden = other.get("/browse/conversations/page-plan")
        everyone = admin.get("/browse/conversations").json()

    assert "page-plan" in [c["conversation_id"] for c in listed]
    assert all("." not in c["conversation_id"] for c in listed)  # its own, by their own names
    assert opened.status_code == 200 and opened.json()["working"][0]["text"] == "Go?"
    assert opened.json()["conversation_id"] == "page-plan"
    assert hidden.status_code == 404
    assert any(c["conversation_id"].endswith(".page-plan") for c in everyone)


# --- writes as jobs -----------------------------------------------------------------------------


def test_an_add_and_a_removal_run_as_jobs_with_their_status(server):
    with _http(server, "writer") as http:
        submitted = http.post(
            "/documents",
            json={
                "text": "The Vega rocket test fired for 92 seconds on 2 June.",
                "name": "vega.md",
            },
        )
        assert submitted.status_code == 202, submitted.text
        done = http.get(f"/jobs/{submitted.json()['id']}", params={"wait": 60}).json()
        found = http.post("/search", json={"query": "Vega rocket test fired", "top_k": 1}).json()
        removal = http.post("/documents/remove", json={"sources": [found[0]["source"]]})
        removed = http.get(f"/jobs/{removal.json()['id']}", params={"wait": 60}).json()
        after = http.post("/search", json={"query": "Vega rocket test fired", "top_k": 1}).json()
        listed = [job["id"] for job in http.get("/jobs").json()]

    assert done["state"] == "succeeded", done
    assert done["documents"] == 1 and done["chunks"] >= 1 and done["store_version"]
    assert done["progress"]["commit"]["finished"] is True
    assert "92 seconds" in found[0]["text"]
    assert removed["state"] == "succeeded" and removed["removed_documents"] == 1
    assert not after or "Vega" not in after[0]["text"]
    assert {submitted.json()["id"], removal.json()["id"]} <= set(listed)
    # The jobs committed through the segment writer: one logical table, no whole-table index.
    stored = StoreReader(server["store"])
    memories = stored.rows("memories", ["memory"]).column("memory").to_pylist()
    assert stored.segmented and not (stored.root / FAISS_FILE).exists()
    assert not any("Vega" in memory for memory in memories)
    report = verify_store(server["store"])
    assert report.ok, report.problems


def test_server_files_are_added_only_from_the_configured_roots(server, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThe vault code is 0000.\n", encoding="utf-8")
    with _http(server, "admin") as http:
        refused = http.post("/documents", json={"paths": [str(outside)]})
        unsupported = http.post("/documents/files/tool.exe", content=b"MZ")
        again = http.post("/documents", json={"paths": [str(server["notes"] / "team-a")]})
        settled = http.get(f"/jobs/{again.json()['id']}", params={"wait": 60}).json()

    assert refused.status_code == 403 and "add_roots" in refused.json()["detail"]
    assert unsupported.status_code == 400 and "unsupported type" in unsupported.json()["detail"]
    # Adding what the store holds already changes nothing.
    assert settled["state"] == "succeeded" and settled["unchanged_documents"] == 2


def test_a_scoped_writer_adds_within_its_part_and_sees_what_it_added(server):
    with _http(server, "team-a-writer") as http, _http(server, "team-a") as reader:
        submitted = http.post(
            "/documents/files/falcon_risks.md",
            content=b"# Falcon risks\n\nThe Falcon launch risk register lists the Lisbon venue as its top risk.\n",
        )
        done = http.get(f"/jobs/{submitted.json()['id']}", params={"wait": 60}).json()
        own = http.post("/search", json={"query": "Falcon risk register venue", "top_k": 1}).json()
        others = reader.get(f"/jobs/{submitted.json()['id']}")
        removal = http.post(
            "/documents/remove", json={"sources": [str(server["notes"] / "team-b")]}
        )

    assert done["state"] == "succeeded", done
    assert "risk register" in own[0]["text"]
    assert others.status_code == 400  # another key's job is not there for it
    assert removal.status_code == 400 and "not in the store" in removal.json()["detail"]


# --- the Host and Origin guard -----------------------------------------------------------------


def test_foreign_hosts_and_origins_are_refused(server):
    with _http(server) as http:
        rebinding = http.get("/tree", headers={"Host": "attacker.example"})
        foreign_origin = http.get("/tree", headers={"Origin": "http://attacker.example"})
        local_origin = http.get("/tree", headers={"Origin": "http://localhost:5173"})
        mcp = http.post("/mcp", json={}, headers={"Host": "attacker.example:80"})

    assert rebinding.status_code == 403 and "attacker.example" in rebinding.json()["detail"]
    assert foreign_origin.status_code == 403 and "Origin" in foreign_origin.json()["detail"]
    assert local_origin.status_code == 200
    assert mcp.status_code == 403


# --- MCP over streamable HTTP ---------------------------------------------------------------------


async def _mcp_session(server, key: str, drive):
    headers = {"Authorization": f"Bearer {server['keys'][key]}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        transport = streamable_http_client(f"{server['url']}/mcp", http_client=http)
        async with Client(transport) as client:
            return await drive(client)


def _data(result):
    assert not result.is_error, result.content
    return result.structured_content


def test_mcp_over_http_drives_every_tool(server):
    async def drive(client):
        names = {tool.name for tool in (await client.list_tools()).tools}
        found = _data(await client.call_tool("search", {"query": "Falcon budget", "top_k": 3}))
        first = found["results"][0]
        fetched = _data(await client.call_tool("fetch", {"id": first["id"]}))
        listing = _data(await client.call_tool("ls", {"path": "/"}))["result"]
        readme = _data(await client.call_tool("cat", {"path": "README.md"}))["result"]
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource(resources[0].uri)
        grep = _data(await client.call_tool("grep", {"pattern": "Dana"}))["result"]
        asked = _data(await client.call_tool("ask", {"question": "What is the Falcon budget?"}))
        researched = _data(
            await client.call_tool("research", {"question": "Who keeps the Orion schedule?"})
        )
        added = _data(
            await client.call_tool(
                "add", {"text": "The Lyra telescope saw first light on 9 May.", "name": "lyra.md"}
            )
        )
        status = _data(await client.call_tool("job_status", {"job_id": added["id"]}))
        lyra = _data(await client.call_tool("search", {"query": "Lyra telescope first light"}))
        history = _data(await client.call_tool("history", {"memory_id": first["id"]}))
        session = _data(await client.call_tool("session_start", {"task_goal": "Plan Falcon"}))
        intercepted = _data(
            await client.call_tool(
                "session_intercept",
                {"session_id": session["doc_id"], "context": "Falcon launches 12 March."},
            )
        )
        prompt = _data(await client.call_tool("session_prompt", {"session_id": session["doc_id"]}))
        turn = _data(
            await client.call_tool(
                "conversation_add_turn",
                {"conversation_id": "mcp-talk", "speaker": "Ana", "text": "I moved to Porto."},
            )
        )
        recalled = _data(
            await client.call_tool(
                "conversation_recall",
                {"conversation_id": "mcp-talk", "query": "Where did Ana move?"},
            )
        )
        removed = _data(
            await client.call_tool("remove", {"sources": [lyra["results"][0]["source"]]})
        )
        return locals()

    seen = asyncio.run(_mcp_session(server, "writer", drive))

    assert seen["names"] == {
        "search", "fetch", "ls", "cat", "grep", "ask", "research", "add", "remove",
        "job_status", "history", "session_start", "session_intercept", "session_prompt",
        "conversation_add_turn", "conversation_recall",
    }  # fmt: skip
    assert "budget" in seen["first"]["text"].lower() and seen["first"]["url"].startswith(
        "memory:///"
    )
    assert "40,000 euros" in seen["fetched"]["text"]
    assert {"name": "README.md", "type": "file"}.items() <= seen["listing"][0].items()
    assert seen["readme"].startswith("#")
    assert seen["grep"] and all("dana" in match["line"].lower() for match in seen["grep"])
    assert "40,000" in seen["asked"]["answer"] and seen["asked"]["sources"]
    assert "Marco" in seen["researched"]["answer"]
    assert seen["added"]["state"] == "succeeded" and seen["status"]["id"] == seen["added"]["id"]
    assert "first light" in seen["lyra"]["results"][0]["text"]  # the write, then its read
    assert seen["history"]["id"] == seen["first"]["id"]
    assert seen["intercepted"]["new_nodes"] and seen["prompt"]["prompt"].startswith("<task>")
    assert seen["turn"]["turn_id"] == 0 and "Porto" in seen["recalled"]["turns"][0]["text"]
    assert seen["removed"]["state"] == "succeeded" and seen["removed"]["removed_documents"] == 1
    assert seen["resources"][0].uri == "memory:///README.md"
    assert [t.uri_template for t in seen["templates"]] == ["memory:///{+path}"]
    assert seen["read"].contents[0].text == seen["readme"]


def _orion(server) -> dict:
    """A team B memory, as an unscoped key finds it."""
    with _http(server, "reader") as everyone:
        hits = everyone.post("/search", json={"query": "Orion Marco", "top_k": 10}).json()
    return next(hit for hit in hits if _team_b(hit["text"]))


def test_mcp_with_a_scoped_key_sees_its_part_only_and_cannot_write(server):
    orion = _orion(server)

    async def drive(client):
        calls = {
            "search": ("search", {"query": "Orion on-call Marco", "top_k": 10}),
            "tree_search": ("search", {"query": "Orion on-call Marco", "mode": "tree"}),
            "grep": ("grep", {"pattern": "Orion"}),
            "ls": ("ls", {"path": "/"}),
            "cat": ("cat", {"path": orion["chunk_path"]}),
            "fetch": ("fetch", {"id": orion["chunk_id"]}),
            "history": ("history", {"memory_id": orion["chunk_id"]}),
            "ask": ("ask", {"question": "Who keeps the Orion schedule?"}),
            "research": ("research", {"question": "Who keeps the Orion schedule?"}),
            "add": ("add", {"text": "Orion moved to Thursdays."}),
            "remove": ("remove", {"sources": [orion["source"]]}),
            "session": ("session_start", {"task_goal": "Staff Orion"}),
            "turn": (
                "conversation_add_turn",
                {"conversation_id": "c", "speaker": "a", "text": "b"},
            ),
        }
        results = {name: await client.call_tool(tool, args) for name, (tool, args) in calls.items()}
        results["resources"] = (await client.list_resources()).resources
        try:
            await client.read_resource("memory:///README.md")
        except Exception as exc:  # the SDK raises the server's error
            results["root_readme"] = str(exc)
        try:
            await client.read_resource(f"memory:///{orion['chunk_path']}")
        except Exception as exc:
            results["orion_file"] = str(exc)
        return results

    seen = asyncio.run(_mcp_session(server, "team-a", drive))

    for name in ("search", "tree_search", "ls"):
        assert not _team_b(json.dumps(_data(seen[name]))), name
    assert _data(seen["grep"])["result"] == []
    for name in ("ask", "research"):
        assert not _team_b(_shown(_data(seen[name]))), name
    for name in ("cat", "fetch"):  # absent, as a file that does not exist
        text = seen[name].content[0].text
        assert seen[name].is_error and ("no such file" in text or "no memory" in text), name
    assert seen["history"].is_error and "SessionError" in seen["history"].content[0].text
    for name in ("add", "remove", "session", "turn"):  # a read key writes nothing
        assert seen[name].is_error and "AccessDenied" in seen[name].content[0].text, name
    assert seen["resources"] and not any(_team_b(r.uri) for r in seen["resources"])
    assert all(r.uri != "memory:///README.md" for r in seen["resources"])
    assert "no such file" in seen["root_readme"] and "no such file" in seen["orion_file"]


def test_mcp_without_a_valid_key_is_refused(server):
    async def drive():
        async with httpx2.AsyncClient(headers={"Authorization": "Bearer mbk_0_nope"}) as http:
            transport = streamable_http_client(f"{server['url']}/mcp", http_client=http)
            async with Client(transport) as client:
                await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a 401 varies by version
        asyncio.run(drive())


# --- the OpenAI-compatible chat endpoint --------------------------------------------------------


def _openai(server, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server['url']}/v1", api_key=server["keys"][key], max_retries=0)


def test_the_models_are_listed(server):
    models = [model.id for model in _openai(server, "reader").models.list()]

    assert models == ["memory-bank", "memory-bank-research", ROUTED_MODEL]


def test_the_memory_answers_as_a_model_citing_its_files(server):
    client = _openai(server, "reader")
    question = [{"role": "user", "content": "When does Project Falcon launch?"}]

    reply = client.chat.completions.create(model="memory-bank", messages=question)
    stream = client.chat.completions.create(
        model="memory-bank", messages=question, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)

    content = reply.choices[0].message.content
    assert "12 March" in content and "Sources:\n[1] " in content and "falcon" in content
    assert reply.model_extra["memory_bank"]["sources"]
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == content
    assert chunks[-1].usage.completion_tokens == reply.usage.completion_tokens
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_the_router_injects_cited_memories_and_keeps_the_exchange(server, upstream):
    client = _openai(server, "writer")
    messages = [
        {"role": "system", "content": "role: chat\nYou are a helpful assistant."},
        {"role": "user", "content": "Who approves Falcon spending above 2,000 euros?"},
    ]
    meta = {"conversation_id": "router-talk"}

    reply = client.chat.completions.create(model=ROUTED_MODEL, messages=messages, metadata=meta)
    streamed = list(
        client.chat.completions.create(
            model=ROUTED_MODEL, messages=messages, stream=True, metadata=meta
        )
    )

    sent = upstream.requests[-2]["body"]
    injected = sent["messages"][1]["content"]
    assert sent["messages"][0]["content"].startswith("role: chat")  # the client's own first
    assert injected.startswith("Memories recalled") and "[1] " in injected and "Dana" in injected
    assert "metadata" not in sent
    info = reply.model_extra["memory_bank"]
    assert 0 < info["injected_tokens"] <= 300 and info["sources"]
    assert reply.choices[0].message.content.startswith("UPSTREAM SAW:")
    assert reply.usage.prompt_tokens > 0
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert text.startswith("UPSTREAM SAW:")
    with _http(server, "writer") as http:
        conversation = http.get("/conversations/router-talk").json()
    assert conversation["turns"] == 4  # both exchanges: the question and the reply each time


def test_the_router_injects_a_scoped_keys_part_only(server, upstream):
    client = _openai(server, "team-a")
    messages = [
        {"role": "system", "content": "role: chat"},
        {"role": "user", "content": "Who keeps the Orion on-call schedule?"},
    ]

    reply = client.chat.completions.create(model=ROUTED_MODEL, messages=messages)

    assert not _team_b(json.dumps(upstream.requests[-1]["body"]["messages"][1:-1]))
    assert not any(_team_b(s) for s in reply.model_extra["memory_bank"]["sources"])


def test_chat_errors_come_in_openai_shape(server):
    reader = _openai(server, "reader")
    with pytest.raises(openai.NotFoundError) as unknown:
        reader.chat.completions.create(
            model="gpt-nonexistent", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.PermissionDeniedError) as keep:
        reader.chat.completions.create(
            model=ROUTED_MODEL,
            messages=[{"role": "user", "content": "hi"}],
            metadata={"conversation_id": "c"},
        )
    with pytest.raises(openai.AuthenticationError) as bad_key:
        openai.OpenAI(
            base_url=f"{server['url']}/v1", api_key="mbk_0_nope", max_retries=0
        ).models.list()
    with httpx.Client(base_url=server["url"]) as http:
        invalid = http.post("/v1/chat/completions", json={"model": "memory-bank", "messages": []})

    assert unknown.value.body["type"] == "invalid_request_error"
    assert "write" in keep.value.body["message"]
    assert bad_key.value.body["type"] == "authentication_error"
    assert invalid.status_code == 400 and invalid.json()["error"]["message"].startswith(
        "invalid request"
    )


# --- limits and text no UTF-8 can hold, on every route ------------------------------------------

BODY_LIMIT, UPLOAD_LIMIT, FILES_LIMIT = 4096, 16384, 3
SURROGATE = b"\\ud800"  # as JSON escapes it: valid JSON, no valid UTF-8


@pytest.fixture(scope="module")
def limited(tmp_path_factory, team_store_template, embedder):
    """A server of its own with small limits (its writes leave the shared one alone)."""
    store = copy_store(team_store_template, tmp_path_factory.mktemp("limited"))
    notes = team_store_template.parent / "notes"
    config = AppConfig(
        limits=LimitsConfig(
            max_body_bytes=BODY_LIMIT, max_upload_bytes=UPLOAD_LIMIT, max_files=FILES_LIMIT
        ),
        agents=AgentsConfig(add_roots=[str(notes)]),
    )
    ring = KeyRing(store)
    # Its part of the store holds more documents than one request may name.
    wide = ring.create("wide", "read", KeyScope(documents=(str(notes),)))[1]
    memory = LocalMemory(MemoryBank(store, config=config, embedder=embedder))
    with serve_asgi(agents_app(MemoryGateway(memory, config))) as base_url:
        yield {"url": base_url, "store": store, "notes": notes, "keys": {"wide": wide}}
    memory.close()


def _chunked(size: int):
    """A body sent without Content-Length, in pieces."""
    for _ in range(size // 1024):
        yield b"x" * 1024


def test_an_oversized_body_is_a_413_on_every_route(limited):
    mcp_headers = {"Accept": "application/json, text/event-stream"}
    with _http(limited) as http:
        query = http.post("/query", content=b"x" * (2 * BODY_LIMIT))
        upload = http.post("/documents/files/big.md", content=b"x" * (2 * UPLOAD_LIMIT))
        streamed = http.post("/documents/files/big.md", content=_chunked(2 * UPLOAD_LIMIT))
        chat = http.post("/v1/chat/completions", content=b"x" * (2 * BODY_LIMIT))
        mcp = http.post("/mcp", content=b"x" * (2 * BODY_LIMIT), headers=mcp_headers)
        mcp_streamed = http.post("/mcp", content=_chunked(2 * BODY_LIMIT), headers=mcp_headers)
        allowed = http.post(
            "/documents/files/note.md", content=b"# Note\n\n" + b"The kiln fires at dawn. " * 300
        )

    body_refusal = {
        "error": "ContentTooLarge",
        "detail": f"the request body is larger than {BODY_LIMIT:,} bytes (limits.max_body_bytes)",
    }
    assert query.status_code == 413 and query.json() == body_refusal
    for refused in (upload, streamed):  # a file has a limit of its own
        assert refused.status_code == 413, refused.text
        assert refused.json()["detail"].endswith(
            f"larger than {UPLOAD_LIMIT:,} bytes (limits.max_upload_bytes)"
        )
    assert chat.status_code == 413  # in OpenAI's shape, which chat clients parse
    assert chat.json()["error"]["type"] == "invalid_request_error"
    assert "limits.max_body_bytes" in chat.json()["error"]["message"]
    # The MCP endpoint answers a body it failed to read with a 500 of its own: the client
    # still gets the 413.
    assert [mcp.json(), mcp_streamed.json()] == [body_refusal, body_refusal]
    assert allowed.status_code == 202 and allowed.json()["state"] == "succeeded"  # > body limit
    uploads = limited["store"].parent / f".{limited['store'].name}.uploads"
    assert [path.name for path in uploads.rglob("*.md")] == ["note.md"]


def test_a_lone_surrogate_is_refused_on_every_route_never_a_500(limited):
    def text_body(field: str) -> bytes:
        return b'{"' + field.encode() + b'": "why ' + SURROGATE + b'?"}'

    json_headers = {"Content-Type": "application/json"}
    chat_body = (
        b'{"model": "memory-bank", "messages": [{"role": "user", "content": "hi '
        + SURROGATE
        + b'"}]}'
    )
    mcp_call = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", '
        b'"arguments": {"query": "' + SURROGATE + b'"}}}'
    )
    with _http(limited) as http:
        added = http.post("/documents", content=text_body("text"), headers=json_headers)
        removed = http.post(
            "/documents/remove",
            content=b'{"sources": ["' + SURROGATE + b'"]}',
            headers=json_headers,
        )
        turn = http.post(
            "/conversations/c/turns",
            content=b'{"speaker": "Ana", "text": "' + SURROGATE + b'"}',
            headers=json_headers,
        )
        chat = http.post("/v1/chat/completions", content=chat_body, headers=json_headers)
        mcp = http.post(
            "/mcp",
            content=mcp_call,
            headers={**json_headers, "Accept": "application/json, text/event-stream"},
        )

    for response in (added, removed, turn):
        assert response.status_code == 422, response.text
        assert "holds a lone surrogate" in response.text
    assert chat.status_code == 422  # in OpenAI's shape (the openai client cannot send one)
    assert chat.json()["error"] == {
        "message": "body.messages[0].content holds a lone surrogate: not valid Unicode text",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    # MCP's own JSON parser takes no lone surrogate: its JSON-RPC parse error.
    assert mcp.status_code == 400 and mcp.json()["error"]["code"] == -32700


def test_naming_more_files_than_the_limit_is_a_413_but_a_keys_own_part_is_not(limited):
    names = [str(limited["notes"] / f"n{number}.md") for number in range(FILES_LIMIT + 1)]
    with _http(limited) as http:
        search = http.post("/search", json={"query": "Falcon", "within": names})
        add = http.post("/documents", json={"paths": names})
        remove = http.post("/documents/remove", json={"sources": names})
    with _http(limited, "wide") as http:  # four documents in its part, none named
        wide = http.post("/search", json={"query": "Falcon budget", "top_k": 3})

    for refused in (search, add, remove):
        assert refused.status_code == 413, refused.text
        assert refused.json()["error"] == "InputTooLargeError"
        assert f"more than the {FILES_LIMIT} accepted (limits.max_files)" in refused.text
    assert wide.status_code == 200 and "40,000 euros" in wide.json()[0]["text"]


def test_a_write_job_failing_on_a_full_disk_has_one_line_as_its_error(limited, monkeypatch):
    from tests.unit.test_write_failures import fail_store_writes

    store = limited["store"]
    fail_store_writes(monkeypatch, errno.ENOSPC)
    with _http(limited) as http:
        submitted = http.post("/documents", json={"text": "The mill turns on Sundays only."})
    monkeypatch.undo()

    assert submitted.status_code == 202  # the job was taken; its run failed
    job = submitted.json()
    assert job["state"] == "failed"
    assert job["error"].startswith(f"no space left on the device of {store.parent}")
    assert "\n" not in job["error"] and "Traceback" not in job["error"]
