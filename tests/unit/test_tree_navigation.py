"""Directory summaries (central and diverse memories), the README-only descent, and the tree
measures of the benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.evaluation.tree_metrics import leaf_of, nmi, purity, top_level_of
from memory_bank.index.corpus import DirectoryIndex
from memory_bank.index.descent import descend
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.summary import (
    LEAF_SENTENCES,
    choose_central,
    subtree_highlights,
    subtree_mean_vectors,
)


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_central_memories_come_first_and_repeats_are_passed_over():
    vectors = np.stack(
        [_unit(1, 0.1, 0), _unit(1, 0.1, 0), _unit(1, 0, 0.05), _unit(0.2, 1, 0), _unit(1, 0, 0)]
    )
    chosen = choose_central(vectors, 3)
    assert chosen[0] in (0, 1, 2, 4)
    assert 3 in chosen  # the odd one out is the diverse pick
    assert not {0, 1} <= set(chosen)  # two identical memories are never both chosen
    assert choose_central(vectors[:0], 3) == [] and sorted(choose_central(vectors, 9))[-1] == 3


TREE = DirectoryNode(
    path="/",
    name="",
    children=[
        DirectoryNode(
            path="/a",
            name="a",
            children=[
                DirectoryNode(path="/a/x", name="x", chunk_indices=[0, 1, 2, 3]),
                DirectoryNode(path="/a/y", name="y", chunk_indices=[4, 5]),
            ],
        ),
        DirectoryNode(path="/b", name="b", chunk_indices=[6, 7, 8]),
    ],
)


def test_parents_summarize_with_their_childrens_choices_largest_child_first():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((9, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    highlights = subtree_highlights(TREE, vectors, {i: i for i in range(9)})
    assert len(highlights["/a/x"]) == LEAF_SENTENCES and set(highlights["/a/x"]) <= {0, 1, 2, 3}
    assert set(highlights["/a"]) <= set(highlights["/a/x"]) | set(highlights["/a/y"])
    assert {4, 5} & set(highlights["/a"])  # the smaller child is heard too
    assert highlights["/a"] == sorted(highlights["/a"])  # reading order
    assert set(highlights["/"]) <= set(range(9)) and len(highlights["/"]) == 5


def test_a_directory_vector_is_the_mean_direction_of_every_memory_below_it():
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((10, 8)).astype(np.float32)
    row_of = {i: 9 - i for i in range(9)}  # memory i is row 9 - i; row 0 belongs to no memory
    tree = TREE.model_copy(
        update={"children": [*TREE.children, DirectoryNode(path="/empty", name="empty")]}
    )
    found = subtree_mean_vectors(tree, vectors, row_of)
    for path, members in {"/a/y": [4, 5], "/a": range(6), "/": range(9), "/b": [6, 7, 8]}.items():
        mean = vectors[[row_of[i] for i in members]].astype(np.float64).sum(axis=0)
        np.testing.assert_allclose(found[path], mean / np.linalg.norm(mean), rtol=1e-5)
    assert not found["/empty"].any()  # no memory, no direction
    assert all(vector.dtype == np.float32 for vector in found.values())


def test_descent_follows_the_best_readme_down_to_the_leaves():
    paths = ["/a", "/a/x", "/a/y", "/b"]
    vectors = np.stack([_unit(1, 1, 0), _unit(1, 0, 0), _unit(0, 1, 0), _unit(0, 0, 1)])
    terms = [frozenset({"alpha"}), frozenset({"alpha", "xylophone"}), frozenset(), frozenset()]
    directories = DirectoryIndex(paths, vectors, [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3], [4, 5]], terms)
    directories.subtree_chunks.append([6, 7, 8])
    query = _unit(0.9, 0.1, 0.2)
    assert [leaf.path for leaf in descend(TREE, directories, "alpha", query, 0.5, 1)] == ["/a/x"]
    reached = [leaf.path for leaf in descend(TREE, directories, "alpha", query, 0.5, 3)]
    assert reached[0] == "/a/x" and set(reached) == {"/a/x", "/a/y", "/b"}
    with pytest.raises(ValueError):
        descend(TREE, directories, "alpha", query, 0.5, 0)


def test_purity_nmi_and_leaf_purity():
    top = top_level_of(TREE)
    assert top == {0: "a", 1: "a", 2: "a", 3: "a", 4: "a", 5: "a", 6: "b", 7: "b", 8: "b"}
    labels = {i: "one" if i < 5 else "two" for i in range(9)}
    assert purity(top, labels) == pytest.approx(8 / 9)
    assert purity(leaf_of(TREE), labels) == pytest.approx(8 / 9)
    assert nmi(top, {i: "p" if i < 6 else "q" for i in range(9)}) == pytest.approx(1.0)
    only_some = {6: "s", 7: "s", 0: "t"}
    assert purity(leaf_of(TREE), only_some) == 1.0


def test_readme_quotes_are_evidence_but_no_ranked_passage(tmp_path):
    from memory_bank.evaluation.metrics import Passage, cut_to_budget, whitespace_token_count
    from memory_bank.evaluation.store_index import StoreIndex

    index = StoreIndex.__new__(StoreIndex)  # only what readme_passages reads
    index.source_of_document = {"d1": "one.txt", "d2": "two.txt"}
    index._tldrs = ["The king lost his crown.", "The queen found it again."]
    index._documents = ["d1", "d2"]
    index._subtree = {"/tales": [0, 1]}
    text = "# Tales\n\nThe king lost his crown. The queen found it again."
    passages = index.readme_passages("/tales", text)
    assert passages == [
        Passage(None, "# Tales"),
        Passage("one.txt", "The king lost his crown.", quoted=True),
        Passage("two.txt", "The queen found it again.", quoted=True),
    ]
    assert index.readme_passages("/other", text) == [Passage(None, " ".join(text.split()))]
    kept = cut_to_budget(passages, 4, whitespace_token_count)
    assert kept[-1] == Passage("one.txt", "The king", quoted=True)


def test_key_terms_rank_the_subtrees_telling_keywords_and_skip_dates():
    from memory_bank.taxonomy.summary import subtree_key_terms

    keywords = {
        0: ["Mars", "year", "dust storms"],
        1: ["mars", "april 2025", "co2"],
        2: ["mars", "olympus mons"],
        3: ["jazz"],
        4: ["jazz", "mars"],
        5: ["bebop"],
    }
    terms = subtree_key_terms(TREE, keywords)
    assert "mars" in terms["/a/x"] and "year" not in terms["/a/x"]
    # /a/y has "mars" too: what only /a/x has tells it apart first.
    assert terms["/a/x"].index("co2") < terms["/a/x"].index("mars")
    assert "april 2025" not in terms["/"]
    assert terms["/a/y"] == ["bebop", "jazz", "mars"]  # one memory each: the rarest first
    assert terms["/b"] == []


def test_key_terms_say_what_sets_a_directory_apart_from_its_siblings():
    from memory_bank.taxonomy.summary import subtree_key_terms

    # /a is one story: its sections share the hero (rare in the whole tree, 3 memories each);
    # the ogre is in one memory of /a/x only. Among the siblings the ogre tells /a/x apart.
    keywords = {
        0: ["hero", "ogre"],
        1: ["hero"],
        2: ["hero"],
        3: ["hero"],
        4: ["hero"],
        5: ["hero"],
        6: ["bridge"],
        7: ["bridge"],
        8: ["bridge"],
    }
    terms = subtree_key_terms(TREE, keywords)
    assert terms["/a/x"] == ["ogre", "hero"]
    assert terms["/a"][0] == "hero"  # against the whole tree, the hero tells /a from /b


def test_a_larger_subtree_lists_more_key_terms():
    from memory_bank.taxonomy.summary import KEY_TERMS_PER_MEMORY, MIN_KEY_TERMS, subtree_key_terms

    # Every memory has five keywords of its own: /a (6 memories) lists 3 per memory, the
    # leaves at least the minimum.
    keywords = {index: [f"term{index}x{k}" for k in range(5)] for index in range(9)}
    terms = subtree_key_terms(TREE, keywords)
    assert len(terms["/a"]) == KEY_TERMS_PER_MEMORY * 6
    assert len(terms["/a/y"]) == min(MIN_KEY_TERMS, 10)  # /a/y has only 10 terms in all
    assert len(terms["/a/x"]) == max(MIN_KEY_TERMS, KEY_TERMS_PER_MEMORY * 4)


def test_a_term_every_sibling_has_weighs_less_than_one_only_one_has():
    from memory_bank.index.descent import sibling_term_scores

    readmes = [
        frozenset({"king", "princess"}),
        frozenset({"king", "princess", "dragon"}),
        frozenset({"king", "castle"}),
    ]
    none_counted = [{}, {}, {}]  # every README term held by one memory
    scores = sibling_term_scores(
        readmes, none_counted, [4, 4, 4], frozenset({"king", "princess", "castle"})
    )
    # Plain shares would tie the first two with the third (2 of 3 terms each); "castle", which
    # one sibling has, outweighs "princess", which two have.
    assert scores[2] > scores[0] == scores[1]
    empty = sibling_term_scores(readmes, none_counted, [4, 4, 4], frozenset())
    assert empty.tolist() == [0.0, 0.0, 0.0]
    # One memory of a sibling of average size holding every term: 1, as the share of terms.
    only_king = sibling_term_scores(readmes, none_counted, [4, 4, 4], frozenset({"king"}))
    assert only_king == pytest.approx([1.0, 1.0, 1.0])


def test_a_term_many_memories_hold_outweighs_one_a_single_memory_holds():
    from memory_bank.index.descent import BM25_K1, sibling_term_scores

    readmes = [frozenset({"troll", "bridge"}), frozenset({"troll", "goat"})]
    terms = frozenset({"troll", "bridge", "goat"})
    # Same size: the goats' section, whose four memories all name the goat, beats the one
    # naming the bridge once; counts saturate (at most k1 + 1 times one holder).
    scores = sibling_term_scores(readmes, [{"bridge": 1}, {"goat": 4}], [4, 4], terms)
    assert scores[1] > scores[0]
    many = sibling_term_scores(readmes, [{}, {"troll": 10**6}], [4, 4], frozenset({"troll"}))
    assert many[0] == pytest.approx(1.0) and 1.0 < many[1] < BM25_K1 + 1.0


def test_a_large_mixed_directory_does_not_win_by_its_vocabulary():
    from memory_bank.index.descent import sibling_term_scores

    # The mixed directory's README holds both terms, as the focused one does, but one memory
    # among 30 holds each: the focused directory of 3 memories wins.
    readmes = [frozenset({"cbs", "hallmark", "bill", "real"}), frozenset({"cbs", "hallmark"})]
    holders = [{"cbs": 1, "hallmark": 1}, {"cbs": 1, "hallmark": 1}]
    scores = sibling_term_scores(readmes, holders, [30, 3], frozenset({"cbs", "hallmark"}))
    assert scores[1] > scores[0]


def test_term_holders_count_a_subtrees_memories_for_its_readme_terms_only():
    from memory_bank.index.corpus import _term_holders

    words = [frozenset({"troll"})] * 4 + [frozenset({"troll", "goat"})] * 2
    words += [frozenset({"dragon"})] * 3
    readme_terms = {
        "/a": frozenset({"troll", "goat", "heading"}),
        "/a/x": frozenset({"troll"}),
        "/a/y": frozenset({"goat"}),
        "/b": frozenset({"dragon", "troll"}),
    }
    holders = _term_holders(TREE, words, readme_terms)
    assert holders == {
        "/a": {"troll": 6, "goat": 2},  # "heading": no memory has it (the descent counts one)
        "/a/x": {"troll": 4},
        "/a/y": {"goat": 2},  # "troll" is not in /a/y's README
        "/b": {"dragon": 3},
    }


def test_key_terms_stay_a_short_line_however_large_the_subtree():
    from memory_bank.taxonomy.summary import MAX_KEY_TERMS, subtree_key_terms

    keywords = {index: [f"term{index}x{k}" for k in range(30)] for index in range(9)}
    terms = subtree_key_terms(TREE, keywords)
    assert len(terms["/"]) == MAX_KEY_TERMS == 20


def test_index_terms_are_the_memories_words_what_only_one_sibling_has_first():
    from memory_bank.taxonomy.summary import INDEX_TERMS_PER_MEMORY, subtree_index_terms

    # /a/x and /a/y are sections of one story: both name the king; the ogre and the farmer's
    # anger are in /a/x only, and the index (unlike the key phrases) keeps every such word.
    texts = {
        0: "The king met an ogre.",
        1: "The farmer was angry with the king.",
        2: "The king slept.",
        3: "The king woke.",
        4: "The king rode a horse.",
        5: "The king sang.",
        6: "A bridge over the river.",
        7: "The bridge fell.",
        8: "A new bridge.",
    }
    index = subtree_index_terms(TREE, texts)
    assert {"ogre", "farmer", "angry"} <= set(index["/a/x"])
    assert index["/a/x"].index("ogre") < index["/a/x"].index("king")
    assert index["/a/y"] == ["horse", "rode", "sang", "king"]  # the king last: /a/x has him too
    assert "the" not in index["/a/x"]  # function words are not search terms
    assert "/" not in index  # the root has no siblings to be told apart from
    many = {index: " ".join(f"w{index}x{k}" for k in range(50)) for index in range(9)}
    assert len(subtree_index_terms(TREE, many)["/a/x"]) == INDEX_TERMS_PER_MEMORY * 4
    # A commit ranks only its stale directories, each still against its whole parent.
    assert subtree_index_terms(TREE, texts, only={"/a/x", "/b"}) == {
        path: terms for path, terms in index.items() if path in {"/a/x", "/b"}
    }
