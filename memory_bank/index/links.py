"""Title links between documents, and the multi-hop expansion that follows them.

Many questions need two passages, and the second one shares few words with the question: "who
directed the film shot in Leland in 1986?" finds the page of Leland, which names the film, whose
own page names the director. Encyclopedic corpora, wikis, note collections and documentation
refer to other documents by their *title*, so a passage that names a title is a link to that
document. `TitleIndex` finds the documents a text names; `follow_links` lets the question and
the best hits lend relevance to the documents they name.

A chain of two passages is only as good as both of them, so a named document's best passage
scores the mean of its own score and its referrer's (the question itself counts as a referrer
with score 1); it keeps its own score when that is higher. Nothing here knows the dataset:
titles come from each document's title and, for plain text, a heading on its first line.

On encyclopedic paragraphs this lifts hybrid search most on bridge questions, and on
comparisons, whose compared entities are titles the question names (docs/benchmarks.md);
corpora without titled documents (story sections, meeting parts) are left unchanged. Cost per
query: a title scan of the three best hits (remembered per chunk) and one vectorized scoring of
the named documents' chunks.
"""

from __future__ import annotations

import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from memory_bank.text.lexicon import search_tokens

if TYPE_CHECKING:
    from memory_bank.store.reader import StoreReader

# A title naming more documents than this is too ambiguous to be a link ("Introduction").
MAX_DOCUMENTS_PER_TITLE = 3
# A first line of at most this many words, followed by a blank line, is a heading.
MAX_HEADING_WORDS = 12
# The best hits, after the question's own links, whose named documents get pulled in.
LINK_SEEDS = 3
# A hit lends its score to at most this many of the documents it names, those closest to the
# query: a long page names dozens of titles, the link a question follows is among the relevant.
MAX_LINKS_PER_SEED = 3
# A chain's score is this mix of its referrer's score and the named passage's own score: the
# plain mean, as a chain is only as good as both links (heavier weights scored a little
# higher on the one development set with titles, which is too little evidence to move it).
REFERRER_WEIGHT = 0.5

_WORD = re.compile(r"[^\W_]+")
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")  # "Lilu (mythology)" -> "Lilu"
_SENTENCE_END = (".", "!", "?", ":", ";", ",")

Scorer = Callable[[Sequence[int]], np.ndarray]


def title_aliases(title: str, text: str, *, conversation: bool = False) -> set[str]:
    """The names a document goes by: its title, the heading on its first line (plain text and
    Markdown, not conversations), each also without a trailing "(disambiguation)"."""
    names = {title.strip()}
    heading = None if conversation else first_line_heading(text)
    if heading:
        names.add(heading)
    names |= {_DISAMBIGUATION.sub("", name) for name in names}
    return {name for name in names if name}


def first_line_heading(text: str) -> str | None:
    """The first line when it reads as a heading: short, followed by a blank line, not ending
    like a sentence and not a "Speaker: words" turn. Markdown "#" marks are dropped."""
    first, newline, rest = text.lstrip().partition("\n")
    line = first.strip().lstrip("#").strip()
    if not newline or not line or rest.partition("\n")[0].strip():
        return None
    if len(line.split()) > MAX_HEADING_WORDS or line.endswith(_SENTENCE_END) or ": " in line:
        return None
    return line


class _Token(NamedTuple):
    text: str  # the BM25 token
    starts_name: bool  # its word begins with a capital, a digit or a letter without case
    capitalized: bool  # its word begins with a capital letter
    start: int  # character span of its word in the scanned text
    end: int


def _name_tokens(text: str) -> list[_Token]:
    """The BM25 tokens of `text` with what name matching needs to know about their words."""
    tokens: list[_Token] = []
    for match in _WORD.finditer(text):
        word = match.group(0)
        initial = word[0]
        starts_name = initial.isupper() or initial.isdigit() or initial.lower() == initial.upper()
        tokens.extend(
            _Token(token, starts_name, initial.isupper(), match.start(), match.end())
            for token in search_tokens(word)
        )
    return tokens


def _joined(text: str, left: _Token, right: _Token) -> bool:
    """Whether two capitalized words belong to one name: only a space or a hyphen between them."""
    return (
        left.capitalized and right.capitalized and text[left.end : right.start].strip() in ("", "-")
    )


class TitleIndex:
    """Document titles as token sequences, to find which documents a text names."""

    def __init__(self, documents: Mapping[str, Iterable[str]]) -> None:
        """`documents`: document id -> its aliases (see `title_aliases`)."""
        named: dict[tuple[str, ...], set[str]] = defaultdict(set)
        for document_id, aliases in documents.items():
            for alias in aliases:
                key = tuple(search_tokens(alias))
                # A bare number ("1999") is a year or a count far more often than a title.
                if key and not all(token.isdigit() for token in key):
                    named[key].add(document_id)
        self._documents = {
            key: frozenset(ids) for key, ids in named.items() if len(ids) <= MAX_DOCUMENTS_PER_TITLE
        }
        self._first_tokens = frozenset(key[0] for key in self._documents)
        self._longest = max((len(key) for key in self._documents), default=0)

    def __len__(self) -> int:
        return len(self._documents)

    def named_in(self, text: str) -> frozenset[str]:
        """Ids of the documents whose title `text` names as a whole name: starting with a capital
        (or a digit), and not part of a longer capitalized name. "born in Young, New South Wales"
        names "Young, New South Wales"; "a young man" does not name "Young", nor "the United
        States" "United"."""
        tokens = _name_tokens(text)
        found: set[str] = set()
        for start, first in enumerate(tokens):
            if not first.starts_name or first.text not in self._first_tokens:
                continue
            if start > 0 and _joined(text, tokens[start - 1], first):
                continue
            for end in range(min(start + self._longest, len(tokens)), start, -1):
                documents = self._documents.get(tuple(token.text for token in tokens[start:end]))
                if documents is not None:  # the longest title starting here, if it ends a name
                    if end == len(tokens) or not _joined(text, tokens[end - 1], tokens[end]):
                        found |= documents
                    break
        return frozenset(found)


def title_index_from_store(reader: StoreReader) -> TitleIndex:
    """The TitleIndex of every document in a store (titles and first lines of documents.parquet)."""
    documents = reader.documents()
    return TitleIndex(
        {
            document_id: title_aliases(title, text, conversation=kind == "conversation")
            for document_id, title, text, kind in zip(
                documents.column("document_id").to_pylist(),
                documents.column("title").to_pylist(),
                documents.column("text").to_pylist(),
                documents.column("kind").to_pylist(),
                strict=True,
            )
        }
    )


class LinkGraph:
    """Which documents each chunk names, found on first use and remembered."""

    def __init__(
        self, titles: TitleIndex, chunk_documents: Sequence[str], chunk_text: Callable[[int], str]
    ) -> None:
        """`chunk_documents[i]` is the document of memory i; `chunk_text(i)` its raw chunk text."""
        self.titles = titles
        self._chunk_documents = chunk_documents
        self._chunk_text = chunk_text
        self._chunks_of: dict[str, list[int]] = defaultdict(list)
        for index, document_id in enumerate(chunk_documents):
            self._chunks_of[document_id].append(index)
        self._named: dict[int, frozenset[str]] = {}
        self._lock = threading.Lock()

    def document_of(self, index: int) -> str:
        return self._chunk_documents[index]

    def chunks_of(self, document_id: str) -> list[int]:
        return self._chunks_of.get(document_id, [])

    def named_by_chunk(self, index: int) -> frozenset[str]:
        """Documents that chunk `index` names, other than its own."""
        with self._lock:
            known = self._named.get(index)
        if known is None:
            known = self.titles.named_in(self._chunk_text(index)) - {self._chunk_documents[index]}
            with self._lock:
                self._named[index] = known
        return known


def follow_links(
    ranked: Sequence[tuple[int, float]],
    query: str,
    graph: LinkGraph,
    own_scores: Scorer,
    seeds: int = LINK_SEEDS,
) -> list[tuple[int, float]]:
    """`ranked` (memory index, score; best first) with linked passages lifted in or added.

    First the documents the query names lend the query's score (1); then the best `seeds` hits
    of that ranking lend theirs to the documents they name (each to its MAX_LINKS_PER_SEED
    closest to the query). `own_scores` scores any memories for this query on the scale of
    `ranked` (the hybrid score).
    """
    scores = dict(ranked)
    named_by_query = graph.titles.named_in(query)
    passages = _best_passages(named_by_query, graph, own_scores)
    _lend(scores, dict.fromkeys(passages, 1.0), passages)

    named = {index: graph.named_by_chunk(index) for index, _ in _best_first(scores)[:seeds]}
    passages = _best_passages(frozenset().union(*named.values()), graph, own_scores)
    referrers: dict[str, float] = {}
    for index, documents in named.items():
        linked = [document_id for document_id in documents if document_id in passages]  # has chunks
        closest = sorted(linked, key=lambda document_id: (-passages[document_id][1], document_id))
        for document_id in closest[:MAX_LINKS_PER_SEED]:
            referrers[document_id] = max(referrers.get(document_id, 0.0), scores[index])
    _lend(scores, referrers, passages)
    return _best_first(scores)


def _best_passages(
    documents: Iterable[str], graph: LinkGraph, own_scores: Scorer
) -> dict[str, tuple[int, float]]:
    """document id -> (memory index, own score) of its best chunk for this query."""
    ordered = sorted(documents)
    members = [graph.chunks_of(document_id) for document_id in ordered]
    flat = [index for indices in members for index in indices]
    own = own_scores(flat) if flat else np.zeros(0, dtype=np.float32)
    best: dict[str, tuple[int, float]] = {}
    offset = 0
    for document_id, indices in zip(ordered, members, strict=True):
        if indices:
            local = own[offset : offset + len(indices)]
            position = int(np.argmax(local))  # the earliest chunk among equals
            best[document_id] = (indices[position], float(local[position]))
        offset += len(indices)
    return best


def _lend(
    scores: dict[int, float],
    referrers: Mapping[str, float],
    passages: Mapping[str, tuple[int, float]],
) -> None:
    """Raise each named document's best passage to its chain score (in place)."""
    for document_id, referrer_score in referrers.items():
        if document_id not in passages:
            continue
        index, own_score = passages[document_id]
        chain = REFERRER_WEIGHT * referrer_score + (1.0 - REFERRER_WEIGHT) * own_score
        scores[index] = max(scores.get(index, own_score), chain)


def _best_first(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
