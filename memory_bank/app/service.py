"""Answering and searching one store: the object the Python API and each Serve replica hold.

It opens the store read-only once and reopens it when the store version on disk changes
(a new ingest swapped in a new store), keeping the loaded embedding model across reloads. Its
agents (navigation, research) ask the process's LLM, or answer offline without one.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from memory_bank.config import AppConfig
from memory_bank.conversation.memory import Conversations
from memory_bank.errors import StoreError, ToolError
from memory_bank.graph.view import GraphView
from memory_bank.index.corpus import StoreCorpus
from memory_bank.index.embedders import build_embedder, check_store_embedder
from memory_bank.index.embedding import Embedder
from memory_bank.index.hybrid import HybridSearch
from memory_bank.index.scope import SearchScope
from memory_bank.index.search import Searcher
from memory_bank.limits import check_question
from memory_bank.llm import check_llm
from memory_bank.llm.seam import LLM
from memory_bank.query.currency import Currency
from memory_bank.query.navigation import NavigationAgent
from memory_bank.query.scoped import SCOPED_READS, answer_within
from memory_bank.query.tools import StoreTools
from memory_bank.research.model_loop import researcher
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.store.layout import META_FILE, is_store
from memory_bank.store.reader import StoreReader

# What identifies one committed store on disk: (inode, mtime_ns, size) of its meta file.
StoreStamp = tuple[int, int, int]
WARM_UP_QUESTION = "What does this memory hold?"


class _OpenStore:
    """Everything opened for one store version (the graph view follows the store itself)."""

    def __init__(
        self,
        store: Path,
        config: AppConfig,
        embedder: Embedder,
        graph: GraphView,
        llm: LLM | None,
    ) -> None:
        self.reader = StoreReader(store)
        check_store_embedder(
            self.reader.meta, config.embedding
        )  # query vectors must come from the same model
        corpus = StoreCorpus(self.reader)
        self.hybrid = HybridSearch(corpus, embedder, config.retrieval)
        self.searcher = Searcher(self.hybrid)
        self.tools = StoreTools(store, reader=self.reader, searcher=self.searcher)
        self.currency = Currency(graph, corpus, embedder)
        self.agent = NavigationAgent(self.tools, self.hybrid, embedder, config.retrieval, llm)
        self.agent.currency = self.currency
        self.researcher = researcher(self.hybrid, config.research, config.retrieval, llm)


class QueryService:
    def __init__(
        self,
        store: str | Path,
        config: AppConfig,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
    ) -> None:
        """`llm`: the process's LLM (None: the offline agents)."""
        self.store = Path(store)
        self.config = config
        self.llm = check_llm(config.llm, llm)
        self.embedder = embedder or build_embedder(config.embedding)
        self._open: _OpenStore | None = None
        self._stamp: StoreStamp | None = None
        self.graph = GraphView(self.store, config.retrieval.alpha)
        self._lock = threading.Lock()

    @property
    def store_version(self) -> str:
        return self._current().reader.store_version

    def _current(self) -> _OpenStore:
        """The open store, reopened when the store on disk is not the one loaded.

        A commit publishes a whole new version directory and switches the store path to it
        atomically (`store/location.py`), so one stat of the meta file per request tells
        whether to look closer; the store is reopened only when its version changed, not when
        identical content was rewritten. The path is resolved once per reopen, so everything
        opened together comes from one version even if another commit follows. The first
        request after a reopen loads the new version's indexes.
        """
        with self._lock:
            stamp = _meta_stamp(self.store)
            if self._open is not None and stamp is not None and stamp == self._stamp:
                return self._open
            version_dir = self.store.resolve()
            if not is_store(version_dir):
                raise StoreError(
                    f"no memory store at {self.store} (run `memory-bank ingest` first)"
                )
            # The stamp is taken before the path is resolved: a commit in between leaves a
            # stale stamp, which only costs another look on the next request.
            reader = StoreReader(version_dir)
            if self._open is None or self._open.reader.store_version != reader.store_version:
                self._open = _OpenStore(
                    version_dir, self.config, self.embedder, self.graph, self.llm
                )
            self._stamp = stamp
            return self._open

    def warm_up(self) -> None:
        """Load the model, the indexes and the grep corpus now rather than on the first request."""
        opened = self._current()
        opened.hybrid.warm_up()
        opened.tools.warm_up()
        # The agent and the search keep a few small structures of their own (README stems,
        # title links) that only a question builds; with everything above loaded it is quick.
        opened.agent.request(WARM_UP_QUESTION, max_iterations=3)

    def encode_queries(self, questions: list[str]) -> None:
        """Embed these questions (or search texts) in one forward pass ahead of the `ask` or
        `search` of each, which then finds its vector cached (`HybridSearch.encode_queries`)."""
        texts = [text for text in questions if text.strip()]
        if texts:
            self._current().hybrid.encode_queries(texts)

    def ask(
        self,
        question: str,
        max_iterations: int | None = None,
        system_prompt: str | None = None,
        scope: SearchScope | None = None,
    ) -> ChatResult:
        """The navigation agent's answer; within a `scope` (part of the store), the answer
        from that part's best memories alone (`query.scoped`)."""
        check_question(self.config.limits, question)
        if scope is not None and not scope.is_whole_store:
            return self._answer_within(question, scope, SCOPED_READS, system_prompt)
        iterations = max_iterations or self.config.retrieval.max_iterations
        opened = self._current()
        result = opened.agent.request(
            question, max_iterations=iterations, system_prompt=system_prompt
        )
        return _with_integrity_warnings(result, opened.reader)

    def research(
        self, question: str, max_iterations: int | None = None, scope: SearchScope | None = None
    ) -> ChatResult:
        """The research loop (plan -> search -> integrate -> reflect) for at most
        `max_iterations` rounds (default `research.max_iterations`); within a `scope`, the
        scoped answer from twice the memories of `ask`."""
        check_question(self.config.limits, question)
        if scope is not None and not scope.is_whole_store:
            return self._answer_within(question, scope, 2 * SCOPED_READS)
        opened = self._current()
        result = opened.researcher.research(question, max_iterations=max_iterations)
        return _with_integrity_warnings(result, opened.reader)

    def _answer_within(
        self, question: str, scope: SearchScope, reads: int, system_prompt: str | None = None
    ) -> ChatResult:
        if not question.strip():
            raise ToolError("the question must not be empty")
        opened = self._current()
        result = answer_within(
            question,
            scope,
            opened.searcher,
            self.llm,
            currency=opened.currency,
            reads=reads,
            system_prompt=system_prompt,
        )
        return _with_integrity_warnings(result, opened.reader)

    def search(
        self,
        query: str,
        top_k: int | None = None,
        mode: str = "hybrid",
        scope: SearchScope | None = None,
    ) -> list[SearchHit]:
        """Hits best first; a memory whose claim replaced a matching hit's is ranked above it
        and the hit carries the history (`query.currency`); in hybrid mode, session memories
        of the Query Graph (kind "memory") compete for the places by the same score. Within a
        `scope` (`index.scope`), every hit is of the scope: a newer claim from elsewhere shows
        as the hit's history only, and session memories, of no document, are left out."""
        check_question(self.config.limits, query, "search text")
        opened = self._current()
        hits = opened.searcher.search(query, top_k=top_k, mode=mode, scope=scope)
        hits = opened.currency.rerank(hits, query, opened.hybrid.corpus.chunk_hit)
        within = opened.searcher.resolve(scope)
        if within is not None:
            corpus = opened.hybrid.corpus
            return [
                hit
                for hit in hits
                if hit.kind != "chunk"
                or (
                    (index := corpus.index_of_path(hit.chunk_path)) is not None
                    and within.contains(index)
                )
            ]
        if mode == "hybrid" and query.strip():
            # What sessions learned (graph memories without a file) competes by the same score.
            k = top_k or self.config.retrieval.top_k
            found = opened.currency.session_hits(query, opened.hybrid.encode_query(query), k)
            if found:
                hits = sorted(hits + found, key=lambda hit: -hit.score)[:k]
        return hits

    def descend(self, query: str, beam_width: int | None = None) -> list[SearchHit]:
        width = beam_width or self.config.retrieval.beam_width
        return self._current().searcher.descend(query, width)

    def conversations(self, add_to_store: Callable[[list[Path]], object]) -> Conversations:
        """The store's live conversations, sharing this service's embedding model; their
        evicted turns are consolidated into the store by `add_to_store` (the caller's add
        path: this service only reads the store)."""
        return Conversations(self.store, self.embedder, self.config.conversation, add_to_store)

    def tree(self) -> DirectoryNode:
        return self._current().reader.tree()


def _with_integrity_warnings(result: ChatResult, reader: StoreReader) -> ChatResult:
    """`result`, warning of any file it rests on that is not what the store wrote: the memory
    files it read and cites, and the tables and index the search loaded."""
    warnings = reader.integrity.warnings([*result.files_read, *result.sources])
    return result.model_copy(update={"warnings": warnings}) if warnings else result


def _meta_stamp(store: Path) -> StoreStamp | None:
    try:
        stat = os.stat(store / META_FILE)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size
