"""The stages of a commit, each on its own, over values (no store on disk but where a stage
writes one): apply the request, plan the tree, compose the READMEs, the graph step, the new
version's meta, logs and reusable files; and the snapshot read back as written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.graph.batch import BatchOutcome, GraphCommit
from memory_bank.graph.layers import GraphSnapshot
from memory_bank.graph.storage import GraphStorage
from memory_bank.ingest.commit_change import Change, apply_request, check_change
from memory_bank.ingest.commit_readmes import readme_stage, stale_directories
from memory_bank.ingest.commit_tree import TreePlan, plan_tree_stage
from memory_bank.ingest.commit_version import (
    KEPT_REORGANIZATIONS,
    LEDGER_FILE,
    REORGANIZATIONS_FILE,
    bank_logs,
    unchanged_files,
    version_meta,
)
from memory_bank.ingest.graph_step import IngestGraphStep, graph_commit, graph_stage
from memory_bank.ingest.stages import chunk_documents, memorize_encoded, readme_vectors_of
from memory_bank.ingest.work import memory_recipe
from memory_bank.schemas import ReorganizeOperation
from memory_bank.store.snapshot import MemoryParts, StoreSnapshot, load_snapshot
from memory_bank.store.writer import write_store
from memory_bank.text.sources import document_from_text
from tests.fakes import HashingEmbedder
from tests.support import written_node_ids

TOPICS = {
    "bread": "Sourdough bread needs a lively starter, flour, water and salt; the dough rises "
    "overnight and the loaf bakes in a hot oven until the crust is dark.",
    "stars": "Astronomers measure the distance to a star by its parallax; telescopes record the "
    "star's light, its spectrum and the planets that orbit it.",
    "boats": "A sailing boat tacks into the wind; the sailor trims the mainsail and the jib, and "
    "the keel keeps the boat from drifting sideways on the water.",
    "bees": "Honey bees forage for nectar and pollen; the hive stores honey in wax combs and the "
    "queen bee lays eggs while worker bees guard the hive.",
}


def _documents(topic: str, count: int, start: int = 0) -> list:
    return [
        document_from_text(f"# {topic} {n}\n\n{TOPICS[topic]} Note {n} of the {topic} log.")
        for n in range(start, start + count)
    ]


def _parts(documents: list) -> MemoryParts:
    """The documents chunked, embedded (by bag of words) and memorized offline."""
    config = AppConfig()
    chunks = chunk_documents(documents, config.chunking)
    encodings = HashingEmbedder().encode_chunks([chunk.text for chunk in chunks])
    parts = memorize_encoded(chunks, encodings, 0, config.memorize, llm=None)
    parts.documents = list(documents)
    return parts


def _committed(before: StoreSnapshot | None, offered: MemoryParts, remove=()) -> StoreSnapshot:
    """The stages chained without the write: the version a commit of `offered` would make."""
    config = AppConfig()
    change = apply_request(before, offered, remove)
    plan = plan_tree_stage(change, False, config, llm=None)
    readmes = readme_stage(change, plan, config.taxonomy, llm=None)
    return StoreSnapshot(
        parts=change.parts,
        tree=plan.tree,
        readmes=readmes.texts,
        meta=version_meta(change, plan, config),
        chunk_paths=plan.chunk_paths,
        readme_vectors=readme_vectors_of(plan.tree, change.parts),
    )


@pytest.fixture(scope="module")
def store_of_four_topics() -> StoreSnapshot:
    documents = [doc for topic in TOPICS for doc in _documents(topic, 5)]
    return _committed(None, _parts(documents))


# --- apply the request ------------------------------------------------------------------------


def test_a_request_removes_renumbers_and_does_not_add_a_held_document_twice(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    gone = before.parts.documents[1].document_id
    held = before.parts.documents[0]
    fresh = _documents("bees", 2, start=10)

    change = apply_request(before, _parts([held, *fresh]), [gone, "not-stored"])

    assert change.removed == {gone} and change.duplicates == 1
    assert [doc.document_id for doc in change.added.documents] == [d.document_id for d in fresh]
    assert [m.index for m in change.parts.memories] == list(range(len(change.parts.memories)))
    assert change.kept == len(before.parts.memories) - 1 and change.removed_memories == 1
    kept_ids = [m.metadata["chunk_id"] for m in change.parts.memories[: change.kept]]
    assert kept_ids == [
        m.metadata["chunk_id"] for m in before.parts.memories if m.metadata["document_id"] != gone
    ]
    for old, new in change.kept_index.items():
        assert before.parts.memories[old].metadata == change.parts.memories[new].metadata
        np.testing.assert_array_equal(
            before.parts.memory_vectors[old], change.parts.memory_vectors[new]
        )
    assert len(change.parts.memory_vectors) == len(change.parts.memories)


def test_a_change_that_empties_the_store_or_mixes_recipes_is_refused(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    everything = [doc.document_id for doc in before.parts.documents]
    with pytest.raises(StoreError, match="without memories"):
        check_change(apply_request(before, MemoryParts(), everything), AppConfig(), "mem")
    other = replace(before, meta={**before.meta, "memory_recipe": "another"})
    add = apply_request(other, _parts(_documents("bees", 1, start=20)), [])
    with pytest.raises(StoreError, match="other chunking"):
        check_change(add, AppConfig(), "mem")
    check_change(apply_request(other, MemoryParts(), everything[:1]), AppConfig(), "mem")


# --- plan ----------------------------------------------------------------------------------


def _plan(change: Change, replan: bool = False, config: AppConfig | None = None) -> TreePlan:
    config = config or AppConfig()
    return plan_tree_stage(change, replan, config, llm=None)


def test_a_new_store_is_planned_and_a_small_add_placed_without_moving_stored_files(
    store_of_four_topics: StoreSnapshot,
) -> None:
    first = _plan(apply_request(None, store_of_four_topics.parts, []))
    assert first.replan_reason == "new store" and first.reorganization is None
    assert first.taxonomy["adds_since_plan"] == 0

    before = store_of_four_topics
    change = apply_request(before, _parts(_documents("bees", 1, start=30)), [])
    placed = _plan(change)

    assert placed.replan_reason is None
    assert placed.taxonomy["adds_since_plan"] == before.meta["taxonomy"]["adds_since_plan"] + 1
    assert placed.taxonomy["plan_cohesion"] == before.meta["taxonomy"]["plan_cohesion"]
    assert placed.moved_memories == 0
    assert all(placed.chunk_paths[i] == path for i, path in before.chunk_paths.items())
    assert set(placed.chunk_paths) == {m.index for m in change.parts.memories}


def test_a_tree_is_planned_anew_when_asked_or_after_enough_placed_adds(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    change = apply_request(before, _parts(_documents("bees", 1, start=40)), [])
    config = AppConfig.model_validate({"store": {"replan_after_adds": 1}})

    drifted = _plan(change, config=config)
    rebuilt = _plan(apply_request(before, MemoryParts(), []), replan=True)

    assert drifted.replan_reason == "1 placed adds since the last plan"
    assert drifted.taxonomy["adds_since_plan"] == 0
    assert rebuilt.replan_reason == "rebuild"
    if rebuilt.reorganization is not None:  # a re-plan is logged only when it moved something
        assert rebuilt.reorganization.moved or rebuilt.reorganization.new_directories


# --- READMEs -------------------------------------------------------------------------------


def test_only_readmes_whose_inputs_changed_are_composed_anew(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    unchanged = apply_request(before, MemoryParts(), [])
    assert stale_directories(unchanged, _plan(unchanged)) == []

    change = apply_request(before, _parts(_documents("bees", 1, start=50)), [])
    plan = _plan(change)
    readmes = readme_stage(change, plan, AppConfig().taxonomy, llm=None)

    new_file = plan.chunk_paths[change.kept]
    holding = {node.path for node in plan.tree.iter_nodes() if _holds(node, change.kept)}
    assert set(readmes.stale) == holding and "/" in holding
    assert set(readmes.texts) == {node.path for node in plan.tree.iter_nodes()}
    for path, text in readmes.texts.items():
        if path not in readmes.stale:
            assert text is before.readmes[path]
    leaf = max(holding, key=len)
    assert new_file.rsplit("/", 1)[-1] in readmes.texts[leaf]


def test_a_large_store_composes_its_stale_readmes_by_top_level_subtree(
    store_of_four_topics: StoreSnapshot,
) -> None:
    """Above the coarse threshold the stale READMEs (and the words of the index) go out one
    call per top-level subtree, with the texts of the serial composition."""
    change = apply_request(store_of_four_topics, _parts(_documents("bees", 1, start=50)), [])
    plan = _plan(change)
    small = AppConfig().taxonomy
    large = small.model_copy(update={"coarse_threshold": 1})
    calls: list[tuple] = []

    def recording_map(function, arguments):
        calls.append((function.__name__, len(arguments)))
        return [function(*each) for each in arguments]

    fanned = readme_stage(change, plan, large, llm=None, map_calls=recording_map)
    serial = readme_stage(change, plan, small, llm=None)
    assert fanned == serial
    top_levels = {path.split("/")[1] for path in fanned.stale if path != "/"}
    assert ("readmes_and_usage", len(top_levels) + 1) in calls  # the root is its own call
    assert ("index_words", len(plan.tree.children)) in calls


def test_readmes_written_in_another_format_are_all_composed_anew(
    store_of_four_topics: StoreSnapshot,
) -> None:
    old_format = replace(
        store_of_four_topics, meta={**store_of_four_topics.meta, "readme_format": 0}
    )
    change = apply_request(old_format, MemoryParts(), [])
    assert set(stale_directories(change, _plan(change))) == set(store_of_four_topics.readmes)


def _holds(node, index: int) -> bool:
    return any(index in n.chunk_indices for n in node.iter_nodes())


# --- the graph step ------------------------------------------------------------------------


class RecordingGraph:
    def __init__(self) -> None:
        self.commits: list[GraphCommit] = []

    def prepare_commit(self, commit: GraphCommit) -> tuple[GraphSnapshot, BatchOutcome]:
        self.commits.append(commit)
        return GraphSnapshot(7, None, Path("unused")), BatchOutcome(nodes_added=len(commit.added))

    def committed(self) -> None:
        pass


def test_the_graph_commit_names_added_removed_and_every_remaining_memory(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    gone = before.parts.documents[2].document_id
    change = apply_request(before, _parts(_documents("stars", 1, start=60)), [gone])
    graph = RecordingGraph()

    update = graph_stage(graph, graph_commit(change, now=1000.0))

    [commit] = graph.commits
    assert [item.chunk_id for item in commit.added] == [
        m.metadata["chunk_id"] for m in change.added.memories
    ]
    assert commit.removed == [
        m.metadata["chunk_id"] for m in before.parts.memories if m.metadata["document_id"] == gone
    ]
    assert commit.chunk_ids_after == {m.metadata["chunk_id"] for m in change.parts.memories}
    assert update.summary["nodes_added"] == 1 and update.summary["checkpoint"] == 7


def test_the_ingest_graph_step_checkpoints_added_nodes_and_prunes_removed_ones(
    tmp_path: Path, store_of_four_topics: StoreSnapshot
) -> None:
    step = IngestGraphStep(GraphStorage(tmp_path / "store"), AppConfig(), HashingEmbedder().encode)
    added = apply_request(None, store_of_four_topics.parts, [])

    snapshot, outcome = step.prepare_commit(graph_commit(added, now=1000.0))

    # Two checkpoints: the nodes, then the verdicts of their analysis (run without the lock).
    assert outcome.nodes_added == len(added.parts.memories) and outcome.pairs > 0
    assert snapshot.seq == 2
    assert written_node_ids(snapshot, tmp_path / "v1") == graph_commit(added, 0).chunk_ids_after
    log = tmp_path / ".store.graph"
    assert (log / "000000001").is_dir() and (log / "000000002").is_dir()  # acknowledged on disk
    gone = store_of_four_topics.parts.documents[0].document_id
    removal = apply_request(store_of_four_topics, MemoryParts(), [gone])

    snapshot, outcome = step.prepare_commit(graph_commit(removal, now=1001.0))

    # Nothing added, nothing analysed: one checkpoint.
    assert outcome.nodes_removed == 1 and snapshot.seq == 3
    assert written_node_ids(snapshot, tmp_path / "v2") == graph_commit(removal, 0).chunk_ids_after


# --- the new version ------------------------------------------------------------------------


def test_a_removal_keeps_the_recipe_the_store_was_made_with(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = replace(store_of_four_topics, meta={**store_of_four_topics.meta, "memory_recipe": "x"})
    removal = apply_request(before, MemoryParts(), [before.parts.documents[0].document_id])
    add = apply_request(before, _parts(_documents("bees", 1, start=70)), [])
    plan = _plan(apply_request(before, MemoryParts(), []))

    assert version_meta(removal, plan, AppConfig())["memory_recipe"] == "x"
    assert version_meta(add, plan, AppConfig())["memory_recipe"] == memory_recipe(AppConfig())


def test_the_reorganization_log_keeps_the_latest_and_empty_logs_are_not_written(
    store_of_four_topics: StoreSnapshot,
) -> None:
    logged = [{"reason": f"r{n}"} for n in range(KEPT_REORGANIZATIONS)]
    live = replace(store_of_four_topics, bank_json={REORGANIZATIONS_FILE: logged})
    operation = ReorganizeOperation(at="2026-01-01T00:00:00Z", reason="rebuild")

    logs = bank_logs(live, operation, {"calls": 1})

    assert len(logs[REORGANIZATIONS_FILE]) == KEPT_REORGANIZATIONS
    assert logs[REORGANIZATIONS_FILE][-1]["reason"] == "rebuild"
    assert logs[REORGANIZATIONS_FILE][0] == {"reason": "r1"}
    assert logs[LEDGER_FILE] == {"calls": 1}
    assert bank_logs(None, None, {}) == {}


def test_files_of_unchanged_memories_and_readmes_are_reused(
    store_of_four_topics: StoreSnapshot,
) -> None:
    before = store_of_four_topics
    after = _committed(before, _parts(_documents("boats", 1, start=80)))
    stale = [path for path, text in after.readmes.items() if before.readmes.get(path) != text]

    reused = unchanged_files(Path("/store"), before, after, stale)

    kept_files = {before.chunk_paths[i] for i in before.chunk_paths}
    new_file = after.chunk_paths[len(before.parts.memories)]
    assert kept_files <= set(reused) and new_file not in reused
    readme_files = {p for p in reused if p.endswith("README.md")}
    assert len(readme_files) == len(after.readmes) - len(stale)
    assert all(path == Path("/store") / relative for relative, path in reused.items())
    assert unchanged_files(Path("/store"), None, after, stale) == {}


# --- the snapshot --------------------------------------------------------------------------


def test_a_written_snapshot_reads_back_as_the_same_version(
    tmp_path: Path, store_of_four_topics: StoreSnapshot
) -> None:
    written = replace(store_of_four_topics, bank_json={LEDGER_FILE: {"roles": {}}})

    stats = write_store(tmp_path / "store", written)
    loaded = load_snapshot(tmp_path / "store")

    assert loaded is not None and loaded.version == stats.store_version
    assert loaded.tree == written.tree and loaded.readmes == written.readmes
    assert loaded.chunk_paths == written.chunk_paths and loaded.meta == written.meta
    assert loaded.bank_json == written.bank_json
    assert [_stored(m) for m in loaded.parts.memories] == [
        _stored(m) for m in written.parts.memories
    ]
    # The documents', chunks' and sentences' rows stay in the store: the version lends them.
    assert loaded.stored_documents == written.documents() == loaded.documents()
    assert loaded.parts.documents == loaded.parts.chunks == loaded.parts.sentences == []
    np.testing.assert_array_equal(loaded.parts.memory_vectors, written.parts.memory_vectors)
    assert set(loaded.readme_vectors) == set(written.readme_vectors)
    assert load_snapshot(tmp_path / "nothing") is None


def _stored(memory) -> tuple:
    return (memory.index, memory.title, memory.memory, memory.tldr, memory.metadata["chunk_id"])
