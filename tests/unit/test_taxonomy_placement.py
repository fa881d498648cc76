"""Incremental add: new memories are placed into the existing tree; overfull leaves re-planned;
memories of a new topic get a new top-level directory."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from memory_bank.config import AppConfig, TaxonomyConfig
from memory_bank.ingest.runner import local_runner
from memory_bank.schemas import DirectoryNode
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy import TaxonomyItem, fit, placement, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.fit import FitBounds, leave_one_out_fits, new_topic
from memory_bank.taxonomy.placement import MAX_GROWTH, place_memories, should_place
from memory_bank.taxonomy.planner import rebase
from tests.support import shared_embedder
from tests.unit.test_ingest import ML_AND_ENGINEERING, SAMPLE
from tests.unit.test_taxonomy import _blobs

CONFIG = TaxonomyConfig()


def _leaf_paths(tree: DirectoryNode) -> dict[int, str]:
    return {index: leaf.path for leaf in tree.leaves() for index in leaf.chunk_indices}


def _near(vectors: np.ndarray, row: int, count: int, seed: int) -> np.ndarray:
    """`count` vectors close to `vectors[row]` (cosine about 0.98 to it)."""
    rng = np.random.default_rng(seed)
    near = vectors[row] + 0.01 * rng.standard_normal((count, vectors.shape[1]), dtype=np.float32)
    return (near / np.linalg.norm(near, axis=1, keepdims=True)).astype(np.float32)


def _with_new_items(items, vectors, new_vectors, like: int):
    start = len(items)
    new_items = [
        TaxonomyItem(
            index=start + k,
            title=f"{items[like].title}_{k}",
            tldr=items[like].tldr,
            keywords=list(items[like].keywords),
            text=items[like].text,
        )
        for k in range(len(new_vectors))
    ]
    return (
        items + new_items,
        np.concatenate([vectors, new_vectors]),
        list(range(start, start + len(new_vectors))),
    )


def test_new_memories_join_the_leaf_of_their_nearest_neighbours():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    target = _leaf_paths(tree)[17]
    items, vectors, new = _with_new_items(items, vectors, _near(vectors, 17, 1, seed=1), like=17)

    placed = place_memories(tree, items, vectors, new, CONFIG)

    assert placed is not None and validate_taxonomy(placed, len(items), CONFIG) == []
    assert _leaf_paths(placed)[new[0]] == target
    before = _leaf_paths(tree)
    assert {index: path for index, path in _leaf_paths(placed).items() if index in before} == before


def test_an_overfull_leaf_is_replanned_and_everything_else_stays():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    before = _leaf_paths(tree)
    target = before[17]
    items, vectors, new = _with_new_items(items, vectors, _near(vectors, 17, 12, seed=2), like=17)

    placed = place_memories(tree, items, vectors, new, CONFIG)

    assert placed is not None and validate_taxonomy(placed, len(items), CONFIG) == []
    assert all(len(leaf.chunk_indices) <= CONFIG.max_leaf for leaf in placed.leaves())
    after = _leaf_paths(placed)
    # The overfull directory (or, at max_depth, its parent) was re-planned; nothing outside it moved.
    replanned = target if target.count("/") < CONFIG.max_depth else target.rsplit("/", 1)[0]
    for index, path in before.items():
        if not path.startswith(replanned + "/") and path != replanned:
            assert after[index] == path
    assert all(after[index].startswith(replanned) for index in new)
    # Parent descriptions count the memories they hold now.
    assert placed.description.startswith(f"{len(items):,} memories")


def test_placement_declines_an_empty_tree_and_large_adds():
    empty = DirectoryNode(path="/", name="")
    items, vectors = _blobs(10, seed=1)
    assert place_memories(empty, items, vectors, range(10), CONFIG) is None
    assert should_place(100, int(MAX_GROWTH * 100))
    assert not should_place(100, int(MAX_GROWTH * 100) + 1)
    assert not should_place(0, 1)


def _new_cluster(vectors: np.ndarray, count: int, seed: int) -> np.ndarray:
    """`count` vectors around a centre orthogonal to every stored vector, spread like a blob of
    `_blobs`: a topic the store has nothing of."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(vectors.T.astype(np.float64))  # the span of the stored vectors
    centre = rng.standard_normal(vectors.shape[1])
    centre -= basis @ (basis.T @ centre)
    centre *= np.sqrt(vectors.shape[1]) / np.linalg.norm(centre)
    cluster = centre + 0.9 * rng.standard_normal((count, vectors.shape[1]))
    return (cluster / np.linalg.norm(cluster, axis=1, keepdims=True)).astype(np.float32)


def _with_topic(items, vectors, new_vectors, word: str):
    """`items`/`vectors` with memories of a new subject `word` appended."""
    start = len(items)
    new_items = [
        TaxonomyItem(
            index=start + k,
            title=f"{word}_entry",
            tldr=f"Entry {start + k} of {word}.",
            keywords=[word],
            text=f"{word} {word}ish words",
        )
        for k in range(len(new_vectors))
    ]
    return (
        items + new_items,
        np.concatenate([vectors, new_vectors]),
        list(range(start, start + len(new_vectors))),
    )


def _new_top_level(before: DirectoryNode, after: DirectoryNode) -> list[DirectoryNode]:
    names = {child.name for child in before.children}
    return [child for child in after.children if child.name not in names]


def _indices(node: DirectoryNode) -> list[int]:
    return sorted(index for leaf in node.leaves() for index in leaf.chunk_indices)


def test_a_new_topic_gets_a_new_top_level_directory_and_nothing_else_moves():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    items, vectors, new = _with_topic(items, vectors, _new_cluster(vectors, 6, seed=5), "gizmo")

    placed = place_memories(tree, items, vectors, new, CONFIG)

    assert placed is not None and validate_taxonomy(placed, len(items), CONFIG) == []
    [added] = _new_top_level(tree, placed)
    assert _indices(added) == new and "gizmo" in added.name
    assert placed.children[:-1] == tree.children  # every stored directory exactly as it was
    assert f"in {len(placed.children)} subdirectories" in placed.description  # the root counts it


def test_memories_of_known_topics_start_no_directory():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    near = np.concatenate([_near(vectors, row, 2, seed=row) for row in (5, 17, 60, 123, 180)])
    items, vectors, new = _with_new_items(items, vectors, near, like=5)

    placed = place_memories(tree, items, vectors, new, CONFIG)

    assert placed is not None and validate_taxonomy(placed, len(items), CONFIG) == []
    assert [child.name for child in placed.children] == [child.name for child in tree.children]
    assert new_topic(tree, vectors, new, CONFIG.min_leaf) == []


def test_fewer_misfits_than_a_leaf_holds_are_placed_as_before():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    lonely = _new_cluster(vectors, CONFIG.min_leaf - 1, seed=6)
    items, vectors, new = _with_topic(items, vectors, lonely, "gizmo")

    placed = place_memories(tree, items, vectors, new, CONFIG)

    assert placed is not None and _new_top_level(tree, placed) == []
    assert validate_taxonomy(placed, len(items), CONFIG) == []


def test_misfits_that_have_nothing_in_common_are_placed_as_before():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    # Each just outside a different blob: misfits, but not misfit enough to be strays, and each
    # closer to its blob than to the other newcomers.
    rows = (5, 17, 60, 123)
    rng = np.random.default_rng(8)
    outside = vectors[list(rows)] + 0.1 * rng.standard_normal((len(rows), vectors.shape[1]))
    outside = (outside / np.linalg.norm(outside, axis=1, keepdims=True)).astype(np.float32)
    items, vectors, new = _with_new_items(items, vectors, outside, like=5)
    bounds = FitBounds(misfit=1.0, stray=-1.0)  # every newcomer a misfit, none a stray

    assert new_topic(tree, vectors, new, CONFIG.min_leaf, bounds) == []
    placed = place_memories(tree, items, vectors, new, CONFIG, fit_bounds=bounds)
    assert placed is not None and _new_top_level(tree, placed) == []


def test_a_new_directory_never_takes_an_existing_name():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    items, vectors, new = _with_topic(items, vectors, _new_cluster(vectors, 6, seed=5), "gizmo")
    [first] = _new_top_level(tree, place_memories(tree, items, vectors, new, CONFIG))
    # A stored top-level directory already called what the new one would be called.
    clashing = tree.model_copy(deep=True)
    clashing.children[0] = rebase(
        clashing.children[0].model_copy(update={"name": first.name}), f"/{first.name}"
    )

    placed = place_memories(clashing, items, vectors, new, CONFIG)

    assert placed is not None and validate_taxonomy(placed, len(items), CONFIG) == []
    [added] = _new_top_level(clashing, placed)
    # Its next candidate among the siblings, or a suffix: never a sibling's name.
    assert added.name != first.name and _indices(added) == new
    assert added.name not in {child.name for child in clashing.children}


def test_a_full_root_or_no_new_topics_places_every_memory_as_before(monkeypatch):
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    items, vectors, new = _with_topic(items, vectors, _new_cluster(vectors, 6, seed=5), "gizmo")

    descended = place_memories(tree, items, vectors, new, CONFIG, new_topics=False)
    monkeypatch.setattr(placement, "ROOT_WIDENING", 0)  # no room for another top-level directory
    full_root = place_memories(tree, items, vectors, new, CONFIG)

    assert descended is not None and _new_top_level(tree, descended) == []
    assert validate_taxonomy(descended, len(items), CONFIG) == []
    assert full_root == descended


def test_fit_bounds_come_from_the_store_or_the_defaults():
    items, vectors = _blobs(200, seed=3)
    tree = plan_taxonomy(items, vectors, CONFIG)
    fits = leave_one_out_fits(tree, vectors)
    # A leaf's own mean without the memory: computed by hand for the first memory of a leaf.
    leaf = next(leaf for leaf in tree.leaves() if len(leaf.chunk_indices) >= 3)
    first, others = leaf.chunk_indices[0], leaf.chunk_indices[1:]
    rest = vectors[others].sum(axis=0)
    expected = float(vectors[first] @ rest / np.linalg.norm(rest))
    assert np.isclose(fits, expected, atol=1e-5).any()
    assert len(fits) == sum(len(leaf.chunk_indices) for leaf in tree.leaves())

    bounds = FitBounds.of(tree, vectors)
    assert bounds.misfit == pytest.approx(np.percentile(fits, fit.FIT_PERCENTILE))
    assert bounds.stray == pytest.approx(np.percentile(fits, fit.STRAY_PERCENTILE))
    small_items, small_vectors = _blobs(15, seed=1)
    small = plan_taxonomy(small_items, small_vectors, CONFIG)
    assert FitBounds.of(small, small_vectors) == FitBounds(
        fit.DEFAULT_FIT_THRESHOLD, fit.DEFAULT_STRAY_THRESHOLD
    )


def _chunk_paths(reader: StoreReader) -> dict[str, str]:
    chunk_ids = reader.memories().column("chunk_id").to_pylist()
    return {chunk_id: reader.chunk_path(index) for index, chunk_id in enumerate(chunk_ids)}


def test_adding_a_document_keeps_every_stored_memory_where_it_was(tmp_path):
    store = tmp_path / "store"
    ingest = local_runner(AppConfig(), shared_embedder())
    first = ingest.run(store, files=[SAMPLE / path for path in ML_AND_ENGINEERING])
    assert not first.placed
    paths_before = _chunk_paths(StoreReader(store))

    added = ingest.run(store, files=[SAMPLE / "notes" / "home" / "sourdough_baking.md"])

    assert added.placed and added.documents == 1
    reader = StoreReader(store)
    assert validate_taxonomy(reader.tree(), reader.meta["total_chunks"], AppConfig().taxonomy) == []
    paths_after = _chunk_paths(reader)
    moved = {chunk for chunk, path in paths_before.items() if paths_after[chunk] != path}
    # Only memories of a directory that overflowed and was re-planned may move.
    assert len(moved) <= CONFIG.hard_max_leaf * 2, moved
    assert len(paths_after) > len(paths_before)


def test_rebuild_plans_the_whole_tree_anew_without_memorizing(tmp_path):
    from memory_bank.ingest.stages import plan_tree

    store = tmp_path / "store"
    ingest = local_runner(AppConfig(), shared_embedder())
    ingest.run(store, files=[SAMPLE / path for path in ML_AND_ENGINEERING])
    assert ingest.run(store, files=[SAMPLE / "notes" / "home" / "sourdough_baking.md"]).placed
    memories_before = StoreReader(store).memories().drop_columns(["directory", "path"]).to_pylist()

    rebuilt = ingest.run(store, replan=True)

    reader = StoreReader(store)
    assert (rebuilt.documents, rebuilt.chunks, rebuilt.rebuilt_documents, rebuilt.placed) == (
        0,
        0,
        0,
        False,
    )
    assert reader.memories().drop_columns(["directory", "path"]).to_pylist() == memories_before
    from memory_bank.store.tables import memories_from_table

    fresh_plan = plan_tree(
        memories_from_table(reader.memories()),
        reader.memory_vectors(),
        AppConfig().taxonomy,
        None,  # offline
    )
    assert reader.tree() == fresh_plan


PROGRAMMING = yaml.safe_load((Path(__file__).parent / "python_and_javascript.yaml").read_text())


def _write_documents(folder: Path, documents: dict[str, str]) -> list[Path]:
    folder.mkdir(parents=True)
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(folder.glob("*.md"))


def test_javascript_after_python_gets_its_own_top_level_directory(tmp_path, embedder):
    """The spec case: Python notes, then JavaScript notes -> a new directory beside the Python
    ones, every Python memory where it was, the root README listing the new directory."""
    store = tmp_path / "store"
    ingest = local_runner(AppConfig(), embedder)
    python = ingest.run(store, files=_write_documents(tmp_path / "python", PROGRAMMING["python"]))
    reader = StoreReader(store)
    tree_before, python_paths = reader.tree(), _chunk_paths(reader)
    assert 15 <= python.chunks <= 30

    javascript = _write_documents(tmp_path / "javascript", PROGRAMMING["javascript"])
    added = ingest.run(store, files=javascript)

    assert added.placed  # placed into the stored tree, not planned anew
    reader = StoreReader(store)
    tree = reader.tree()
    assert validate_taxonomy(tree, reader.meta["total_chunks"], AppConfig().taxonomy) == []
    [new_directory] = _new_top_level(tree_before, tree)
    sources = reader.memories().column("source").to_pylist()
    in_new = {index for leaf in new_directory.leaves() for index in leaf.chunk_indices}
    javascript_rows = {row for row, s in enumerate(sources) if Path(s).parent.name == "javascript"}
    assert in_new == javascript_rows and len(javascript_rows) == added.chunks
    paths = _chunk_paths(reader)
    assert {chunk: paths[chunk] for chunk in python_paths} == python_paths
    assert f"**{new_directory.name}/**" in reader.path("README.md").read_text(encoding="utf-8")
