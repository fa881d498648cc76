"""Extractive directory summaries: the central and diverse memories of each subtree.

A directory's summary is the TL;DR (the most central sentence, see `memorize.extractive`) of a
few of its subtree's memories, chosen by maximal marginal relevance over the memory vectors:
close to the leaf's mean direction (what most of it is about) and unlike the memories already
chosen (what else it holds), then put in reading order (memory index: the order of the
documents and of the chunks within them). The README shows it as the directory's summary;
collapsed-tree search and the navigation agent read it (README text and vector), so a question
about a whole topic ("what happened to the king?", "what did the meeting decide?") can be
answered from it.

Leaves choose among their own memories (`LEAF_SENTENCES` of them); a parent takes its
children's choices in turns, largest child first: a whole tree costs about n * `LEAF_SENTENCES`
dot products.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from memory_bank.schemas import DirectoryNode
from memory_bank.text.lexicon import name_words, search_tokens

# Key terms a README shows: a few per memory of its subtree (what a reader scanning for a name
# or a thing finds), at least `MIN_KEY_TERMS` and at most `MAX_KEY_TERMS` (one line a person
# reads; the root's ran to 120 terms when they also served the descent).
KEY_TERMS_PER_MEMORY = 3
MIN_KEY_TERMS = 12
MAX_KEY_TERMS = 20
# The README's index (its last section, for search and descent): words of the subtree's
# memories, as many per memory, at most `MAX_INDEX_TERMS`: per memory, enough to keep nearly
# a directory's whole vocabulary on the development stores. The maximum only guards against a
# huge README: a top-level directory of many encyclopedia paragraphs uses thousands of words,
# and its rare ones (a name in one paragraph) are what a question asks for, so a low maximum
# cost the descent questions (docs/benchmarks.md).
INDEX_TERMS_PER_MEMORY = 20
MAX_INDEX_TERMS = 10_000
LEAF_SENTENCES = 3
PARENT_SENTENCES = 5
# Weight of closeness to the subtree's mean against unlikeness to the memories already chosen
# (as in memorize's MMR over a chunk's sentences).
RELEVANCE = 0.7
# A memory this close to one already chosen says the same thing (a repeated boilerplate
# paragraph, the same passage in two files): never chosen.
NEAR_DUPLICATE = 0.95


def choose_central(vectors: np.ndarray, count: int) -> list[int]:
    """Positions (rows of `vectors`, unit length) of up to `count` central and diverse rows, in
    the order chosen (ties: the lower position); near-duplicates of a chosen row are skipped."""
    if not len(vectors) or count < 1:
        return []
    data = vectors.astype(np.float64)
    mean = data.sum(axis=0)
    relevance = data @ (mean / max(float(np.linalg.norm(mean)), 1e-12))
    closest_chosen = np.full(len(data), -np.inf)
    chosen: list[int] = []
    for _ in range(min(count, len(data))):
        redundancy = np.where(np.isfinite(closest_chosen), closest_chosen, 0.0)
        scores = RELEVANCE * relevance - (1.0 - RELEVANCE) * redundancy
        scores[chosen] = -np.inf
        scores[closest_chosen > NEAR_DUPLICATE] = -np.inf
        best = int(np.argmax(scores))
        if not np.isfinite(scores[best]):
            break
        chosen.append(best)
        closest_chosen = np.maximum(closest_chosen, data @ data[best])
    return chosen


def subtree_highlights(
    tree: DirectoryNode, vectors: np.ndarray, row_of: Mapping[int, int]
) -> dict[str, list[int]]:
    """The summary memories (indices, in reading order) of every directory of `tree`;
    `vectors[row_of[index]]` is memory `index`'s vector.

    A leaf's are chosen among its memories; a parent's are its children's, taken in turns from
    the largest child down (each child's best first), so a parent's summary speaks of its main
    subdirectories as RAPTOR's summary of summaries does, in a pass over each vector only once
    per level."""
    chosen_order: dict[str, list[int]] = {}

    def visit(node: DirectoryNode) -> int:
        if not node.children:
            members = list(node.chunk_indices)
            rows = np.fromiter((row_of[index] for index in members), dtype=np.int64)
            picked = choose_central(vectors[rows], LEAF_SENTENCES) if members else []
            chosen_order[node.path] = [members[position] for position in picked]
            return len(members)
        sizes = [visit(child) for child in node.children]
        by_size = sorted(range(len(sizes)), key=lambda i: (-sizes[i], i))
        queues = [list(chosen_order[node.children[i].path]) for i in by_size]
        picked: list[int] = []
        while len(picked) < PARENT_SENTENCES and any(queues):
            for queue in queues:
                if queue and len(picked) < PARENT_SENTENCES:
                    picked.append(queue.pop(0))
        chosen_order[node.path] = picked
        return sum(sizes) + len(node.chunk_indices)

    visit(tree)
    return {path: sorted(indices) for path, indices in chosen_order.items()}


def subtree_mean_vectors(
    tree: DirectoryNode, vectors: np.ndarray, row_of: Mapping[int, int] | None = None
) -> dict[str, np.ndarray]:
    """Every directory's vector (tree path -> unit-length float32): the direction of the mean
    of its subtree's memory vectors (`vectors[row_of[index]]` is memory `index`'s; without
    `row_of`, `vectors[index]`), zero for a directory holding none.

    This is the README's vector that collapsed-tree search and the descent rank: what the
    memories below a directory are about on average, the centre its summary's memories were
    chosen around. Sums are carried up the tree, so every vector is added once."""
    found: dict[str, np.ndarray] = {}
    width = vectors.shape[1] if vectors.ndim == 2 else 0

    def visit(node: DirectoryNode) -> np.ndarray:
        rows = [index if row_of is None else row_of[index] for index in node.chunk_indices]
        total = vectors[rows].astype(np.float64).sum(axis=0) if rows else np.zeros(width)
        for child in node.children:
            total = total + visit(child)
        norm = float(np.linalg.norm(total))
        found[node.path] = (total / norm if norm > 0 else total).astype(np.float32)
        return total

    visit(tree)
    return found


def ranked_against_siblings(
    tree: DirectoryNode,
    terms_of: Mapping[int, Iterable[str]],
    per_memory: int,
    minimum: int,
    maximum: int,
    only: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """The terms of every directory (those of its subtree's memories, `terms_of[index]`), the
    most telling first: what sets the directory apart from its siblings (class-based TF-IDF):
    how many of its memories have the term, weighted by how rare the term is among the memories
    of its parent's subtree (the root: of the whole tree; idf log(N / df), so a term every
    sibling has weighs nothing and ranks by its count after the telling ones). A directory keeps
    `per_memory` terms per memory of its subtree, at least `minimum`, at most `maximum`.
    `only`: the directories to rank (every one's counts are still read, for their parents)."""
    sets = {index: frozenset(terms) for index, terms in terms_of.items()}
    found: dict[str, list[str]] = {}

    def rank(
        node: DirectoryNode, counts: Counter[str], among: Counter[str], total: int, size: int
    ) -> None:
        if only is not None and node.path not in only:
            return
        limit = min(max(per_memory * size, minimum), maximum)
        ranked = sorted(
            counts,
            key=lambda term: (-counts[term] * math.log(total / among[term]), -counts[term], term),
        )
        found[node.path] = ranked[:limit]

    def visit(node: DirectoryNode) -> tuple[Counter[str], int]:
        """The memories of `node`'s subtree having each term, and their number; its children
        are ranked against it."""
        counts: Counter[str] = Counter()
        size = len(node.chunk_indices)
        for index in node.chunk_indices:
            counts.update(sets.get(index, ()))
        parts = [visit(child) for child in node.children]
        for child_counts, child_size in parts:
            counts.update(child_counts)
            size += child_size
        for child, (child_counts, child_size) in zip(node.children, parts, strict=True):
            rank(child, child_counts, counts, max(size, 1), child_size)
        return counts, size

    counts, size = visit(tree)
    rank(tree, counts, counts, max(size, 1), size)
    return found


def subtree_key_terms(
    tree: DirectoryNode,
    keywords: Mapping[int, Sequence[str]],
    only: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """The key terms of every directory (memorize's keywords of its subtree's memories, those
    with a word fit for a name: no dates, months or fillers), ranked against its siblings
    (`ranked_against_siblings`): sections of one story share their characters' names; what each
    section has that the others lack is what a reader choosing among them needs.
    `keywords[index]` are memory `index`'s. The README shows them on one line a person reads
    (at most `MAX_KEY_TERMS`)."""
    telling = {
        index: {term.lower() for term in terms if name_words(term)}
        for index, terms in keywords.items()
    }
    return ranked_against_siblings(
        tree, telling, KEY_TERMS_PER_MEMORY, MIN_KEY_TERMS, MAX_KEY_TERMS, only
    )


def index_text(title: str, keywords: Sequence[str], memory: str) -> str:
    """What a memory gives its directories' README index (`subtree_index_terms`): its title,
    keywords and memory text. The README-only descent counts the memories holding each README
    term from the same text (`index.corpus.DirectoryIndex.term_holders`)."""
    return " ".join([title.replace("_", " "), " ".join(keywords), memory])


def subtree_index_terms(
    tree: DirectoryNode,
    texts: Mapping[int, str],
    words: Mapping[int, Sequence[str]] | None = None,
    only: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """The index of every directory: the words of its subtree's memories (`texts[index]`, as
    search reads them: `search_tokens`), ranked against its siblings like the key terms,
    `INDEX_TERMS_PER_MEMORY` per memory, at most `MAX_INDEX_TERMS`. The README lists them in
    its last section, for search and for the README-only descent: a question names the words
    of a passage ("why was the farmer angry?"), which a few key phrases per memory rarely hold.
    The root has no siblings to be told apart from, and no index: its README is the one a
    person opens first. `words` (index -> `index_words` of its text) when already read."""
    if words is None:
        words = index_words(texts)
    found = ranked_against_siblings(tree, words, INDEX_TERMS_PER_MEMORY, 0, MAX_INDEX_TERMS, only)
    found.pop("/", None)
    return found


def index_words(texts: Mapping[int, str]) -> dict[int, list[str]]:
    """Each memory's words as the README index counts them (`search_tokens` of its
    `index_text`): the part of the index that reads every memory, done in parts by the
    caller on a large tree."""
    return {index: search_tokens(text) for index, text in texts.items()}
