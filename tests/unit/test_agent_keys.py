"""API keys (made, hashed at rest, checked, revoked) and what a scoped key sees of a store."""

from __future__ import annotations

import json

import pytest

from memory_bank.agents.keys import KeyRing, KeyScope, keys_path
from memory_bank.agents.visibility import Visibility
from memory_bank.errors import ConfigError, SessionError, ToolError
from memory_bank.store.reader import StoreReader

PYTHON_DOCS = "docs/programming/python"


def test_a_key_is_shown_once_and_kept_only_as_its_hash(tmp_path):
    ring = KeyRing(tmp_path / "store")

    key, token = ring.create("ci bot", "write", KeyScope(documents=("docs/a",)))

    stored = keys_path(tmp_path / "store").read_text(encoding="utf-8")
    assert token.startswith(f"mbk_{key.id}_") and len(token) > 40
    assert token not in stored and token.split("_", 2)[2] not in stored
    assert json.loads(stored)["keys"][0]["sha256"] == key.sha256
    assert oct(keys_path(tmp_path / "store").stat().st_mode & 0o777) == "0o600"
    caller = KeyRing(tmp_path / "store").authenticate(token)  # another process reads the file
    assert caller is not None
    assert (caller.key_id, caller.permission, caller.scope.documents) == (
        key.id,
        "write",
        ("docs/a",),
    )


def test_wrong_malformed_and_revoked_tokens_authenticate_nobody(tmp_path):
    ring = KeyRing(tmp_path / "store")
    key, token = ring.create("reader", "read")
    other_ring = KeyRing(tmp_path / "store")
    assert other_ring.authenticate(token) is not None

    assert ring.authenticate(token[:-1] + ("x" if token[-1] != "x" else "y")) is None
    assert ring.authenticate(f"mbk_{key.id}") is None
    assert ring.authenticate("Bearer nonsense") is None
    ring.revoke(key.id)

    assert other_ring.authenticate(token) is None  # the server sees the revocation at once
    assert ring.keys()[0].revoked_at is not None
    with pytest.raises(ConfigError, match="no active key"):
        ring.revoke(key.id)


def test_permissions_nest():
    from memory_bank.agents.keys import Caller

    reader, writer, admin = (Caller(key_id="k", permission=p) for p in ("read", "write", "admin"))

    assert reader.allows("read") and not reader.allows("write")
    assert writer.allows("read") and writer.allows("write") and not writer.allows("admin")
    assert admin.allows("admin")


def test_a_document_scope_sees_its_files_and_only_readmes_wholly_inside_it(ml_tech_store):
    view = Visibility.of(KeyScope(documents=(PYTHON_DOCS,)), StoreReader(ml_tech_store))

    assert view.files == {
        "programming/python/python_gil_threading.md",
        "programming/python/python_asyncio_event_loop.md",
        "programming/python/python_type_hints_mypy.md",
    }
    assert view.directories == {"/", "/programming", "/programming/python"}
    # /programming also summarizes React, the root everything: their READMEs stay hidden.
    assert view.readmes == {"programming/python/README.md"}
    assert view.sees_file("/programming/python/README.md")
    assert not view.sees_file("README.md") and not view.sees_file("programming/README.md")
    assert not view.sees_directory("/ml") and not view.sees_directory("/programming/react")
    with pytest.raises(ToolError, match="no such file"):
        view.require_file("ml/transformers/README.md")


def test_a_directory_scope_and_the_search_scopes_it_allows(ml_tech_store):
    view = Visibility.of(KeyScope(directory="/ml/"), StoreReader(ml_tech_store))

    assert {path.split("/")[0] for path in view.files} == {"ml"}
    assert "ml/README.md" in view.readmes and "README.md" not in view.readmes
    deeper = view.search_scope((), "/ml/vision")
    assert deeper is not None and deeper.directory == "/ml/vision"
    assert view.search_scope((), "/programming") is None  # side by side: nothing to search
    assert view.search_scope((PYTHON_DOCS,)) is None  # documents outside the key's part
    assert view.search_scope(()).directory == "/ml"


def test_a_scoped_tree_keeps_only_visible_directories_and_memories(ml_tech_store):
    reader = StoreReader(ml_tech_store)
    view = Visibility.of(KeyScope(documents=(PYTHON_DOCS,)), reader)

    tree = view.tree(reader.tree())

    paths = [node.path for node in tree.iter_nodes()]
    assert paths == ["/", "/programming", "/programming/python"]
    assert sorted(i for node in tree.iter_nodes() for i in node.chunk_indices) == sorted(
        view.indices
    )


def test_a_graph_node_outside_the_scope_is_absent(ml_tech_store):
    from memory_bank.session.models import NodeDetail

    view = Visibility.of(KeyScope(documents=(PYTHON_DOCS,)), StoreReader(ml_tech_store))
    outside = NodeDetail(
        id="not-visible-00000",
        kind="memory",
        status="current",
        summary="",
        context="",
        keywords=[],
        timestamp=0.0,
    )

    with pytest.raises(SessionError, match="no memory"):
        view.node(outside)


def test_keys_are_made_listed_and_revoked_from_the_cli(tmp_path):
    from typer.testing import CliRunner

    from memory_bank.cli.main import app

    runner = CliRunner()
    store = str(tmp_path / "store")

    made = runner.invoke(
        app,
        [
            "keys",
            "create",
            "team a",
            "--store",
            store,
            "--permission",
            "write",
            "--documents",
            "/n/a",
        ],
    )
    bad = runner.invoke(app, ["keys", "create", "x", "--store", store, "--permission", "root"])
    token = made.stdout.strip().splitlines()[-1]
    listed = runner.invoke(app, ["keys", "list", "--store", store, "--json"])
    [key] = json.loads(listed.stdout)
    revoked = runner.invoke(app, ["keys", "revoke", key["id"], "--store", store])

    assert made.exit_code == 0 and token.startswith(f"mbk_{key['id']}_")
    assert bad.exit_code == 1 and "--permission must be one of" in bad.output
    assert key["name"] == "team a" and key["permission"] == "write"
    assert key["scope"] == {"documents": ["/n/a"], "directory": None} and "sha256" not in key
    assert token not in listed.stdout
    assert revoked.exit_code == 0 and KeyRing(store).authenticate(token) is None
