"""Descent by READMEs alone: is the tree navigable without flat search?

From the root, every child directory is scored by its README only (the README score of
collapsed-tree search: `alpha` * share of the query's terms in the README + (1 - alpha) * cosine
of the query to the README vector); the best `beam_width` directories of the level are kept and
expanded in turn, a leaf staying in the beam as it is, until the beam holds only leaves. No chunk
is scored on the way down, so what the descent reaches says how well names and READMEs tell the
directories apart.
"""

from __future__ import annotations

import numpy as np

from memory_bank.index.corpus import DirectoryIndex
from memory_bank.schemas import DirectoryNode
from memory_bank.text.lexicon import search_tokens


def readme_score_table(
    directories: DirectoryIndex, query: str, query_vector: np.ndarray, alpha: float
) -> np.ndarray:
    """The README score of every directory (row j = `directories.paths[j]`) for the query."""
    if not directories.paths:
        return np.zeros(0, dtype=np.float64)
    terms = frozenset(search_tokens(query))
    share = np.array(
        [len(terms & readme) / len(terms) if terms else 0.0 for readme in directories.readme_terms]
    )
    cosines = directories.vectors.astype(np.float64) @ query_vector.astype(np.float64)
    return alpha * share + (1.0 - alpha) * cosines


def descend(
    tree: DirectoryNode,
    directories: DirectoryIndex,
    query: str,
    query_vector: np.ndarray,
    alpha: float,
    beam_width: int,
) -> list[DirectoryNode]:
    """The leaves a beam of `beam_width` reaches from the root, best first."""
    if beam_width < 1:
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
    scores = readme_score_table(directories, query, query_vector, alpha)

    def score(node: DirectoryNode) -> float:
        return float(scores[directories.position[node.path]])

    beam: list[tuple[float, DirectoryNode]] = [(score(child), child) for child in tree.children]
    while True:
        beam.sort(key=lambda item: (-item[0], item[1].path))
        beam = beam[:beam_width]
        if all(node.is_leaf() for _, node in beam):
            return [node for _, node in beam]
        expanded: list[tuple[float, DirectoryNode]] = []
        for value, node in beam:
            if node.is_leaf():
                expanded.append((value, node))
            else:
                expanded.extend((score(child), child) for child in node.children)
        beam = expanded
