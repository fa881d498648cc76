"""The page's /browse/ views on the real Serve app over HTTP on 127.0.0.1, for keys limited to
part of the store: a key for one store directory and a key for one document browse their part
only (the tree, the counts, the READMEs, a memory and its neighbours, the store at a glance),
and a read key with no limit still sees everything. The store is a copy of the browse store
(tests/browse_store.py: several directories, two related Moon memories in /apollo, a replaced
claim about Acme in /company); the matrix without Ray is in tests/unit/test_agents_http.py."""

from __future__ import annotations

import json

import httpx
import pytest

from memory_bank.agents.keys import KeyRing, KeyScope
from memory_bank.config import AppConfig
from tests.agents_support import browse_tree, copy_store, memories_below
from tests.load_client import free_port

pytestmark = [pytest.mark.ray, pytest.mark.serve]


@pytest.fixture(scope="module")
def app(ray_cluster, tmp_path_factory, browse_bank):
    from ray import serve

    from actors.serve_app import start

    store = copy_store(browse_bank.store, tmp_path_factory.mktemp("serve-browse"))
    sources = browse_bank.store.parent / "sources"  # the paths as ingested
    ring = KeyRing(store)
    keys = {
        name: ring.create(name, "read", scope)[1]
        for name, scope in [
            ("reader", KeyScope()),
            ("company", KeyScope(directory="/company")),
            ("moon", KeyScope(documents=(str(sources / "moon.md"),))),
        ]
    }
    base_url = start(store, AppConfig(), host="127.0.0.1", port=free_port())
    try:
        yield {"url": base_url, "keys": keys}
    finally:
        serve.shutdown()


def _http(app, key: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {app['keys'][key]}"}
    return httpx.Client(base_url=app["url"], headers=headers, timeout=120)


def _memory(http: httpx.Client, ref: str) -> httpx.Response:
    return http.get("/browse/memory", params={"ref": ref})


def test_a_directory_key_browses_its_directory_only(app):
    with _http(app, "company") as scoped, _http(app, "reader") as everyone:
        whole, seen = browse_tree(everyone), browse_tree(scoped)
        others = [m for m in memories_below(whole, "/") if not m["path"].startswith("company/")]
        refused = [_memory(scoped, m["chunk_id"]).status_code for m in others]
        absent = scoped.get("/browse/directory", params={"path": "/planet"})
        acme = next(m for m in memories_below(seen, "/") if m["path"].endswith("alice_moreno.md"))
        timeline = _memory(scoped, acme["chunk_id"]).json()["timelines"]
        status = scoped.get("/browse/status").json()
        hits = scoped.post("/search", json={"query": "Jupiter Great Red Spot storm"}).json()

    assert set(seen) == {"/", "/company"} and len(whole) > 2  # no other directory listed
    assert seen["/company"]["memories"] == whole["/company"]["memories"] == 3
    assert seen["/"]["memories"] == 3 and whole["/"]["memories"] == 18
    # Its own directory's README is all its own; the root's covers the rest too.
    assert not seen["/company"]["readme_hidden"] and "Acme" in seen["/company"]["summary"]
    assert seen["/"]["readme_hidden"] and seen["/"]["summary"] == ""
    assert refused and set(refused) == {404}  # as absent as a memory that does not exist
    assert absent.status_code == 404
    assert [t["subject"] for t in timeline] == ["Acme"]  # both sides are in /company
    assert (status["chunks"], status["directories"], status["documents"]) == (3, 1, 3)
    assert all(hit["chunk_path"].startswith("company/") for hit in hits)  # the page's search


def test_a_document_key_sees_its_memory_without_its_neighbours(app):
    with _http(app, "moon") as scoped, _http(app, "reader") as everyone:
        whole, seen = browse_tree(everyone), browse_tree(scoped)
        [moon] = memories_below(seen, "/")
        page = _memory(scoped, moon["chunk_id"]).json()
        lunar = next(m for m in memories_below(whole, "/apollo") if m != moon)
        related = _memory(everyone, moon["chunk_id"]).json()["neighbours"]
        hidden = [_memory(scoped, ref).status_code for ref in (lunar["chunk_id"], lunar["path"])]
        status = scoped.get("/browse/status").json()

    assert set(seen) == {"/", "/apollo"}
    assert seen["/apollo"]["memories"] == 1 and whole["/apollo"]["memories"] == 2
    # /apollo also holds the Apollo program's memory: its README and description stay hidden.
    assert seen["/apollo"]["readme_hidden"] and seen["/apollo"]["key_terms"] == []
    assert seen["/"]["directories"][0]["description"] == ""
    assert "Aldrin" not in json.dumps([seen, page, status])
    assert [n["id"] for n in related] == [lunar["chunk_id"]]  # the graph relates them ...
    assert page["neighbours"] == []  # ... but this key does not see the other one
    assert hidden == [404, 404]
    assert (status["chunks"], status["documents"], status["graph_edges"]) == (1, 1, {})


def test_an_unlimited_read_key_sees_the_whole_store(app):
    with _http(app, "reader") as everyone:
        whole = browse_tree(everyone)
        status = everyone.get("/browse/status").json()
        moon = next(m for m in memories_below(whole, "/apollo") if "moon" in m["path"])
        neighbours = _memory(everyone, moon["chunk_id"]).json()["neighbours"]

    assert not any(page["readme_hidden"] for page in whole.values())
    assert whole["/"]["memories"] == status["chunks"] == len(memories_below(whole, "/")) == 18
    assert status["directories"] == len(whole) - 1 and status["documents"] == 18
    assert len(neighbours) == 1 and status["conflicts_resolved"] + status["conflicts_open"] == 1
