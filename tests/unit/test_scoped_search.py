"""Search within part of a store: some documents or one directory's subtree (`index/scope.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.app.service import QueryService
from memory_bank.config import AppConfig, RetrievalConfig
from memory_bank.errors import StoreError, ToolError
from memory_bank.index.scope import ResolvedScope, SearchScope
from memory_bank.store import StoreReader
from memory_bank.store.sources import resolve_documents
from tests.support import open_search
from tests.unit.query_fixtures import shared_embedder

MODES = ("bm25", "vector", "hybrid", "tree")
# "attention" is the transformers' word; scoped elsewhere, the search must still stay there.
QUERY = "How does self-attention weigh the tokens of a sequence?"


@pytest.fixture(scope="module")
def searcher(ml_tech_store):
    return open_search(StoreReader(ml_tech_store), shared_embedder(), RetrievalConfig())


def chunk_paths(hits) -> list[str]:
    return [hit.chunk_path for hit in hits if hit.kind == "chunk"]


@pytest.mark.parametrize("mode", MODES)
def test_a_directory_scope_keeps_every_hit_below_the_directory(searcher, mode):
    unscoped = searcher.search(QUERY, top_k=4, mode=mode)
    assert any(path.startswith("ml/transformers/") for path in chunk_paths(unscoped))
    hits = searcher.search(QUERY, top_k=4, mode=mode, scope=SearchScope(directory="/ml/sequence"))
    assert hits and all(path.startswith("ml/sequence/") for path in chunk_paths(hits))
    assert all(hit.chunk_path.startswith("ml/sequence/") for hit in hits if hit.kind == "readme")


@pytest.mark.parametrize("mode", MODES)
def test_a_document_scope_returns_only_that_documents_memories(searcher, mode):
    source = "docs/ml/sequence/lstm_gates.md"
    query = "attention over many steps"  # "steps" is the one word the LSTM note shares
    scope = SearchScope(documents=(source,))
    hits = searcher.search(query, top_k=4, mode=mode, scope=scope)
    assert {hit.source for hit in hits if hit.kind == "chunk"} == {source}


def test_a_folder_of_sources_names_every_document_below_it(searcher):
    scope = SearchScope(documents=("docs/programming",))
    hits = searcher.search("hooks and threads", top_k=10, mode="hybrid", scope=scope)
    assert {path.split("/")[1] for path in chunk_paths(hits)} == {"python", "react"}


def test_both_parts_of_a_scope_must_hold(searcher):
    scope = SearchScope(documents=("docs/programming",), directory="/programming/react")
    hits = searcher.search("hooks and threads", top_k=10, mode="hybrid", scope=scope)
    assert hits and all(path.startswith("programming/react/") for path in chunk_paths(hits))


def test_the_whole_store_scope_is_an_unscoped_search(searcher):
    for scope in (SearchScope(), SearchScope(directory="/")):
        assert searcher.search(QUERY, top_k=5, mode="tree", scope=scope) == searcher.search(
            QUERY, top_k=5, mode="tree"
        )


def test_a_scope_naming_nothing_stored_is_a_tool_error(searcher):
    with pytest.raises(ToolError, match="no directory"):
        searcher.search(QUERY, scope=SearchScope(directory="/no/such"))
    with pytest.raises(ToolError, match="not in the store: docs/nothing.md"):
        searcher.search(QUERY, scope=SearchScope(documents=("docs/nothing.md",)))


def test_tree_mode_in_scope_offers_the_readme_of_the_scoped_subtree(searcher):
    scope = SearchScope(documents=("docs/ml/vision",))
    hits = searcher.search("neural networks for images", top_k=5, mode="tree", scope=scope)
    readmes = [hit.chunk_path for hit in hits if hit.kind == "readme"]
    assert readmes == ["ml/vision/README.md"]
    assert all(path.startswith("ml/vision/") for path in chunk_paths(hits))


def test_a_readme_belongs_to_a_scope_holding_most_of_its_subtree():
    class Directories:  # three directories of 2, 4 and 3 memories
        subtree_chunks = [[0, 1], [0, 1, 2, 3], [4, 5, 6]]

    in_scope = np.array([True, True, True, False, True, False, False])
    # all of the first, 3 of 4 of the second, 1 of 3 of the third
    assert ResolvedScope(in_scope).readmes(Directories()).tolist() == [True, True, False]
    half = np.array([True, True, False, False, False, False, False])
    assert ResolvedScope(half).readmes(Directories()).tolist() == [True, False, False]


def test_the_scopes_overview_is_the_readme_holding_most_of_it():
    class Directories:  # a folder of two subfolders, and a folder elsewhere
        subtree_chunks = [[0, 1, 2, 3], [0, 1], [2, 3], [4, 5]]

    whole_folder = np.array([True, True, True, True, False, False])
    assert ResolvedScope(whole_folder).overview(Directories()) == 0
    one_subfolder = np.array([True, True, False, False, False, False])
    # The folder holds it too (2 of 4 is not most of it); the subfolder is the overview.
    assert ResolvedScope(one_subfolder).overview(Directories()) == 1
    # Half of a subfolder: no README speaks for it.
    assert ResolvedScope(np.array([True] + [False] * 5)).overview(Directories()) is None


def test_a_request_for_a_summary_gets_the_scopes_whole_overview_first(searcher):
    scope = SearchScope(documents=("docs/ml/vision",))
    hits = searcher.search("Summarize the notes", top_k=5, mode="tree", scope=scope)
    assert hits[0].kind == "readme" and hits[0].chunk_path == "ml/vision/README.md"
    readme = (searcher.corpus.reader.root / "ml/vision/README.md").read_text()
    summary = readme.split("\n\n")[1]
    assert summary in hits[0].text  # the whole summary, though it never says "notes"
    assert all(path.startswith("ml/vision/") for path in chunk_paths(hits))
    # Without the request, a summary sentence must name a word of the question to be offered.
    plain = searcher.search("the notes", top_k=5, mode="tree", scope=scope)
    assert [hit.kind for hit in plain] == ["chunk"] * len(plain)


def test_documents_are_named_by_source_folder_or_id(tmp_path):
    (tmp_path / "notes").mkdir()
    source_of = {
        "id-a": str(tmp_path / "notes" / "a.md"),
        "id-b": str(tmp_path / "notes" / "b.md"),
        "id-c": str(tmp_path / "c.md"),
    }
    assert resolve_documents(source_of, [str(tmp_path / "notes")]) == ["id-a", "id-b"]
    assert resolve_documents(source_of, ["id-c", str(tmp_path / "notes" / "b.md")]) == [
        "id-c",
        "id-b",
    ]
    with pytest.raises(StoreError, match="not in the store: elsewhere"):
        resolve_documents(source_of, ["id-a", "elsewhere"])


def test_the_query_service_searches_within_a_scope_in_every_mode(ml_tech_store):
    service = QueryService(ml_tech_store, AppConfig(), embedder=shared_embedder())
    scope = SearchScope(documents=("docs/programming/react",))
    for mode in MODES:
        hits = service.search("state of a component", top_k=3, mode=mode, scope=scope)
        assert hits and all(path.startswith("programming/react/") for path in chunk_paths(hits))
