"""Directory names and descriptions: terms and key phrases, the naming pipeline (evidence ->
cohesive candidates -> distinct among siblings -> central phrase fallback) and descriptions."""

from __future__ import annotations

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.taxonomy import TaxonomyItem, is_valid_name, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.naming import (
    GroupEvidence,
    TermCounts,
    candidates,
    describe_parent,
    gather_evidence,
    name_from_terms,
    name_siblings,
)
from memory_bank.taxonomy.terms import TermMatrix
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


def _evidence(
    memories: list[tuple[str, str, list[str]]], groups: list[np.ndarray]
) -> list[GroupEvidence]:
    """Each memory its own document; the first row of a group is its central memory."""
    items = [
        TaxonomyItem(index=i, title=title, tldr=text, keywords=keywords, text=text)
        for i, (text, title, keywords) in enumerate(memories)
    ]
    documents = np.arange(len(memories))
    central = [int(rows[0]) for rows in groups]
    return gather_evidence(_matrix(memories), groups, documents, central, items)


def _group(size: int, documents: int, **terms: tuple[int, int, int]) -> GroupEvidence:
    counts = {term.replace("_", " "): TermCounts(*value) for term, value in terms.items()}
    return GroupEvidence(size, documents, counts, {term: term for term in counts}, "fallback")


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
    evidence = _evidence(MEMORIES, GROUPS)
    best = [candidates(group, evidence)[0] for group in evidence]
    assert [candidate.term for candidate in best] == ["neural network", "postgresql"]
    assert best[0].cohesion == 1.0
    assert [name.name for name in name_siblings(evidence)] == ["neural_networks", "postgresql"]


def test_candidates_tell_siblings_apart():
    texts = ["postgres database rows", "postgres database index", "redis database cache"]
    texts.append("redis database keys")
    memories = [(text, "", []) for text in texts]
    evidence = _evidence(memories, [np.array([0, 1]), np.array([2, 3])])
    best = [candidates(group, evidence)[0].term for group in evidence]
    assert [group.spellings[term] for group, term in zip(evidence, best, strict=True)] == [
        "postgres",
        "redis",
    ]
    assert "database" not in best  # every sibling uses it: it tells nothing apart


def test_key_terms_outrank_words_only_in_the_text():
    evidence = _evidence(
        [("alpha beta", "", ["beta"]), ("alpha beta", "", ["beta"])], [np.arange(2)]
    )
    assert [candidate.term for candidate in candidates(evidence[0], evidence)] == ["beta", "alpha"]


def test_a_term_of_one_member_is_no_name_and_the_central_phrase_is():
    # "coffee" describes one of three documents: the name is the central memory's phrase.
    group = _group(6, 3, coffee=(2, 1, 2), water=(2, 1, 0))
    assert candidates(group, [group]) == []
    assert name_siblings([group])[0].name == "fallback"
    # A term in most memories of only one of several documents fails as well.
    lopsided = _group(10, 4, python=(7, 1, 7))
    assert candidates(lopsided, [lopsided]) == []
    shared = _group(10, 4, python=(7, 3, 7))
    assert [candidate.term for candidate in candidates(shared, [shared])] == ["python"]


def test_siblings_get_distinct_names_most_confident_first():
    lone = _group(4, 4, jazz=(4, 4, 4))
    twin = _group(4, 4, jazz=(4, 4, 4))
    assert [name.name for name in name_siblings([lone, twin])] == ["jazz", "fallback"]
    first = _group(4, 4, jazz=(4, 4, 4))
    second = _group(4, 4, jazz=(4, 4, 4), bebop=(2, 2, 2))
    assert [name.name for name in name_siblings([first, second])] == ["jazz", "bebop"]
    # Variants of a sibling's name (or the parent's) are passed over too.
    plural = _group(4, 4, networks=(4, 4, 4), layers=(2, 2, 2))
    assert name_siblings([plural], reserved=["network"])[0].name == "layers"
    long_name = name_from_terms(["a" * 30 + " " + "b" * 40])
    assert long_name == ("a" * 30 + "_" + "b" * 40)[:60] and is_valid_name(long_name)


def test_transcript_markup_and_speaker_labels_are_no_terms():
    texts = [
        "Grad A: so the {disfmarker} digits are read [laughter]\nGrad B: we read digits now",
        "Project Manager: the remote {vocalsound} control\nMarketing: a remote control",
    ]
    matrix = TermMatrix.build(
        texts, ["disfmarker_digits", "vocalsound_remote"], [["disfmarker"], []]
    )
    vocabulary = set(matrix.vocabulary)
    assert {"digit", "remote", "control"} <= vocabulary
    assert not vocabulary & {"disfmarker", "vocalsound", "laughter", "grad", "manager", "marketing"}


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
