"""Incremental add: new memories are placed into the existing tree; overfull leaves re-planned."""

from __future__ import annotations

import numpy as np

from memory_bank.config import AppConfig, TaxonomyConfig
from memory_bank.ingest.runner import local_runner
from memory_bank.llm.offline import OfflineBackend
from memory_bank.schemas import DirectoryNode
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy import TaxonomyItem, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.placement import MAX_GROWTH, place_memories, should_place
from tests.support import shared_embedder
from tests.unit.test_ingest import ML_AND_ENGINEERING, SAMPLE
from tests.unit.test_taxonomy import _blobs

CONFIG = TaxonomyConfig()


def _leaf_paths(tree: DirectoryNode) -> dict[int, str]:
    return {index: leaf.path for leaf in tree.leaves() for index in leaf.chunk_indices}


def _near(vectors: np.ndarray, row: int, count: int, seed: int) -> np.ndarray:
    """`count` vectors close to `vectors[row]`."""
    rng = np.random.default_rng(seed)
    near = vectors[row] + 0.05 * rng.standard_normal((count, vectors.shape[1]), dtype=np.float32)
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
    from memory_bank.ingest.runner import plan_tree

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
        OfflineBackend(),
    )
    assert reader.tree() == fresh_plan
