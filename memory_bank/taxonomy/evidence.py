"""What naming knows of each directory (`gather_evidence`): per term, how many of its memories
use it, how many of its documents it describes (and the memories those hold), how many memories
have it among their memorized key terms; its most central memory's phrase and TL;DR; and the
phrases of its largest documents. Serializable, nothing per memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import NamedTuple

import numpy as np
from scipy import sparse

from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.terms import TermMatrix, group_membership, phrase_mask
from memory_bank.text.lexicon import name_words

# A term describes a document when at least this share of its memories use it (see naming).
COHESION = 0.5
# A phrase that covers as many members as its best word reads better than the word alone.
PHRASE_BONUS = 1.25
EVIDENCE_TERMS = 200  # terms kept per directory: enough to compare top-level groups
DOCUMENT_KEY_TERMS = 5  # a document's most picked key terms describe it (see `_describing`)
PHRASE_WORDS = 2  # words of a document's phrase in the name of a group without a cohesive term


class TermCounts(NamedTuple):
    memories: int  # memories of the directory using the term
    documents: int  # documents the term describes: at least `COHESION` of their memories use it
    curated: int  # memories with the term among their title words or keywords
    reach: int = -1  # memories of the documents it describes (-1: not known, `memories` then)


@dataclass(frozen=True)
class GroupEvidence:
    """What naming knows of one directory: serializable, nothing per memory."""

    size: int  # memories
    documents: int
    terms: dict[str, TermCounts]  # term key -> counts, the best-supported `EVIDENCE_TERMS`
    spellings: dict[str, str]  # display form of each term
    central_phrase: str = ""  # a plain phrase from the most central memory (display form)
    central_tldr: str = ""
    # (memories, plain phrase of its most central memory) of the largest documents, largest
    # first: what an honest name of a group without a cohesive term is made of.
    document_phrases: tuple[tuple[int, str], ...] = ()
    # The title of the one whole document the group holds (`document_title`), "" else.
    document_title: str = ""


def gather_evidence(
    matrix: TermMatrix,
    groups: Sequence[np.ndarray],
    documents: np.ndarray,
    central_rows: Sequence[int],
    items: Sequence[TaxonomyItem],
    document_centrals: Sequence[Sequence[tuple[int, int]]] = (),
    titled_documents: np.ndarray | None = None,
) -> list[GroupEvidence]:
    """Evidence of each group of rows (of `matrix` and `items`); `documents[row]` is the row's
    document number, `central_rows[g]` the most central row of group g and
    `document_centrals[g]` (optional) the (memories, most central row) of its largest documents
    within it, largest first. `titled_documents` (default `documents`) are the document
    numbers a group's title is read by (`document_title`)."""
    titled = documents if titled_documents is None else titled_documents
    n_rows = matrix.presence.shape[0]
    membership = group_membership(groups, n_rows)
    memory_counts = (membership @ matrix.presence).toarray()
    curated_counts = (membership @ matrix.curated).toarray()
    # Documents per group: one row per (group, document) pair, then pairs summed by group.
    pair_group = np.repeat(np.arange(len(groups)), [len(rows) for rows in groups])
    pair_rows = np.concatenate([np.asarray(rows, dtype=np.int64) for rows in groups])
    pairs, pair_of_row, pair_sizes = np.unique(
        np.stack([pair_group, documents[pair_rows]], axis=1),
        axis=0,
        return_inverse=True,
        return_counts=True,
    )
    pair_membership = sparse.csr_matrix(
        (np.ones(len(pair_rows)), (pair_of_row.ravel(), pair_rows)), shape=(len(pairs), n_rows)
    )
    pair_uses = _describing(pair_membership, pair_sizes, matrix)
    to_group = sparse.csr_matrix(
        (np.ones(len(pairs)), (pairs[:, 0], np.arange(len(pairs)))), shape=(len(groups), len(pairs))
    )
    document_counts = (to_group @ pair_uses).toarray()
    sized = sparse.csr_matrix(
        (pair_sizes.astype(np.float64), (pairs[:, 0], np.arange(len(pairs)))),
        shape=(len(groups), len(pairs)),
    )
    reach_counts = (sized @ pair_uses).toarray()
    document_totals = np.bincount(pairs[:, 0], minlength=len(groups))
    evidence = []
    for g, rows in enumerate(groups):
        support = memory_counts[g] + curated_counts[g]
        kept = [int(i) for i in np.argsort(-support, kind="stable")[:EVIDENCE_TERMS] if support[i]]
        vocabulary = [str(matrix.vocabulary[i]) for i in kept]
        central = items[central_rows[g]]
        coverage = memory_counts[g] / max(len(rows), 1)
        evidence.append(
            GroupEvidence(
                size=len(rows),
                documents=int(document_totals[g]),
                terms={
                    term: TermCounts(
                        int(memory_counts[g, i]),
                        int(document_counts[g, i]),
                        int(curated_counts[g, i]),
                        int(reach_counts[g, i]),
                    )
                    for term, i in zip(vocabulary, kept, strict=True)
                },
                spellings={term: matrix.spelling(term) for term in vocabulary},
                central_phrase=central_phrase(central, matrix, coverage),
                central_tldr=central.tldr,
                document_phrases=_document_phrases(
                    matrix,
                    rows,
                    documents,
                    document_centrals[g] if document_centrals else (),
                    items,
                ),
                document_title=document_title(rows, titled, items),
            )
        )
    return evidence


def document_title(rows: np.ndarray, documents: np.ndarray, items: Sequence[TaxonomyItem]) -> str:
    """The title of the document `rows` are all of: its file's name ("the_water_cycle"), or for
    a work in numbered parts (`documents.document_groups`) their folder's
    ("bamboo-cutter-moon-child"); "" when the rows hold several documents, part of one, or a
    document of one memory."""
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) < 2:
        return ""
    document = documents[rows[0]]
    if np.any(documents[rows] != document) or np.count_nonzero(documents == document) != len(rows):
        return ""
    sources = {items[row].source for row in rows}
    if not all(sources):
        return ""
    path = PurePath(next(iter(sources)))
    return path.parent.name if len(sources) > 1 else path.stem


def _describing(
    pair_membership: sparse.csr_matrix, pair_sizes: np.ndarray, matrix: TermMatrix
) -> sparse.csr_matrix:
    """Which terms describe each document (row: a document's memories in one group): those at
    least `COHESION` of its memories use (the cohesion test one level down; one passing mention
    describes nothing) and its `DOCUMENT_KEY_TERMS` most picked key terms (a long transcript
    does not name its topic in every chunk, but memorize picks it again and again)."""
    shares = sparse.diags(1.0 / pair_sizes) @ (pair_membership @ matrix.presence)
    described = (shares >= COHESION).tolil()
    picked = (pair_membership @ matrix.curated).tocsr()
    for pair in range(picked.shape[0]):
        start, end = picked.indptr[pair], picked.indptr[pair + 1]
        columns, counts = picked.indices[start:end], picked.data[start:end]
        for column in columns[np.lexsort((columns, -counts))][:DOCUMENT_KEY_TERMS]:
            described[pair, column] = True
    return described.tocsr().astype(np.float64)


def _document_phrases(
    matrix: TermMatrix,
    rows: np.ndarray,
    documents: np.ndarray,
    centrals: Sequence[tuple[int, int]],
    items: Sequence[TaxonomyItem],
) -> tuple[tuple[int, str], ...]:
    """(memories, plain phrase) of each document in `centrals` (its size in the group and its
    most central row): the key term its memories in the group pick and use most (phrases ahead
    by `PHRASE_BONUS`), else its central memory's phrase."""
    rows = np.asarray(rows, dtype=np.int64)
    phrases = phrase_mask(matrix.vocabulary)
    found = []
    for size, row in centrals:
        own = rows[documents[rows] == documents[row]]
        curated = np.asarray(matrix.curated[own].sum(axis=0)).ravel()
        used = np.asarray(matrix.presence[own].sum(axis=0)).ravel()
        score = (curated + used) * np.where(phrases, PHRASE_BONUS, 1.0) * (curated > 0)
        if len(score) and score.max() > 0:
            phrase = matrix.spelling(str(matrix.vocabulary[int(np.argmax(score))]))
        else:
            phrase = central_phrase(items[row], matrix, used / max(len(own), 1))
        found.append((int(size), " ".join(phrase.split()[:PHRASE_WORDS])))
    return tuple(found)


def central_phrase(item: TaxonomyItem, matrix: TermMatrix, coverage: np.ndarray) -> str:
    """A plain phrase from a memory: the keyword of it whose words the group uses most
    (`coverage`: share of the group's memories using each term of `matrix`), phrases of two or
    more words ahead at equal use; else the first words of its title; "" when none is ASCII."""
    best, best_score = "", 0.0
    for keyword in item.keywords:
        words = [word for word in name_words(keyword) if word not in matrix.annotations]
        if not words:
            continue
        shares = [coverage[column] for word in words if (column := matrix.column(word)) >= 0]
        score = (sum(shares) / len(words)) * (PHRASE_BONUS if len(words) > 1 else 1.0)
        if score > best_score:
            best, best_score = " ".join(words), score
    if best:
        return best
    title = [
        word for word in name_words(item.title.replace("_", " ")) if word not in matrix.annotations
    ]
    return " ".join(title[:3])
