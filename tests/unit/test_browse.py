"""The browsing views over a real ingested store (tests/browse_store.py): a directory with its
README and sizes, a memory with its file, source, neighbours and the history of its claims, the
store at a glance and a conversation, each a bounded piece of the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_bank.browse import StoreCatalog, directory_page, memory_page
from memory_bank.browse.catalog import readme_parts
from memory_bank.browse.memory import claim_timelines
from memory_bank.browse.service import StoreBrowser
from memory_bank.errors import ToolError
from memory_bank.graph.graph import QueryGraph
from memory_bank.graph.model import Conflict, GraphNode
from memory_bank.graph.persist import GraphState
from memory_bank.schemas import DirectoryNode
from memory_bank.store.files import parse_chunk_file
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy.readme import compose_readme
from tests.browse_store import CONVERSATION_ID, DOCUMENTS, TURNS


@pytest.fixture(scope="module")
def bank(browse_bank):
    return browse_bank


@pytest.fixture(scope="module")
def browser(bank) -> StoreBrowser:
    return StoreBrowser(bank.store)


def _chunk_id(bank, source_name: str) -> str:
    table = StoreReader(bank.store).rows("memories", ["chunk_id", "source"])
    return next(r["chunk_id"] for r in table.to_pylist() if Path(r["source"]).name == source_name)


def test_the_root_lists_every_directory_with_its_size_and_the_readme_summary(browser, bank):
    page = browser.directory("/")

    assert page.path == "/" and [crumb.path for crumb in page.breadcrumb] == ["/"]
    assert page.memories == len(DOCUMENTS) + 1  # every document is one chunk, plus the update
    assert sum(entry.memories for entry in page.directories) == page.memories
    assert [entry.path for entry in page.directories] == [c.path for c in bank.tree().children]
    readme = (bank.store / "README.md").read_text(encoding="utf-8")
    assert page.title and readme.startswith(f"# {page.title}\n")
    assert page.summary and page.summary in readme and "## " not in page.summary
    assert page.key_terms and all(term in readme for term in page.key_terms)


def test_a_directory_pages_its_memories_by_file_name(browser):
    root = browser.directory("/")
    leaf = max(root.directories, key=lambda entry: entry.memories)

    whole = browser.directory(leaf.path)
    first = browser.directory(leaf.path.lstrip("/") + "/", offset=0, limit=2)
    rest = browser.directory(leaf.path, offset=2, limit=100)

    assert whole.files_total == leaf.memories == len(whole.files) > 2
    assert [f.path for f in whole.files] == sorted(f.path for f in whole.files)
    assert first.path == leaf.path and len(first.files) == 2
    assert [f.chunk_id for f in first.files + rest.files] == [f.chunk_id for f in whole.files]
    assert [crumb.path for crumb in whole.breadcrumb] == ["/", leaf.path]
    assert all(f.path.startswith(leaf.path.lstrip("/") + "/") for f in whole.files)


def test_an_unknown_directory_is_none(browser):
    assert browser.directory("/no_such_directory") is None


def test_a_memory_shows_its_file_its_source_and_the_raw_chunk(browser, bank):
    chunk_id = _chunk_id(bank, "espresso.md")

    page = browser.memory(chunk_id)

    frontmatter, text = parse_chunk_file((bank.store / page.path).read_text(encoding="utf-8"))
    assert page.frontmatter == frontmatter and page.text == text
    assert page.frontmatter["chunk_id"] == chunk_id
    assert page.document is not None and Path(page.document.source).name == "espresso.md"
    assert page.document.title == "Espresso"
    assert "nine bars of pressure" in page.raw_text and page.position == 0
    assert page.breadcrumb[-1].path == page.directory
    assert browser.memory(page.path) == page  # by its file path too
    assert page.recorded_at is not None and page.status == "current"


def test_a_memory_lists_the_memories_the_graph_relates_to_it(browser, bank):
    page = browser.memory(_chunk_id(bank, "moon.md"))

    [neighbour] = page.neighbours
    assert neighbour.id == _chunk_id(bank, "apollo.md")
    assert neighbour.relation == "related" and neighbour.status == "current"
    assert neighbour.path.endswith(".md") and neighbour.title


def test_a_superseded_claim_shows_its_timeline_from_either_memory(browser, bank):
    old_id, new_id = _chunk_id(bank, "acme.md"), _chunk_id(bank, "acme_update.md")

    for page in (browser.memory(old_id), browser.memory(new_id)):
        [timeline] = page.timelines
        assert (timeline.subject.lower(), timeline.attribute.lower()) == ("acme", "ceo")
        assert not timeline.open
        old, new = timeline.values
        assert (old.value, old.state, old.node_id) == ("Alice Moreno", "superseded", old_id)
        assert (new.value, new.state, new.node_id) == ("Bob Tanaka", "current", new_id)
        assert old.superseded_by == new_id and old.recorded_at <= old.superseded_at
        assert old.sentence == "The CEO of Acme is Alice Moreno."
        assert Path(old.source).name == "acme.md" and Path(new.source).name == "acme_update.md"
        assert old.path.endswith(".md") and new.path.endswith(".md")


def test_an_unknown_memory_is_none(browser):
    assert browser.memory("0000000000000000-00000") is None
    assert browser.memory("memory:s-nothing") is None


def test_the_status_counts_versions_and_conflicts(browser, bank):
    status = browser.status()

    assert status.documents == status.chunks == len(DOCUMENTS) + 1
    assert status.directories == len(list(bank.tree().iter_nodes())) - 1
    live, first = status.versions
    assert live.live and not first.live and live.number == first.number + 1
    assert (first.documents, live.documents) == (len(DOCUMENTS), len(DOCUMENTS) + 1)
    assert live.store_version == status.store_version == StoreReader(bank.store).store_version
    assert (status.conflicts_resolved, status.conflicts_open, status.open_conflicts) == (1, 0, [])
    assert status.graph_edges == {"related": 1} and status.graph_nodes == status.chunks


def test_a_conversation_shows_its_working_turns_and_summary(browser):
    [listed] = browser.conversations()
    page = browser.conversation(CONVERSATION_ID)
    latest = browser.conversation(CONVERSATION_ID, limit=2)

    assert (listed.conversation_id, listed.turns) == (CONVERSATION_ID, len(TURNS))
    assert [(turn.speaker, turn.text) for turn in page.working] == TURNS
    assert page.working_total == page.turns == len(TURNS) and page.episodic_turns == 0
    assert page.summary == ""
    assert [turn.turn_id for turn in latest.working] == [1, 2]
    assert browser.conversation("no-such-talk") is None
    with pytest.raises(ToolError):
        browser.conversation("../escape")


def test_a_commit_is_picked_up_by_the_next_call(tmp_path, embedder):
    from memory_bank.app.bank import MemoryBank

    for name, text in (
        ("mars.md", DOCUMENTS["mars.md"]),
        ("saturn.md", "# Saturn\n\nIce rings.\n"),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    bank = MemoryBank(tmp_path / "store", embedder=embedder)
    bank.add(files=[tmp_path / "mars.md"])
    browser = StoreBrowser(bank.store)
    assert browser.directory("/").memories == 1
    bank.add(files=[tmp_path / "saturn.md"])

    assert browser.directory("/").memories == 2
    assert [version.live for version in browser.status().versions] == [True, False]


# --- pieces, without a store -----------------------------------------------------------------


def test_readme_parts_reads_what_compose_readme_wrote():
    from memory_bank.taxonomy.readme import ReadmeHighlight, SubtreeSummary

    node = DirectoryNode(path="/coffee", name="coffee", description="Coffee notes.")
    text = compose_readme(
        node,
        [],
        [],
        subtree=SubtreeSummary(
            highlights=(ReadmeHighlight("Espresso takes 25 seconds.", "a.md"),),
            key_terms=("espresso", "crema"),
        ),
    )

    title, summary, terms = readme_parts(text)

    assert title == "Coffee"
    assert summary.startswith("Espresso takes 25 seconds.")
    assert terms == ["espresso", "crema"]
    assert readme_parts("") == ("", "", [])


class _NoMemories:
    """A catalog that knows no stored memory: the timeline names nodes by the graph alone; its
    reader sees every node but those `hidden`."""

    def __init__(self, hidden: frozenset[str] = frozenset()) -> None:
        self.hidden = hidden

    def memory(self, ref):
        return None

    def sees_conflict(self, older: str, newer: str) -> bool:
        return older not in self.hidden and newer not in self.hidden


def _node(node_id: str, at: float) -> GraphNode:
    vector = np.zeros(384, dtype=np.float32)
    return GraphNode(node_id, "memory", f"summary {node_id}", "", [], at, vector, vector)


def _conflict(cid, older, newer, old, new, at, current=None) -> Conflict:
    return Conflict(
        id=cid, older=older, newer=newer, description="", subject="Acme", attribute="CEO",
        old_value=old, new_value=new, old_sentence=f"CEO {old}", new_sentence=f"CEO {new}",
        detected_at=at, status="resolved" if current else "open", current=current,
        resolved_at=at if current else None,
    )  # fmt: skip


def _chain_of_replacements() -> GraphState:
    """Alice replaced by Bob, replaced by Carol, whom Dan disputes (an open conflict)."""
    graph = QueryGraph()
    for node_id, at in (("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)):
        graph.add_node(_node(node_id, at))
    for conflict in (
        _conflict("ab", "a", "b", "Alice", "Bob", 2.0, current="b"),
        _conflict("bc", "b", "c", "Bob", "Carol", 3.0, current="c"),
        _conflict("cd", "c", "d", "Carol", "Dan", 4.0),
    ):
        graph.add_conflict(conflict)
    state = GraphState(graph=graph)
    return state


def test_a_timeline_follows_a_chain_of_replacements_and_marks_an_open_dispute():
    state = _chain_of_replacements()

    [timeline] = claim_timelines(_NoMemories(), state, "a")

    assert [(v.value, v.state) for v in timeline.values] == [
        ("Alice", "superseded"),
        ("Bob", "superseded"),
        ("Carol", "disputed"),
        ("Dan", "disputed"),
    ]
    assert timeline.open
    assert [v.superseded_by for v in timeline.values[:2]] == ["b", "c"]


def test_a_timeline_leaves_out_what_its_reader_cannot_see():
    state = _chain_of_replacements()

    [timeline] = claim_timelines(_NoMemories(frozenset({"d"})), state, "a")

    # d's dispute is not there for this reader: Carol's value stands, as nothing contradicts it.
    assert [(v.value, v.state) for v in timeline.values] == [
        ("Alice", "superseded"),
        ("Bob", "superseded"),
        ("Carol", "current"),
    ]
    assert not timeline.open
    assert claim_timelines(_NoMemories(frozenset({"b"})), state, "a") == []


def test_memory_page_without_a_graph_still_shows_the_file(bank):
    catalog = StoreCatalog(StoreReader(bank.store))
    page = memory_page(catalog, None, _chunk_id(bank, "rust.md"))

    assert page.neighbours == [] and page.timelines == [] and page.recorded_at is None
    assert "borrow checker" in page.text
    assert directory_page(catalog, "/", limit=0).files == []
