"""How well a directory tree separates labelled memories: purity, NMI and leaf purity.

Labels are per memory index (a dataset, a folder, a source document); a tree assigns each
memory to a top-level directory and to a leaf. Purity is the share of memories that carry the
majority label of their directory (1.0: no directory mixes labels); NMI (arithmetic mean
normalization, as sklearn computes it) also falls when one label is split over many directories.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from sklearn.metrics import normalized_mutual_info_score

from memory_bank.schemas import DirectoryNode


def top_level_of(tree: DirectoryNode) -> dict[int, str]:
    """Memory index -> name of the top-level directory holding it."""
    return {
        index: child.name
        for child in tree.children
        for node in child.iter_nodes()
        for index in node.chunk_indices
    }


def leaf_of(tree: DirectoryNode) -> dict[int, str]:
    """Memory index -> path of its leaf."""
    return {index: leaf.path for leaf in tree.leaves() for index in leaf.chunk_indices}


def purity(assignment: Mapping[int, str], labels: Mapping[int, str]) -> float:
    """Share of the labelled memories whose group's majority label is their own."""
    groups: dict[str, Counter[str]] = {}
    for index, label in labels.items():
        groups.setdefault(assignment[index], Counter())[label] += 1
    total = sum(sum(counts.values()) for counts in groups.values())
    if not total:
        raise ValueError("purity needs at least one labelled memory")
    return sum(max(counts.values()) for counts in groups.values()) / total


def nmi(assignment: Mapping[int, str], labels: Mapping[int, str]) -> float:
    """Normalized mutual information between groups and labels over the labelled memories."""
    indices = sorted(labels)
    return float(
        normalized_mutual_info_score([labels[i] for i in indices], [assignment[i] for i in indices])
    )


def composition(
    assignment: Mapping[int, str], labels: Mapping[int, str], order: Sequence[str]
) -> dict[str, Counter[str]]:
    """Per group (in `order`), how many memories of each label it holds."""
    groups: dict[str, Counter[str]] = {name: Counter() for name in order}
    for index, label in labels.items():
        groups.setdefault(assignment[index], Counter())[label] += 1
    return groups
