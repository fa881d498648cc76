"""Descent by READMEs alone: is the tree navigable without flat search?

From the root, every child directory is scored by its README only, against its siblings:
`alpha` * BM25 of the query's terms against the README's, among the siblings
(`sibling_term_scores`), + (1 - alpha) * cosine of the query to the README vector; the best
`beam_width` directories of the level are kept and expanded in turn, a leaf staying in the beam
as it is, until the beam holds only leaves. No chunk is scored on the way down, so what the
descent reaches says how well names and READMEs tell the directories apart.

The BM25 reads each sibling as one document made of its subtree's memories: a README term
occurs as often as those memories hold it (`DirectoryIndex.term_holders`, counted once per
opened store from the text the README's index is made of), and the occurrences of a larger
sibling count for less (BM25's length normalization, with the constants of the store's own BM25
index). A README's index lists about 20 words per memory, so a boolean term set let a directory
whose memories cover many unrelated topics (an `..._and_more` one) hold a question's words by
sheer vocabulary and win against the focused sibling that holds them.

Why BM25 over memory counts (`bench/taxonomy.py`, figures in docs/benchmarks.md): the plain
share of query terms (every term alike) left the choice among the sections of one story to
terms all of them share (its characters); weighting each term by how few siblings have it fixed
that, and BM25 over the memory counts reached the right leaf more often than that weighted
share on every development set. Other BM25 constants did about as well; the length
normalization alone, or the share of a sibling's memories holding each term (no saturation:
the smallest directories win), did worse, as did matching on stems. Most misses that remain
take the wrong document at the top level when a question's words occur in several documents
("Who did the queen give to the giant?"): only a passage holding them together tells those
apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memory_bank.index.corpus import DirectoryIndex
from memory_bank.schemas import DirectoryNode
from memory_bank.text.lexicon import search_tokens

# BM25's constants as the store's own BM25 index has them (bm25s's defaults), not fitted to
# the descent.
BM25_K1 = 1.5
BM25_B = 0.75


def sibling_term_scores(
    readmes: Sequence[frozenset[str]],
    holders: Sequence[Mapping[str, int]],
    sizes: Sequence[int],
    terms: frozenset[str],
) -> np.ndarray:
    """BM25 of the query's `terms` among sibling directories, each read as one document made of
    its subtree's memories (`sizes[i]` of them). A term of sibling i's README (`readmes[i]`)
    occurs as often as its memories hold it (`holders[i]`; at least once, a README word no
    memory's index text has), saturating (k1) and discounted for a sibling larger than their
    average (b); every term is weighted by how few siblings' READMEs have it (idf
    log(1 + n / df) among them; a term none has weighs as much as the rarest): a term every
    sibling has cannot tell them apart, one only a single sibling has decides. Divided by the
    sum of the weights, so a sibling of average size in which one memory holds every term
    scores 1, as the share of terms it replaced did. Zeros for a query without terms."""
    if not terms or not readmes:
        return np.zeros(len(readmes), dtype=np.float64)
    ordered = sorted(terms)
    held = np.array(
        [
            [max(counts.get(term, 0), 1) if term in readme else 0 for term in ordered]
            for readme, counts in zip(readmes, holders, strict=True)
        ],
        dtype=np.float64,
    )
    frequency = (held > 0).sum(axis=0)
    weights = np.log1p(len(readmes) / np.maximum(frequency, 1))
    size = np.asarray(sizes, dtype=np.float64)
    saturation = BM25_K1 * (1.0 - BM25_B + BM25_B * size / max(float(size.mean()), 1.0))
    frequencies = held * (BM25_K1 + 1.0) / (held + saturation[:, None])
    return (frequencies @ weights) / weights.sum()


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
    `sibling_term_scores` + (1 - `alpha`) * cosine of the query to the README vector)."""
    if beam_width < 1:
        raise ValueError(f"beam_width must be at least 1, got {beam_width}")
    terms = frozenset(search_tokens(query))
    cosines = directories.vectors.astype(np.float64) @ query_vector.astype(np.float64)

    def scored(children: Sequence[DirectoryNode]) -> list[tuple[float, DirectoryNode]]:
        positions = [directories.position[child.path] for child in children]
        lexical = sibling_term_scores(
            [directories.readme_terms[j] for j in positions],
            [directories.term_holders[j] for j in positions],
            [len(directories.subtree_chunks[j]) for j in positions],
            terms,
        )
        return [
            (float(alpha * score + (1.0 - alpha) * cosines[j]), child)
            for score, j, child in zip(lexical, positions, children, strict=True)
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
