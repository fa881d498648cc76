"""Title links: which documents a text names, the multi-hop expansion, and both in search and ask."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.config import RetrievalConfig
from memory_bank.index.links import (
    MAX_LINKS_PER_SEED,
    LinkGraph,
    TitleIndex,
    first_line_heading,
    follow_links,
    title_aliases,
)
from memory_bank.query.navigation import NavigationAgent
from memory_bank.query.tools import StoreTools
from memory_bank.store import StoreReader
from tests.support import open_search
from tests.unit.query_fixtures import Note, build_store, shared_embedder

# A small wiki: the question "who directed the film shot in Leland in 1986?" matches the Leland
# page, which names the film, whose own page (sharing no word with the question but "film" and
# "1986") names the director.
WIKI_STORE: dict[str, tuple[str, list[Note]]] = {
    "/places": (
        "Towns and cities of North Carolina.",
        [
            Note(
                "leland_north_carolina",
                ("leland", "brunswick county"),
                "Leland is a town in Brunswick County, North Carolina, on the Cape Fear River. The "
                "horror film Maximum Overdrive was shot in and around Leland in 1986.",
            ),
            Note(
                "wilmington_north_carolina",
                ("wilmington", "port", "film studios"),
                "Wilmington is a port city in North Carolina. Many films and television series were "
                "shot at its studios since 1984, and the city calls itself a film town.",
            ),
            Note(
                "southport_north_carolina",
                ("southport", "fishing"),
                "Southport is a small fishing town in Brunswick County, North Carolina, where several "
                "films were shot in the 1980s and 1990s.",
            ),
        ],
    ),
    "/films": (
        "Films and their directors.",
        [
            Note(
                "maximum_overdrive",
                ("horror", "machines", "1986"),
                "Maximum Overdrive is a 1986 American horror film written and directed by Stephen "
                "King. Machines come to life after a comet passes the Earth.",
            ),
            Note(
                "the_shining_film",
                ("horror", "kubrick"),
                "The Shining is a 1980 horror film directed by Stanley Kubrick and shot in England "
                "and Oregon.",
            ),
            Note(
                "cape_fear_1991_film",
                ("thriller", "scorsese"),
                "Cape Fear is a 1991 thriller film directed by Martin Scorsese and shot in Florida.",
            ),
            Note(
                "blue_velvet",
                ("mystery", "lynch"),
                "Blue Velvet is a 1986 mystery film directed by David Lynch and shot in Wilmington.",
            ),
        ],
    ),
}
BRIDGE_QUESTION = "Who directed the film that was shot in Leland in 1986?"


# --- names and titles ---------------------------------------------------------------------------


def test_aliases_are_the_title_and_a_first_line_heading_without_disambiguation():
    assert title_aliases("lilu-mythology", "Lilu (mythology)\n\nIn Mesopotamian religion ...") == {
        "lilu-mythology",
        "Lilu (mythology)",
        "Lilu",
    }
    assert title_aliases("Turns 0000 0029", "Grad E: I guess .\n\nGrad A: OK") == {
        "Turns 0000 0029"
    }
    assert title_aliases("Meeting", "Alice\n\nBob", conversation=True) == {"Meeting"}


def test_a_first_line_is_a_heading_only_when_it_reads_like_one():
    assert (
        first_line_heading("# Young, New South Wales\n\nYoung is a town.")
        == "Young, New South Wales"
    )
    assert first_line_heading("Young is a town.\n\nIt lies ...") is None  # a sentence
    assert first_line_heading("Short line\nfollowed directly by text") is None  # no blank line
    assert first_line_heading("Professor C: Right , minor problem\n\nPhD A: yes") is None  # a turn
    assert first_line_heading(" ".join(["word"] * 13) + "\n\nbody") is None  # too long


def test_a_text_names_a_title_only_as_a_whole_capitalized_name():
    index = TitleIndex(
        {
            "young": {"Young, New South Wales"},
            "united": {"United"},
            "dandy": {"The Dandy Warhols"},
            "year": {"1999"},
        }
    )
    assert len(index) == 3  # a bare number is no title
    assert index.named_in("She was born in Young, New South Wales in 1970.") == {"young"}
    assert index.named_in("a young man from new south wales") == set()  # not capitalized
    assert (
        index.named_in("The tour crossed the United States twice.") == set()
    )  # part of a longer name
    assert index.named_in("United is a 2003 album. The Dandy Warhols played it.") == {
        "united",
        "dandy",
    }
    assert index.named_in("It sold well in 1999.") == set()


def test_a_title_shared_by_too_many_documents_is_no_link():
    index = TitleIndex(
        {f"section-{n}": {"Introduction"} for n in range(4)} | {"rare": {"Introduction Of Rust"}}
    )
    assert index.named_in("See the Introduction.") == set()
    assert index.named_in("See the Introduction Of Rust.") == {"rare"}


# --- the expansion ------------------------------------------------------------------------------


def _graph(chunk_documents: list[str], texts: list[str], titles: dict[str, set[str]]) -> LinkGraph:
    return LinkGraph(TitleIndex(titles), chunk_documents, texts.__getitem__)


def test_a_named_document_scores_the_mean_of_its_referrer_and_its_own_score():
    graph = _graph(
        ["a", "b", "c", "d"],
        ["Alpha names Delta Force here.", "beta text", "gamma text", "Delta Force text"],
        {"a": {"Alpha"}, "d": {"Delta Force"}},
    )
    own = np.array([0.9, 0.5, 0.45, 0.3], dtype=np.float32)
    ranked = [(0, 0.9), (1, 0.5), (2, 0.45)]
    expanded = follow_links(
        ranked, "what is this about?", graph, lambda indices: own[np.asarray(indices)]
    )
    assert expanded == [(0, 0.9), (3, pytest.approx(0.6)), (1, 0.5), (2, 0.45)]
    # A document the question names is lent the question's score, 1.
    named = follow_links(
        ranked, "What did Delta Force do?", graph, lambda indices: own[np.asarray(indices)]
    )
    assert named == [(0, 0.9), (3, pytest.approx(0.65)), (1, 0.5), (2, 0.45)]
    # Nothing named: the ranking is unchanged.
    assert (
        follow_links(ranked[1:], "what?", graph, lambda indices: own[np.asarray(indices)])
        == ranked[1:]
    )


def test_a_hit_lends_its_score_only_to_the_named_documents_closest_to_the_query():
    names = [f"Name{n} Page" for n in range(MAX_LINKS_PER_SEED + 2)]
    documents = ["seed"] + [f"doc{n}" for n in range(len(names))]
    texts = [" and ".join(names) + "."] + [f"{name} text" for name in names]
    graph = _graph(documents, texts, {f"doc{n}": {name} for n, name in enumerate(names)})
    own = np.array([0.9] + [0.1 * (n + 1) for n in range(len(names))], dtype=np.float32)
    expanded = dict(
        follow_links([(0, 0.9)], "query", graph, lambda indices: own[np.asarray(indices)])
    )
    lifted = sorted(index for index in expanded if index != 0)
    assert lifted == list(range(len(names) - MAX_LINKS_PER_SEED + 1, len(names) + 1))


# --- on a real store ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wiki(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("links") / "wiki", WIKI_STORE, shared_embedder())


@pytest.fixture(scope="module")
def retriever(wiki):
    return open_search(StoreReader(wiki), shared_embedder(), RetrievalConfig())


def test_hybrid_search_follows_a_title_link_to_the_second_hop(retriever):
    query_vector = retriever.hybrid.encode_query(BRIDGE_QUESTION)
    plain = [
        retriever.corpus.chunk_path(i)
        for i, _ in retriever.hybrid.hybrid_candidates(BRIDGE_QUESTION, query_vector, links=False)
    ]
    assert plain[0] == "places/leland_north_carolina.md"
    assert plain.index("films/maximum_overdrive.md") >= 2
    hits = retriever.search(BRIDGE_QUESTION, top_k=2, mode="hybrid")
    assert [hit.chunk_path for hit in hits] == [
        "places/leland_north_carolina.md",
        "films/maximum_overdrive.md",
    ]
    assert "directed by Stephen King" in hits[1].text


def test_the_agent_answers_from_the_linked_document_and_cites_both(wiki, retriever):
    agent = NavigationAgent(StoreTools(wiki, retriever.corpus.reader, retriever), retriever.hybrid)
    result = agent.request(BRIDGE_QUESTION)
    assert "Stephen King" in result.answer
    assert result.sources[:2] == ["places/leland_north_carolina.md", "films/maximum_overdrive.md"]
    assert result.confidence > 0.5
