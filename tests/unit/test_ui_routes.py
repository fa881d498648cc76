"""The page's router on a plain FastAPI app (no Ray): its files and their cache headers, the
/browse/ views' errors, and that every file the page names is there."""

from __future__ import annotations

import gzip
import re

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from actors.ui import attach_browser, is_page_path, router
from actors.ui.assets import STATIC_DIR, StaticAssets
from memory_bank.config import AppConfig


@pytest.fixture(scope="module")
def client(browse_bank):
    app = FastAPI()
    app.include_router(router)
    attach_browser(app, str(browse_bank.store), AppConfig())
    with TestClient(app) as http:
        yield http


def _asset_urls(page_text: str) -> list[str]:
    return re.findall(r'(?:href|src)="(assets/[^"]+)"', page_text)


def test_the_page_names_this_build_and_is_revalidated(client):
    response = client.get("/ui/")

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    assert "default-src 'none'" in response.headers["content-security-policy"]
    urls = _asset_urls(response.text)
    build = StaticAssets().build
    assert urls and all(url.startswith(f"assets/{build}/") for url in urls)
    again = client.get("/ui/", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"


def test_the_files_of_this_build_are_cached_for_a_year_and_sent_gzipped(client):
    url = next(url for url in _asset_urls(client.get("/ui/").text) if url.endswith("app.js"))

    plain = client.get(f"/ui/{url}", headers={"Accept-Encoding": "identity"})
    zipped = client.get(f"/ui/{url}", headers={"Accept-Encoding": "gzip"}, follow_redirects=True)
    stale = client.get("/ui/assets/000000000000/app.js")

    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/javascript")
    assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert plain.content == (STATIC_DIR / "app.js").read_bytes()
    assert zipped.headers.get("content-encoding") == "gzip"
    assert zipped.content == plain.content  # the client unzipped what was sent compressed
    assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache"
    assert client.get("/ui/assets/x/index.html").status_code == 404
    assert client.get("/ui/assets/x/secrets.py").status_code == 404


def test_every_module_the_page_imports_is_served():
    assets = StaticAssets()
    page = assets.page().body.decode()
    named = {url.rsplit("/", 1)[1] for url in _asset_urls(page)}
    for name in list(named):
        text = (STATIC_DIR / name).read_text(encoding="utf-8")
        named.update(re.findall(r'from "\./([\w.-]+)"', text))
    assert named and all(assets.get(name) is not None for name in named), named
    assert len(gzip.compress(assets.get("tree.js").body)) == len(assets.get("tree.js").gzipped)


def test_browse_views_answer_404_and_422_with_a_reason(client):
    missing_directory = client.get("/browse/directory", params={"path": "/nowhere"})
    missing_memory = client.get("/browse/memory", params={"ref": "nothing.md"})

    assert missing_directory.status_code == 404
    assert missing_directory.json() == {
        "error": "NotFound",
        "detail": "no directory '/nowhere' in the store",
    }
    assert missing_memory.status_code == 404 and missing_memory.json()["error"] == "NotFound"
    assert client.get("/browse/directory", params={"limit": 501}).status_code == 422
    assert client.get("/browse/memory").status_code == 422
    assert client.get("/browse/conversations/no-such").status_code == 404


def test_browse_views_answer_with_the_models(client):
    root = client.get("/browse/directory").json()
    first = client.get("/browse/directory", params={"path": root["directories"][0]["path"]})
    memory = client.get("/browse/memory", params={"ref": first.json()["files"][0]["path"]})

    assert root["path"] == "/" and first.status_code == 200
    assert memory.status_code == 200 and memory.json()["id"] == first.json()["files"][0]["chunk_id"]
    assert client.get("/browse/status").json()["documents"] == root["memories"]


def test_browse_json_is_gzipped_for_clients_that_accept_it(client):
    plain = client.get("/browse/directory", headers={"Accept-Encoding": "identity"})
    zipped = client.get("/browse/directory", headers={"Accept-Encoding": "gzip"})

    assert len(plain.content) >= 1024 and "content-encoding" not in plain.headers
    assert zipped.headers["content-encoding"] == "gzip" and zipped.json() == plain.json()
    assert int(zipped.headers["content-length"]) < len(plain.content) / 2


@pytest.mark.parametrize(
    ("path", "open_"),
    [("/ui", True), ("/ui/", True), ("/ui/assets/abc/app.js", True), ("/uix", False),
     ("/browse/status", False), ("/", False)],
)  # fmt: skip
def test_only_the_page_and_its_files_are_open_paths(path, open_):
    assert is_page_path(path) is open_
