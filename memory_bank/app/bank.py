"""`MemoryBank`: the Python API over one store.

Ingests run on an executor the caller chooses: in-process by default, or any factory such as
`pipeline.executor.RayExecutor` (the Ray layer is never imported here). Queries run in-process.
The bank is the root of its process: it opens the one LLM (none for the offline backend) and
hands it to everything it makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memory_bank.config import AppConfig
from memory_bank.conversation.memory import ConversationMemory, Conversations
from memory_bank.errors import StoreError
from memory_bank.index.embedders import build_embedder
from memory_bank.index.embedding import Embedder
from memory_bank.index.scope import SearchScope
from memory_bank.ingest.executor import Executor, LocalExecutor
from memory_bank.ingest.progress import ProgressSink
from memory_bank.ingest.runner import ExecutorFactory, IngestRunner
from memory_bank.llm import open_llm
from memory_bank.llm.seam import LLM
from memory_bank.schemas import ChatResult, CommitResult, DirectoryNode, IngestSummary, SearchHit

if TYPE_CHECKING:
    from memory_bank.app.service import QueryService
    from memory_bank.graph.storage import GraphStorage
    from memory_bank.ingest.graph_step import IngestGraphStep
    from memory_bank.session.service import SessionService
    from memory_bank.session.session import Session
    from memory_bank.store.verify import VerifyReport


def create_empty_store(store: Path, config: AppConfig) -> bool:
    """Make an empty store at `store` unless one is there; True when one was made. Taken
    under the store's lock, so two sessions starting together make one."""
    from memory_bank.store.layout import is_store
    from memory_bank.store.location import StoreLocation

    if is_store(store):
        return False
    with StoreLocation(store).lock():
        if is_store(store):
            return False
        from memory_bank.ingest.work import memory_recipe
        from memory_bank.store.snapshot import MemoryParts, StoreSnapshot
        from memory_bank.store.writer import meta_extra_from_config, write_store

        empty = StoreSnapshot(
            parts=MemoryParts(),
            tree=DirectoryNode(path="/", name=""),
            readmes={"/": "# Memory\n\nNothing has been added yet.\n"},
            meta={**meta_extra_from_config(config), "memory_recipe": memory_recipe(config)},
        )
        write_store(store, empty, taxonomy_config=config.taxonomy)
        return True


class MemoryBank:
    """A memory store on disk.

    `executor` makes the executor an ingest runs on from the config: None runs every stage in
    this process; `pipeline.executor.RayExecutor` runs the ingest as a Ray pipeline (joining a
    running Ray session, `config.ray.address` / `RAY_ADDRESS`, or starting a local one).
    """

    def __init__(
        self,
        store: str | Path,
        config: AppConfig | None = None,
        executor: ExecutorFactory | None = None,
        embedder: Embedder | None = None,
        llm: LLM | None = None,
    ) -> None:
        """`embedder`: an embedding model to share (else one is loaded on first use). `llm`:
        the process's LLM where the caller holds it already (a Serve replica); else the bank
        opens the one `config.llm` names."""
        self.store = Path(store)
        self.config = config or AppConfig()
        self.llm = llm if llm is not None else open_llm(self.config.llm)
        self._executor_factory = executor
        self._query: QueryService | None = None
        self._embedder: Embedder | None = embedder
        self._conversations: Conversations | None = None
        self._graph_storage: GraphStorage | None = None
        self._sessions: SessionService | None = None

    def add(
        self,
        files: Sequence[str | Path] | None = None,
        text: str | None = None,
        progress: ProgressSink | None = None,
    ) -> IngestSummary:
        """Ingest files/directories and/or raw text. Empty input creates nothing and raises nothing."""
        if not files and not (text and text.strip()):
            return IngestSummary(store=str(self.store), documents=0, chunks=0, directories=0)
        return self._runner().run(self.store, files, text, progress)

    def rebuild(self, progress: ProgressSink | None = None, reembed: bool = False) -> IngestSummary:
        """Plan the whole tree anew from the stored memories and vectors (no re-memorizing,
        unless the store was made with another memory recipe) and rewrite the store; what a
        scheduled rebuild runs after many incremental adds. `reembed`: the store may have been
        made by another embedder; every document is embedded (and memorized) again with the
        configured one."""
        from memory_bank.store.layout import is_store

        if not is_store(self.store):
            raise StoreError(f"no memory store at {self.store} to rebuild")
        return self._runner().run(self.store, progress=progress, replan=True, reembed=reembed)

    def remove(self, sources: Sequence[str]) -> CommitResult:
        """Remove stored documents (by source path as ingested, a directory holding them, or
        document id): their memories, files, vectors and index entries; other paths stay."""
        return self._runner().remove(self.store, list(sources))

    def request(
        self,
        question: str,
        max_iterations: int | None = None,
        system_prompt: str | None = None,
        within: Sequence[str] = (),
        under: str | None = None,
    ) -> ChatResult:
        """Answer `question` from the store (at most `max_iterations` tool calls; default
        `retrieval.max_iterations`); `system_prompt` adds instructions for an LLM backend.
        With `within` / `under` (as for `search`), the answer comes from that part of the
        store alone (`query.scoped`)."""
        return self._query_service().ask(
            question,
            max_iterations=max_iterations,
            system_prompt=system_prompt,
            scope=_scope(within, under),
        )

    def research(
        self,
        question: str,
        max_iterations: int | None = None,
        within: Sequence[str] = (),
        under: str | None = None,
    ) -> ChatResult:
        """Answer a multi-hop `question` by iterative research: plan, search, integrate the
        evidence, reflect on what is missing and search again, for at most `max_iterations`
        rounds (default `research.max_iterations`). The trajectory shows each round. With
        `within` / `under`, from that part of the store alone."""
        return self._query_service().research(
            question, max_iterations=max_iterations, scope=_scope(within, under)
        )

    def conversation(self, conversation_id: str) -> ConversationMemory:
        """A live conversation kept beside this store (created on first use): `add_turn`,
        `recall`, `consolidate` (the evicted turns into the store by `add`), `info`."""
        if self._conversations is None:
            self._conversations = Conversations(
                self.store,
                self._shared_embedder(),
                self.config.conversation,
                add_to_store=lambda files: self.add(files=files),
            )
        return self._conversations.get(conversation_id)

    def conversation_ids(self) -> list[str]:
        """The ids of the conversations kept beside this store."""
        from memory_bank.conversation.memory import CONVERSATION_ID, conversations_directory

        directory = conversations_directory(self.store)
        if not directory.is_dir():
            return []
        return sorted(
            p.name for p in directory.iterdir() if p.is_dir() and CONVERSATION_ID.fullmatch(p.name)
        )

    def search(
        self,
        query: str,
        top_k: int | None = None,
        mode: str = "hybrid",
        within: Sequence[str] = (),
        under: str | None = None,
    ) -> list[SearchHit]:
        """The best `top_k` hits (default `retrieval.top_k`) for `query`, best first. `within`
        restricts them to some documents (named as for `remove`: source path, a folder holding
        them, or document id), `under` to one store directory's subtree ("/topic/sub"); in tree
        mode only the READMEs mostly about that part compete (`memory_bank.index.scope`)."""
        return self._query_service().search(
            query, top_k=top_k, mode=mode, scope=_scope(within, under)
        )

    def descend(self, query: str, beam_width: int | None = None) -> list[SearchHit]:
        """The memories of the leaves reached from the root by reading READMEs alone, with a
        beam of `beam_width` directories per level (default `retrieval.beam_width`), best
        first: how far the tree itself leads to an answer, without flat search."""
        return self._query_service().descend(query, beam_width=beam_width)

    def tree(self) -> DirectoryNode:
        from memory_bank.store.reader import StoreReader

        return StoreReader(self.store).tree()

    def verify(self) -> VerifyReport:
        """Check every invariant of the store (`memory_bank.store.verify`), against this
        bank's taxonomy config; a broken store is a report listing its problems, not an error."""
        from memory_bank.store.verify import verify_store

        return verify_store(self.store, self.config.taxonomy)

    def session(self, task_goal: str) -> Session:
        """A session of the Memory Bank (seed 001) for an agent working on `task_goal`: the
        Insight Doc, `enhance_prompt()`, `intercept(context)`, `deep_retrieval(node_id)`. On a
        path without a store, an empty store is made first. What the session learns stays in
        the store's Query Graph, for later sessions, `request` and `search`."""
        from memory_bank.session.session import Session

        create_empty_store(self.store, self.config)
        return Session.open(self.session_service(), task_goal)

    def react_agent(
        self,
        roots: Sequence[str | Path] = (),
        max_calls: int = 20,
        max_context_tokens: int = 32_000,
    ):
        """A ReAct agent (seed 002 §6.4) over this store for `Session.run`: tools `search`,
        `visit` (files under `roots`, default the working directory) and `deep_retrieval`; the
        model is the configured OpenAI-compatible endpoint, or an offline policy (search the
        pending task, answer with the best passage)."""
        from memory_bank.session.react import ReactAgent
        from memory_bank.session.session import session_tools

        tools = session_tools(
            lambda query: self.search(query) if query.strip() else [],
            self.session_service(),
            [Path(r) for r in roots] or [Path.cwd()],
        )
        return ReactAgent(
            self.llm, tools, max_calls=max_calls, max_context_tokens=max_context_tokens
        )

    def session_service(self) -> SessionService:
        """The sessions of the store's graph in this process (on the graph this bank's commits
        change too)."""
        if self._sessions is None:
            from memory_bank.session.service import SessionService

            self._sessions = SessionService(
                self._graph_storage_of(self.store),
                self.config,
                self._shared_embedder(),
                llm=self.llm,
            )
        return self._sessions

    def graph(self, node_id: str | None = None):
        """The Query Graph: a summary (nodes, edges, conflicts, sessions), or one node with its
        neighbours, conflicts, history and raw entries."""
        from memory_bank.store.layout import is_store

        if not is_store(self.store):
            raise StoreError(f"no memory store at {self.store}")
        sessions = self.session_service()
        return sessions.summary() if node_id is None else sessions.node(node_id)

    def _runner(self) -> IngestRunner:
        executor: Executor
        if self._executor_factory is None:
            executor = LocalExecutor(self.config, self._shared_embedder(), graph=self._graph_step)
        else:
            executor = self._executor_factory(self.config)
        return IngestRunner(self.config, executor, self.llm)

    def _graph_step(self, store: Path) -> IngestGraphStep:
        from memory_bank.ingest.graph_step import IngestGraphStep

        return IngestGraphStep(
            self._graph_storage_of(store), self.config, self._shared_embedder().encode
        )

    def _graph_storage_of(self, store: Path) -> GraphStorage:
        """The graph of `store`: for this bank's store, the one its sessions and commits share."""
        from memory_bank.graph.storage import GraphStorage

        if Path(store).expanduser().absolute() != self.store.expanduser().absolute():
            return GraphStorage(store, self.config.retrieval.alpha)
        if self._graph_storage is None:
            self._graph_storage = GraphStorage(self.store, self.config.retrieval.alpha)
        return self._graph_storage

    def _shared_embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = build_embedder(self.config.embedding)
        return self._embedder

    def _query_service(self) -> QueryService:
        if self._query is None:
            from memory_bank.app.service import QueryService

            self._query = QueryService(
                self.store, self.config, self._shared_embedder(), llm=self.llm
            )
        return self._query


def _scope(within: Sequence[str], under: str | None) -> SearchScope | None:
    scope = SearchScope(documents=tuple(within), directory=under)
    return None if scope.is_whole_store else scope
