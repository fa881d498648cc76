"""The Query Graph (retrieval, edges, retiring), its Parquet snapshots and checkpoints, and the
read-only Interaction Tree."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memory_bank.graph.graph import QueryGraph, compose_embedding
from memory_bank.graph.interaction import InteractionTree, ReadOnlyEntryError
from memory_bank.graph.layers import load_graph_state
from memory_bank.graph.model import Conflict, GraphNode, InteractionEntry, MergeEvent
from memory_bank.graph.persist import (
    GraphState,
    all_records,
    checkpoints,
    stored_stems_usable,
    take_changes,
    write_checkpoint,
    write_records,
)


def _vector(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _node(node_id: str, text: str, seed: int, timestamp: float) -> GraphNode:
    vector = _vector(seed)
    return GraphNode(
        id=node_id,
        kind="session",
        summary=text,
        context=text[:30],
        keywords=text.lower().split()[:3],
        timestamp=timestamp,
        embedding=compose_embedding(vector, None),
        summary_vector=vector,
    )


def test_retrieval_is_hybrid_top_k_plus_neighbours_newest_first_without_excluded():
    graph = QueryGraph(alpha=0.5)
    for number in range(6):
        graph.add_node(_node(f"n{number}", f"topic {number} words", seed=number, timestamp=number))
    graph.add_edge("n0", "n5")
    query = graph.nodes["n0"].embedding

    found = graph.retrieve(query, ["topic"], k=1)

    assert [node.id for node in found] == ["n5", "n0"]  # the best and its neighbour, newest first
    assert [n.id for n in graph.retrieve(query, ["topic"], k=1, exclude={"n5"})] == ["n0"]


def test_bm25_side_finds_a_node_by_its_words():
    graph = QueryGraph(alpha=1.0)
    graph.add_node(_node("a", "sourdough starter feeding", seed=1, timestamp=1))
    graph.add_node(_node("b", "kubernetes pods scheduling", seed=2, timestamp=2))

    assert graph.top_k(_vector(9), ["kubernet"], k=1)[0][0] == "b"


def test_lent_keywords_reach_search_without_a_model_pass_and_a_new_context_re_embeds():
    from memory_bank.graph.batch import refresh_contexts

    graph = QueryGraph(alpha=1.0)
    graph.add_node(_node("a", "sourdough starter feeding schedule", seed=1, timestamp=1))
    graph.add_node(_node("b", "kubernetes pods scheduling", seed=2, timestamp=2))
    encoded: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        encoded.append(texts)
        return np.stack([_vector(len(text)) for text in texts])

    before = graph.nodes["a"].embedding.copy()
    same = graph.nodes["a"].context
    refresh_contexts(graph, {"a": (same, ["sourdough", "levain"])}, encode, 5.0)
    assert encoded == []  # keywords alone: no model pass, the vector stays
    assert np.array_equal(graph.nodes["a"].embedding, before)
    assert graph.nodes["a"].keywords == ["sourdough", "levain"]
    assert graph.top_k(_vector(9), ["levain"], k=1)[0][0] == "a"  # searchable at once
    assert graph.nodes["a"].history[-1].event == "context updated"

    refresh_contexts(
        graph,
        {
            "a": ("bread (related to: baking)", ["sourdough"]),
            "b": (graph.nodes["b"].context, ["pod"]),
        },
        encode,
        6.0,
    )
    assert encoded == [["bread (related to: baking). sourdough"]]  # only the new context
    expected = compose_embedding(graph.nodes["a"].summary_vector, _vector(37))
    assert np.allclose(graph.nodes["a"].embedding, expected)


def test_a_retired_node_leaves_retrieval_and_edges_but_keeps_its_record():
    graph = QueryGraph()
    graph.add_node(_node("a", "alpha", 1, 1))
    graph.add_node(_node("b", "beta", 2, 2))
    graph.add_edge("a", "b")

    graph.retire("a", "merged", "h", at=3.0, detail="merged into h")

    assert "a" in graph.nodes and graph.nodes["a"].status == "merged"
    assert graph.nodes["a"].superseded_by == "h"
    assert graph.nodes["b"].links == {}
    assert [n.id for n in graph.retrieve(_vector(1), [], k=5)] == ["b"]
    assert graph.nodes["a"].history[-1].summary == "alpha"


def test_snapshot_and_checkpoints_reload_to_the_same_graph(tmp_path):
    state = GraphState()
    state.graph.add_node(_node("a", "alpha", 1, 1))
    state.graph.add_node(_node("b", "beta", 2, 2))
    state.graph.add_edge("a", "b", "related")
    take_changes(state)
    write_records(tmp_path / "snapshot", all_records(state), seq=1)
    state.seq = 1
    # a batch of changes after the snapshot: a conflict, a new node, an entry
    state.graph.add_node(_node("c", "gamma", 3, 3))
    state.graph.add_conflict(
        Conflict("c1", "a", "c", "ceo: x vs y", "Acme", "ceo", "x", "y", "s1", "s2", 4.0)
    )
    state.graph.resolve_conflict("c1", "c", 5.0, "the later source holds")
    state.tree.add_entry(InteractionEntry("e1", "raw text", 6.0, {"k": "v"}), ["c"])
    write_checkpoint(tmp_path / "log", take_changes(state), seq=2)

    loaded = load_graph_state(tmp_path / "snapshot", tmp_path / "log")

    assert loaded.seq == 2
    assert set(loaded.graph.nodes) == {"a", "b", "c"}
    assert loaded.graph.nodes["a"].links == {"b": "related"}
    np.testing.assert_array_equal(
        loaded.graph.nodes["c"].embedding, state.graph.nodes["c"].embedding
    )
    conflict = loaded.graph.conflicts["c1"]
    assert (conflict.status, conflict.current, conflict.superseded) == ("resolved", "c", "a")
    assert loaded.tree.entries_for("c")[0].text == "raw text"
    assert [seq for seq, _ in checkpoints(tmp_path / "log")] == [2]


def _same_graph(first: GraphState, second: GraphState) -> bool:
    def rows(state: GraphState) -> list[tuple]:
        return sorted(
            (n.id, n.summary, json.dumps(n.links, sort_keys=True), n.embedding.tobytes())
            for n in state.graph.nodes.values()
        )

    return rows(first) == rows(second) and set(first.graph.conflicts) == set(second.graph.conflicts)


def test_a_version_snapshot_links_earlier_layers_and_compacts_when_they_pile_up(
    tmp_path, monkeypatch
):
    import memory_bank.graph.layers as layers

    monkeypatch.setattr(layers, "LAYERS_SHARE", 100.0)  # here every layer is alike
    state, log = GraphState(), tmp_path / "log"
    versions = []
    for seq in range(1, 6):
        state.graph.add_node(_node(f"n{seq}", f"topic {seq}", seed=seq, timestamp=seq))
        if seq > 1:
            state.graph.add_edge(f"n{seq}", f"n{seq - 1}", "related")
        if seq == 4:
            state.graph.delete_node("n1")
        write_checkpoint(log, take_changes(state), seq=seq)
        state.seq = seq
        version = tmp_path / f"v{seq}" / "graph"
        layers.write_snapshot(version, versions[-1] if versions else None, log, seq)
        versions.append(version)
        assert _same_graph(load_graph_state(version, tmp_path / "empty"), state)
        assert load_graph_state(version, tmp_path / "empty").seq == seq
    names = sorted(p.name for p in (versions[-1] / "layers").iterdir())
    assert names == [f"{n:09d}" for n in range(1, 6)]
    shared = versions[-2] / "layers" / f"{4:09d}" / "nodes.parquet"
    assert (
        shared.stat().st_ino
        == (versions[-1] / "layers" / f"{4:09d}" / "nodes.parquet").stat().st_ino
    )

    monkeypatch.setattr(layers, "MAX_LAYERS", 3)
    state.graph.add_node(_node("n6", "topic 6", seed=6, timestamp=6))
    write_checkpoint(log, take_changes(state), seq=6)
    state.seq = 6
    compacted = tmp_path / "v6" / "graph"
    layers.write_snapshot(compacted, versions[-1], log, 6)
    assert [p.name for p in (compacted / "layers").iterdir()] == [f"{6:09d}-all"]
    assert _same_graph(load_graph_state(compacted, tmp_path / "empty"), state)


def _tree_digest(tree: InteractionTree) -> str:
    rows = sorted(
        (e.entry_id, e.text, e.timestamp, json.dumps(e.metadata, sort_keys=True))
        for e in tree.entries.values()
    )
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def test_interaction_entries_are_never_modified_or_replaced():
    tree = InteractionTree()
    tree.add_entry(InteractionEntry("e1", "first context", 1.0), ["a"])
    tree.add_entry(InteractionEntry("e2", "second context", 2.0), ["b"])
    before = _tree_digest(tree)

    tree.record_merge(MergeEvent("m1", ("a", "b"), "h", 3.0, "merged a and b"))
    tree.add_entry(InteractionEntry("e1", "first context", 1.0), ["h"])  # the same entry: a link
    with pytest.raises(ReadOnlyEntryError):
        tree.add_entry(InteractionEntry("e1", "rewritten", 9.0), ["a"])
    with pytest.raises(AttributeError):
        tree.entries["e1"].text = "changed"  # type: ignore[misc]  # frozen record

    assert _tree_digest(tree) == before
    assert [e.entry_id for e in tree.entries_for("h")] == ["e1", "e2"]


def _texts_graph() -> GraphState:
    """A graph of nodes with distinct words, one retired (out of retrieval)."""
    state = GraphState()
    texts = [
        "Sourdough starters need feeding twice a day",
        "Kubernetes schedules pods onto nodes",
        "The studies studied how bakers feed their starters",
        "Pods restart when their nodes drain",
        "Rye flour ferments faster than wheat",
    ]
    for number, text in enumerate(texts):
        state.graph.add_node(_node(f"n{number}", text, seed=number, timestamp=number))
    state.graph.add_edge("n0", "n2")
    state.graph.retire("n4", "merged", "n0", at=9.0, detail="merged into n0")
    take_changes(state)
    return state


def _retrieval(graph: QueryGraph) -> list[list[tuple[str, float]]]:
    queries = [["starter", "feed"], ["pod", "node"], ["studi"], ["flour"], []]
    return [graph.top_k(_vector(7), terms, k=4) for terms in queries]


def test_a_graph_loaded_from_its_layer_retrieves_as_the_graph_in_memory(tmp_path, monkeypatch):
    import memory_bank.graph.graph as graph_module

    state = _texts_graph()
    write_records(tmp_path / "layer", all_records(state), seq=1)

    def no_tokenizing(node: GraphNode) -> list[str]:
        raise AssertionError(f"node {node.id} tokenized at load: its stored stems were not used")

    monkeypatch.setattr(graph_module, "node_terms", no_tokenizing)
    loaded = load_graph_state(tmp_path / "layer", tmp_path / "log")

    assert _retrieval(loaded.graph) == _retrieval(state.graph)
    assert loaded.graph.indexed_terms("n2") == state.graph.indexed_terms("n2")
    assert loaded.graph.indexed_terms("n4") is None  # retired: out of retrieval


def _as_written_before_stems(layer) -> None:
    """Make a record directory as code from before stored stems wrote it."""
    (layer / "node_terms.parquet").unlink()
    meta = json.loads((layer / "graph.json").read_text())
    (layer / "graph.json").write_text(json.dumps({"format": meta["format"], "seq": meta["seq"]}))


def test_a_layer_written_before_stems_were_stored_still_loads_the_same(tmp_path):
    state = _texts_graph()
    layer = tmp_path / "layer"
    write_records(layer, all_records(state), seq=1)
    _as_written_before_stems(layer)

    loaded = load_graph_state(layer, tmp_path / "log")

    assert _retrieval(loaded.graph) == _retrieval(state.graph)
    assert _same_graph(loaded, state)


def test_stems_stored_under_another_lexicon_are_worked_out_again(tmp_path):
    state = _texts_graph()
    layer = tmp_path / "layer"
    write_records(layer, all_records(state), seq=1)
    stored = pq.read_table(layer / "node_terms.parquet")
    stale = pa.array([["stale"]] * stored.num_rows, type=stored.schema.field("terms").type)
    pq.write_table(stored.set_column(1, "terms", stale), layer / "node_terms.parquet")
    meta = json.loads((layer / "graph.json").read_text())
    (layer / "graph.json").write_text(json.dumps({**meta, "stems": meta["stems"] - 1}))

    loaded = load_graph_state(layer, tmp_path / "log")

    assert _retrieval(loaded.graph) == _retrieval(state.graph)
    assert all(
        loaded.graph.indexed_terms(n) == state.graph.indexed_terms(n) for n in state.graph.nodes
    )


def test_a_snapshot_whose_layer_has_no_stems_is_compacted_into_one_that_has(tmp_path):
    import memory_bank.graph.layers as layers

    state, log = _texts_graph(), tmp_path / "log"
    old = tmp_path / "v1" / "graph"
    write_records(old / "layers" / "000000001-all", all_records(state), seq=1)
    _as_written_before_stems(old / "layers" / "000000001-all")
    meta = {"format": 1, "seq": 1, "layers": ["000000001-all"]}
    (old / "graph.json").write_text(json.dumps(meta))
    state.graph.add_node(_node("n9", "Proofing baskets hold the dough", seed=9, timestamp=9))
    write_checkpoint(log, take_changes(state), seq=2)

    new = tmp_path / "v2" / "graph"
    layers.write_snapshot(new, old, log, 2)

    assert [p.name for p in (new / "layers").iterdir()] == [f"{2:09d}-all"]
    assert stored_stems_usable(new / "layers" / f"{2:09d}-all")
    loaded = load_graph_state(new, tmp_path / "empty")
    assert _retrieval(loaded.graph) == _retrieval(state.graph)


def test_a_later_checkpoint_without_stems_is_linked_not_compacted(tmp_path):
    import memory_bank.graph.layers as layers

    state, log = _texts_graph(), tmp_path / "log"
    write_checkpoint(log, all_records(state), seq=1)  # the graph so far, with stems
    first = tmp_path / "v1" / "graph"
    layers.write_snapshot(first, None, log, 1)
    state.graph.add_node(_node("n9", "Proofing baskets hold the dough", seed=9, timestamp=9))
    _as_written_before_stems(write_checkpoint(log, take_changes(state), seq=2))

    second = tmp_path / "v2" / "graph"
    layers.write_snapshot(second, first, log, 2)

    assert sorted(p.name for p in (second / "layers").iterdir()) == [f"{1:09d}", f"{2:09d}"]
    loaded = load_graph_state(second, tmp_path / "empty")
    assert _retrieval(loaded.graph) == _retrieval(state.graph)
