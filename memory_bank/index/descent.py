"""Descent by READMEs alone: is the tree navigable without flat search?

From the root, every child directory is scored by its README only, against its siblings:
`alpha` * the share of the query's terms in the README, each term weighted by how few siblings'
READMEs have it, + (1 - alpha) * cosine of the query to the README vector; the best
`beam_width` directories of the level are kept and expanded in turn, a leaf staying in the beam
as it is, until the beam holds only leaves. No chunk is scored on the way down, so what the
descent reaches says how well names and READMEs tell the directories apart.

Measured with `bench/taxonomy.py` (beam 1): the plain share of query terms (every term alike)
left the choice among the sections of one story to terms all of them share (its characters).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_bank.index.corpus import DirectoryIndex
from memory_bank.schemas import DirectoryNode
from memory_bank.text.lexicon import search_tokens


def sibling_term_shares(readmes: Sequence[frozenset[str]], terms: frozenset[str]) -> np.ndarray:
    """The share of the query's `terms` each of the sibling `readmes` holds, every term weighted
    by how few of the siblings hold it (idf log(1 + n / df) among them; a term none holds
    weighs as much as the rarest): a term every sibling has cannot tell them apart, one only a
    single sibling has decides. Zeros for a query without terms."""
    if not terms or not readmes:
        return np.zeros(len(readmes), dtype=np.float64)
    ordered = sorted(terms)
    holds = np.array([[term in readme for term in ordered] for readme in readmes], dtype=bool)
    frequency = holds.sum(axis=0)
    weights = np.log1p(len(readmes) / np.maximum(frequency, 1))
    return (holds @ weights) / weights.sum()


def descend(
    tree: DirectoryNode,
    directories: DirectoryIndex,
    query: str,
    query_vector: np.ndarray,
    alpha: float,
    beam_width: int,
) -> list[DirectoryNode]:
    """The leaves a beam of `beam_width` reaches from the root, best first: the children of
    every directory in the beam are scored by their READMEs against each other (`alpha` *
    `sibling_term_shares` + (1 - `alpha`) * cosine of the query to the README vector)."""
    if beam_width < 1:
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
    terms = frozenset(search_tokens(query))
    cosines = directories.vectors.astype(np.float64) @ query_vector.astype(np.float64)

    def scored(children: Sequence[DirectoryNode]) -> list[tuple[float, DirectoryNode]]:
        positions = [directories.position[child.path] for child in children]
        shares = sibling_term_shares([directories.readme_terms[j] for j in positions], terms)
        return [
            (float(alpha * share + (1.0 - alpha) * cosines[j]), child)
            for share, j, child in zip(shares, positions, children, strict=True)
        ]

    beam = scored(tree.children)
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
                expanded.extend(scored(node.children))
        beam = expanded
