"""Collapsed-tree search (RAPTOR): chunks and directory READMEs ranked together.

Chunks are scored as in hybrid search (BM25 + cosine, with title links followed); each README
is scored on the same scale, with the share of the query's terms it contains, relative to the
best chunks' share, standing in for the normalized BM25 score (READMEs are not in the BM25
index). Walking down the merged ranking, the best README that makes the cut is returned as a
summary hit followed by its subtree's best chunks for the query (one overview per result: a
second and third overview cost evidence recall and gained nothing), so a question about a whole
topic gets the topic's summary and its strongest passages, and a specific question gets the
same passages as hybrid search.

A README hit carries the README's heading and the sentences of its summary that speak to the
question (share a term with it) and that no passage ranked above it already holds; when none is
left, the result has no overview. Not its contents list, nor the rest of its summary: they
repeat what the chunk hits hold or are about other things, and every token of them is taken
from the reader's budget for the passages. The whole summary cost local questions answer-token
recall against hybrid search; the sentences that speak to the question and are new keep the
gain on thematic questions and cost local ones next to nothing. Measured and dropped, for
losing most of the thematic gain: admitting a README only where it outscores the best chunk of
its subtree, or is closer in cosine than every memory beneath it, or only where its summary
holds a question term no passage above it has; scoring a README's terms on its summary instead
of its whole text (docs/benchmarks.md, "Measurements behind the code").

A question that asks for a summary ("Summarize the whole meeting", `SUMMARY_REQUEST_WORDS`) names
no topic a summary sentence would share, so it gets the overview whole, first: the README that
speaks for the search scope (`ResolvedScope.overview`), or unscoped the best-scoring README, its
summary and key terms. Detecting a broad question by its words' spread in the scope does not
work (a word such as "meeting" is in anything from a few to most of a meeting's memories), nor
by the README outscoring every chunk (that happens for specific questions about as often as
for broad ones).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_bank.index.corpus import DirectoryIndex, StoreCorpus
from memory_bank.index.hybrid import HybridSearch
from memory_bank.index.scope import ResolvedScope
from memory_bank.schemas import SearchHit
from memory_bank.taxonomy.readme import readme_key_terms
from memory_bank.text.lexicon import SUMMARY_REQUEST_WORDS, search_tokens, without_annotations
from memory_bank.text.sentences import split_sentences
from memory_bank.text.spoken import clean_verbatim

# Chunks a README hit brings along from its subtree.
README_EXPANSION = 2
# README hits per result: the one overview that best matches the question, then passages.
MAX_READMES = 1
# The best chunks whose share of the query's terms a README's share is measured against.
LEXICAL_REFERENCE_CHUNKS = 5
# A summary sentence counts as already returned when a returned passage holds its opening
# this many characters (a TL;DR is a passage's sentence, cut and closed with a full stop).
QUOTE_PREFIX_CHARS = 80


def collapsed_tree_search(
    search: HybridSearch,
    query: str,
    query_vector: np.ndarray,
    k: int,
    pool: int,
    scope: ResolvedScope | None = None,
) -> list[SearchHit]:
    """The best `k` hits among chunks and READMEs for `query`, best first; with a `scope`,
    its chunks and the READMEs that speak for it (`scope.py`)."""
    corpus = search.corpus
    bm25_scores = search.bm25_scores(query)
    if scope is not None:
        bm25_scores = scope.bm25_scores(bm25_scores)
    ranked = search.hybrid_candidates(
        query, query_vector, pool=pool, bm25_scores=bm25_scores, scope=scope
    )
    directories = corpus.directories()
    best_chunks = [corpus.chunk_text(index) for index, _ in ranked[:LEXICAL_REFERENCE_CHUNKS]]
    readmes = readme_scores(
        directories,
        query,
        query_vector,
        search.config.alpha,
        k,
        reference_texts=best_chunks,
        allowed=None if scope is None else scope.readmes(directories),
    )
    nodes = [(score, 0, index) for index, score in ranked[:k]] + [
        (score, 1, j) for j, score in readmes
    ]
    nodes.sort(key=lambda node: (-node[0], node[1], node[2]))
    chosen: list[SearchHit] = []
    taken: set[int] = set()
    overviews = 0
    query_terms = frozenset(search_tokens(query))
    if SUMMARY_REQUEST_WORDS & query_terms and nodes:
        position = _requested_overview(directories, readmes, scope)
        if position is not None:
            overviews += 1
            chosen.append(_overview_hit(corpus, directories.paths[position], nodes[0][0]))
    for score, is_readme, key in nodes:
        if len(chosen) >= k:
            break
        if not is_readme:
            if key not in taken:
                taken.add(key)
                chosen.append(corpus.chunk_hit(key, score))
            continue
        if overviews >= MAX_READMES:
            continue
        overviews += 1
        directory = directories.paths[key]
        members = directories.subtree_chunks[key]
        if scope is not None:
            members = [index for index in members if scope.contains(index)]
        best = _best_in_subtree(
            search,
            directory,
            members,
            taken,
            ranked,
            bm25_scores,
            query_vector,
        )
        readme = corpus.readme_hit(directory, score)
        returned = [hit.text for hit in chosen if hit.kind == "chunk"]
        excerpt = readme_excerpt(readme.text, query_terms, returned)
        if excerpt is None:
            continue  # the best overview says nothing new about the question: none
        chosen.append(readme.model_copy(update={"text": excerpt}))
        for index, chunk_score in best[: max(0, min(README_EXPANSION, k - len(chosen)))]:
            taken.add(index)
            chosen.append(corpus.chunk_hit(index, chunk_score))
    return sorted(chosen, key=lambda hit: -hit.score)


def _requested_overview(
    directories: DirectoryIndex,
    readmes: Sequence[tuple[int, float]],
    scope: ResolvedScope | None,
) -> int | None:
    """The README a request for a summary gets: the one that speaks for the whole scope, or
    without a scope the best-scoring one (the topic the question names)."""
    if scope is not None:
        return scope.overview(directories)
    return max(readmes, key=lambda pair: (pair[1], -pair[0]))[0] if readmes else None


def _overview_hit(corpus: StoreCorpus, directory: str, score: float) -> SearchHit:
    """A README's whole summary and its key terms, ranked first (at the best hit's `score`)."""
    readme = corpus.readme_hit(directory, score)
    key_terms = readme_key_terms(corpus.readme_text(directory))
    if key_terms:
        readme = readme.model_copy(update={"text": f"{readme.text}\n\nKey terms: {key_terms}."})
    return readme


def readme_excerpt(
    summary: str, query_terms: frozenset[str], returned: Sequence[str]
) -> str | None:
    """A README's `summary` (heading, blank line, summary paragraph) cut to its heading and the
    sentences that share a term with the question and that none of the `returned` passages
    holds (a summary quotes its memories' TL;DRs, and a quote of a passage already returned
    tells the reader nothing); None when no sentence is left."""
    heading, _, body = summary.partition("\n\n") if summary.startswith("# ") else ("", "", summary)
    # A conversation's TL;DR leaves out the transcript's markup and hesitations; compare both
    # without them.
    held = [_plain(text) for text in returned]
    kept = [
        sentence
        for sentence in split_sentences(body)
        if query_terms & frozenset(search_tokens(sentence))
        and not any(_quoted(sentence) in text for text in held)
    ]
    if not kept:
        return None
    return "\n\n".join(part for part in (heading, " ".join(kept)) if part)


def _quoted(sentence: str) -> str:
    """How a summary sentence appears in the passage it was quoted from: a TL;DR ends with a
    full stop added where it was cut, and is cut after about 30 words."""
    return _plain(sentence).rstrip(".")[:QUOTE_PREFIX_CHARS]


def _plain(text: str) -> str:
    """`text` as a conversation's TL;DR quotes it (no markup, clean verbatim, one line),
    lowercased: a TL;DR capitalizes the word a hesitation opened."""
    return " ".join(clean_verbatim(without_annotations(text)).split()).lower()


def readme_scores(
    directories: DirectoryIndex,
    query: str,
    query_vector: np.ndarray,
    alpha: float,
    k: int,
    reference_texts: Sequence[str] = (),
    allowed: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """alpha * lexical + (1 - alpha) * cosine for the `k` READMEs closest to the query
    (directory position, score).

    The lexical part is the share of the query's terms in the README divided by the best share
    among these READMEs and the `reference_texts` (the best chunks), as a chunk's BM25 is
    divided by the best chunk's: a README that holds as many of the query's terms as the best
    chunk gets 1 like it, and then the cosines decide. A question about a specific fact names
    terms that the one passage holding it has and a summary rarely does; a question about a
    whole topic does not, and there the summary's closeness can win. `allowed` (bool per
    directory position) limits the READMEs to a search scope's."""
    terms = frozenset(search_tokens(query))
    closest = directories.closest(query_vector, k, allowed)
    shares = [
        len(terms & directories.readme_terms[position]) / len(terms) if terms else 0.0
        for position, _ in closest
    ]
    references = [
        len(terms & frozenset(search_tokens(text))) / len(terms) if terms else 0.0
        for text in reference_texts
    ]
    best = max([*shares, *references], default=0.0)
    return [
        (position, alpha * (share / best if best > 0 else 0.0) + (1.0 - alpha) * cosine)
        for (position, cosine), share in zip(closest, shares, strict=True)
    ]


def _best_in_subtree(
    search: HybridSearch,
    directory: str,
    members: Sequence[int],
    taken: set[int],
    ranked: Sequence[tuple[int, float]],
    bm25_scores: np.ndarray,
    query_vector: np.ndarray,
) -> list[tuple[int, float]]:
    """The directory's chunks not yet taken, best first: those among the query's candidates
    with their scores; when none is, every member scored (a README matched on its own)."""
    prefix = directory.strip("/") + "/"
    scored = [
        (index, score)
        for index, score in ranked
        if index not in taken and search.corpus.chunk_path(index).startswith(prefix)
    ]
    if scored or not len(members):
        return scored  # `ranked` is best first already
    indices = np.asarray(members, dtype=np.int64)
    free = indices[~np.isin(indices, np.fromiter(taken, dtype=np.int64, count=len(taken)))]
    scores = search.hybrid_scores(bm25_scores, query_vector, free)
    order = np.lexsort((free, -scores))
    return [(int(free[j]), float(scores[j])) for j in order]
