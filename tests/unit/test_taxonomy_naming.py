"""Directory names and descriptions: terms and key phrases, their scores, the choice of name terms,
sibling-unique names and descriptions of parents."""

from __future__ import annotations

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.taxonomy import TaxonomyItem, is_valid_name, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.naming import (
    NameChoice,
    choose_name_terms,
    describe_parent,
    name_from_terms,
    name_siblings,
)
from memory_bank.taxonomy.terms import (
    GroupTerms,
    RankedTerm,
    TermMatrix,
    group_spread,
    rank_terms,
)
from memory_bank.text.lexicon import name_words as tokenize
from memory_bank.text.lexicon import plural_key as term_key

CONFIG = TaxonomyConfig()

# (text, title, keywords): four memories on neural networks, four on PostgreSQL.
MEMORIES = [
    (
        "Neural networks learn weights from data. Deep neural networks stack many layers.",
        "neural_networks_layers",
        ["neural networks", "layers"],
    ),
    (
        "Training neural networks uses backpropagation to compute gradients layer by layer.",
        "training_neural_networks",
        ["neural networks", "backpropagation"],
    ),
    (
        "A convolutional neural network slides filters over an image.",
        "convolutional_neural_network",
        ["convolutional neural network", "filters"],
    ),
    (
        "Recurrent neural networks carry a hidden state from one token to the next.",
        "recurrent_neural_networks",
        ["recurrent neural networks", "hidden state"],
    ),
    (
        "Indexes speed up lookups. Every PostgreSQL table can have several indexes.",
        "postgresql_indexes",
        ["postgresql", "indexes"],
    ),
    (
        "The planner of PostgreSQL picks an index scan or a sequential scan.",
        "query_planner",
        ["planner", "postgresql"],
    ),
    (
        "Vacuum reclaims space in PostgreSQL after rows are updated.",
        "vacuum_space",
        ["vacuum", "postgresql"],
    ),
    (
        "Replication copies PostgreSQL data to standby servers.",
        "replication_standby",
        ["replication"],
    ),
]
GROUPS = [np.arange(4), np.arange(4, 8)]


def _matrix(memories: list[tuple[str, str, list[str]]]) -> TermMatrix:
    return TermMatrix.build(
        [text for text, _, _ in memories],
        [title for _, title, _ in memories],
        [keywords for _, _, keywords in memories],
    )


def test_tokenize_keeps_ascii_content_words_and_drops_generic_ones():
    text = "The café runs 2024 PostgreSQL-15 queries on x86 at noon, 東京"
    assert tokenize(text) == ["cafe", "runs", "postgresql", "queries", "x86", "noon"]
    assert tokenize("Every year the small team meets in March for a long time") == ["team", "meets"]


def test_plural_forms_share_a_key():
    assert [term_key(word) for word in ("Networks", "queries", "indexes", "CNNs")] == [
        "network",
        "query",
        "index",
        "cnn",
    ]
    assert [term_key(word) for word in ("class", "status", "analysis", "gas")] == [
        "class",
        "status",
        "analysis",
        "gas",
    ]


def test_keyword_phrases_become_one_term_spelled_as_usually_written():
    matrix = _matrix(MEMORIES)
    assert "neural network" in set(matrix.vocabulary)
    assert matrix.spelling("neural network") == "neural networks"
    assert matrix.spelling("postgresql") == "PostgreSQL"  # written so mid-sentence
    assert matrix.spelling("vacuum") == "vacuum"  # "Vacuum" only opens a sentence
    ranked = rank_terms(GroupTerms.from_rows(matrix, GROUPS))
    assert ranked[0][0].term == "neural network" and ranked[0][0].coverage == 1.0
    assert ranked[1][0].term == "postgresql"
    assert name_from_terms([matrix.spelling(ranked[0][0].term)]) == "neural_networks"


def test_scores_prefer_terms_that_tell_siblings_apart():
    texts = [
        "postgres database rows",
        "postgres database index",
        "redis database cache",
        "redis database keys",
    ]
    matrix = TermMatrix.build(texts, ["" for _ in texts], [[] for _ in texts])
    ranked = rank_terms(GroupTerms.from_rows(matrix, [np.array([0, 1]), np.array([2, 3])]))
    best = [matrix.spelling(terms[0].term) for terms in ranked]
    assert best == ["postgres", "redis"]


def test_title_and_keyword_terms_outrank_words_only_in_the_text():
    matrix = TermMatrix.build(["alpha beta", "alpha beta"], ["", ""], [["beta"], ["beta"]])
    ranked = rank_terms(GroupTerms.from_rows(matrix, [np.array([0, 1])]))[0]
    assert [item.term for item in ranked] == ["beta", "alpha"]  # "alpha" would win a tie


def test_terms_spread_over_most_leaf_groups_are_penalized():
    def ranked(spread: np.ndarray | None) -> list[str]:
        groups = GroupTerms(
            vocabulary=np.array(["common", "topic"], dtype=object),
            item_counts=np.array([[4.0, 4.0]]),
            curated_counts=np.array([[4.0, 4.0]]),
            sizes=np.array([4.0]),
            phrases=np.array([False, False]),
            spread=spread,
        )
        return [item.term for item in rank_terms(groups)[0]]

    assert ranked(None) == ["common", "topic"]
    assert ranked(np.array([1.0, 0.25])) == ["topic", "common"]
    presence = np.array([[1, 0], [1, 0], [1, 1], [1, 0]])
    np.testing.assert_allclose(group_spread(presence), [1.0, 0.25])
    assert group_spread(presence[:3]) is None  # too few groups to call a term widespread


def test_mixed_groups_are_named_after_their_two_largest_themes():
    thin = [RankedTerm("carbon", 0.3, 0.33), RankedTerm("coffee", 0.2, 0.3)]
    themes = [("photosynthesis", 5), ("coffee", 7), ("sourdough", 6)]
    assert choose_name_terms(thin, themes) == ["coffee", "sourdough"]
    # Themes sharing their best term: the next theme makes the second half.
    assert choose_name_terms(thin, [("water", 5), ("water", 4), ("rome", 3)]) == ["water", "rome"]
    umbrella = [RankedTerm("neural network", 0.8, 0.9), RankedTerm("training", 0.5, 0.6)]
    assert choose_name_terms(umbrella, themes) == ["neural network", "training"]
    weak_runner_up = [RankedTerm("jazz", 0.9, 0.9), RankedTerm("band", 0.3, 0.4)]
    assert choose_name_terms(weak_runner_up) == ["jazz"]
    overlapping = [RankedTerm("neural network", 0.8, 0.9), RankedTerm("network", 0.7, 0.9)]
    assert choose_name_terms(overlapping) == ["neural network"]


def test_sibling_names_extend_then_suffix_then_fall_back():
    assert name_siblings(
        [NameChoice(("alpha", "beta"), ("gamma",)), NameChoice(("alpha", "beta"), ("delta",))]
    ) == ["alpha_beta_gamma", "alpha_beta_delta"]
    assert name_siblings([NameChoice(("alpha", "beta")), NameChoice(("alpha", "beta"))]) == [
        "alpha_beta",
        "alpha_beta_2",
    ]
    assert name_siblings([NameChoice(("neural networks", "PostgreSQL")), NameChoice(())]) == [
        "neural_networks_postgresql",
        "topic_2",
    ]
    long_name = name_from_terms(["a" * 30, "b" * 30, "c" * 30])
    assert long_name == "a" * 30 and is_valid_name(long_name)


def test_parent_descriptions_list_subdirectories_largest_first():
    children = [("plants light", 7), ("coffee beans", 6), ("sourdough starter", 8)]
    assert describe_parent(["coffee", "sourdough"], children) == (
        "21 memories about coffee and sourdough in 3 subdirectories: sourdough starter (8), "
        "plants light (7) and coffee beans (6)."
    )
    many = describe_parent([], [(f"topic {number}", 1) for number in range(9)])
    assert many.startswith("9 memories in 9 subdirectories: topic 0 (1), topic 1 (1)")
    assert many.endswith("topic 6 (1) and 2 more.")


def _themed_corpus() -> tuple[list[TaxonomyItem], np.ndarray]:
    """Three themes of six memories; every text also talks about years, months and time."""
    themes = {
        "coffee": ["roasting", "arabica", "espresso"],
        "kubernetes": ["pods", "cluster", "deployment"],
        "jazz": ["bebop", "swing", "trumpet"],
    }
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((len(themes), 384))
    items: list[TaxonomyItem] = []
    vectors: list[np.ndarray] = []
    for number, (theme, words) in enumerate(themes.items()):
        for position in range(6):
            word = words[position % 3]
            text = f"Last year, {theme} and {word} took most of our time, month after month."
            items.append(
                TaxonomyItem(
                    index=len(items),
                    title=f"{theme}_{word}_year",
                    tldr=text,
                    keywords=[theme, word, "year"],
                    text=text,
                )
            )
            vectors.append(centres[number] + 0.3 * rng.standard_normal(384))
    data = np.asarray(vectors, dtype=np.float32)
    return items, data / np.linalg.norm(data, axis=1, keepdims=True)


def test_directory_names_come_from_the_themes_not_from_generic_words():
    items, vectors = _themed_corpus()
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert validate_taxonomy(tree, len(items), CONFIG) == []
    names = [child.name for child in tree.children]
    assert sorted(name.split("_")[0] for name in names) == ["coffee", "jazz", "kubernetes"]
    words = {word for node in tree.iter_nodes() for word in node.name.split("_")}
    assert not words & {"year", "month", "time", "last"}
    assert tree.description.startswith("18 memories in 3 subdirectories:")
    assert all(f"{child.name.replace('_', ' ')} (6)" in tree.description for child in tree.children)
    assert "took most of our time" not in tree.description  # no memory is quoted at the root
