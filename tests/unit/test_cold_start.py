"""What a new process pays to open a store for a small change: its Query Graph loads from the
stems stored with it, clustering new directories does not import scikit-learn, and scipy's
hierarchical clustering is imported only when a tree is cut."""

from __future__ import annotations

import subprocess
import sys

HEAVY_MODULES = ("sklearn",)

OPEN_AND_CLUSTER = """
import sys
from pathlib import Path

import numpy as np

import memory_bank.graph.graph as graph_module
from memory_bank.graph.storage import GraphStorage
from memory_bank.store.reader import StoreReader
from memory_bank.taxonomy.clustering import cosine_distances, silhouette

def no_tokenizing(node):
    raise AssertionError(f"node {node.id} tokenized while the graph loaded")

graph_module.node_terms = no_tokenizing
store = Path(sys.argv[1])
reader = StoreReader(store)
reader.memories(), reader.chunks(), reader.documents(), reader.tree()
assert not reader.integrity.warnings()
assert len(GraphStorage(store).state.graph) > 0
vectors = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
silhouette(cosine_distances(vectors), np.arange(20) % 3)
print(" ".join(name for name in sys.argv[2:] if name in sys.modules) or "none")
"""


def test_opening_a_store_and_clustering_neither_tokenize_the_graph_nor_import_scikit_learn(
    team_store_template,
):
    done = subprocess.run(
        [sys.executable, "-c", OPEN_AND_CLUSTER, str(team_store_template), *HEAVY_MODULES],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["none"]


def test_a_cli_process_and_a_commit_import_no_hierarchical_clustering_until_a_tree_is_cut():
    imports = (
        "import sys, memory_bank.cli.main, memory_bank.app.bank, memory_bank.ingest.commit; "
        "print('scipy.cluster' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", imports], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
