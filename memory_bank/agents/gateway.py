"""`MemoryGateway`: what an agent may do with a store, checked against the caller's key.

The HTTP API, the MCP tools and the chat endpoint all go through here, so every way in applies
the same rules: the permission each operation needs (`keys.Permission`), and, for a key limited
to part of the store, only that part (`visibility.py`) in every result, search mode, file,
answer and graph node. The work itself is done by a `MemoryPort`: in-process over a
`MemoryBank` (`local.py`: the stdio MCP server), or on Ray Serve over the query replicas, the
graph actor and the write-job actor (`actors/serve_agents.py`). Files (ls, cat, grep, fetch,
resources) are read from the store's live version on disk (`files.py`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from memory_bank.agents.files import RESOURCE_SCHEME, Fetched, ResourceInfo, StoreFiles
from memory_bank.agents.jobs import JobStatus, WriteRequest
from memory_bank.agents.keys import Caller, KeyScope, Permission
from memory_bank.agents.port import AskMode, MemoryPort, SearchMode
from memory_bank.agents.uploads import Upload, allowed_paths, save_uploads, uploads_folder
from memory_bank.agents.visibility import Visibility, read_scope, relative
from memory_bank.config import AppConfig
from memory_bank.conversation.memory import check_conversation_id
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import AccessDenied, ToolError
from memory_bank.limits import check_files
from memory_bank.query.descent_policy import NOT_FOUND_ANSWER
from memory_bank.query.tools import Entry, GrepMatch
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.session.models import InsightDoc, InterceptResult, NodeDetail, SessionExport
from memory_bank.store.reader import StoreReader
from memory_bank.store.sources import documents_named

VISIBILITIES_KEPT = 16


class MemoryGateway:
    def __init__(self, port: MemoryPort, config: AppConfig) -> None:
        self.port = port
        self.store = Path(port.store)
        self.config = config
        self.files = StoreFiles(self.store)
        self._lock = threading.Lock()
        self._visibilities: OrderedDict[tuple[Path, KeyScope], Visibility] = OrderedDict()

    # --- reading ----------------------------------------------------------------------------

    async def search(
        self,
        caller: Caller,
        query: str,
        top_k: int | None = None,
        mode: SearchMode = "hybrid",
        within: tuple[str, ...] = (),
        under: str | None = None,
    ) -> list[SearchHit]:
        _require(caller, "read")
        # What the request names is limited (limits.max_files), not the key's part of the store.
        check_files(self.config.limits, len(within), "documents to search within")
        view = await self.visibility(caller)
        scope = view.search_scope(within, under)
        if scope is None:
            return []
        hits = await self.port.search(query, top_k, mode, None if scope.is_whole_store else scope)
        return view.hits(hits)

    async def ask(
        self,
        caller: Caller,
        question: str,
        mode: AskMode = "navigate",
        max_iterations: int | None = None,
        system_prompt: str | None = None,
        within: tuple[str, ...] = (),
        under: str | None = None,
    ) -> ChatResult:
        _require(caller, "read")
        check_files(self.config.limits, len(within), "documents to ask within")
        view = await self.visibility(caller)
        scope = view.search_scope(within, under)
        if scope is None:  # nothing this caller may see is asked about
            return ChatResult(
                question=question,
                answer=NOT_FOUND_ANSWER,
                sources=[],
                confidence=0.0,
                notes="nothing in this key's part of the store is within what was asked",
            )
        result = await self.port.ask(
            question, mode, max_iterations, system_prompt, None if scope.is_whole_store else scope
        )
        return view.result(result)

    async def tree(self, caller: Caller) -> DirectoryNode:
        _require(caller, "read")
        view = await self.visibility(caller)
        root = await asyncio.to_thread(lambda: StoreReader(self.files.version()).tree())
        return view.tree(root)

    async def ls(self, caller: Caller, path: str = "/") -> list[Entry]:
        _require(caller, "read")
        view = await self.visibility(caller)
        view.require_directory(path)
        entries = await asyncio.to_thread(lambda: self.files.tools().ls(path))
        return view.entries(path, entries)

    async def cat(self, caller: Caller, path: str) -> str:
        _require(caller, "read")
        view = await self.visibility(caller)
        view.require_file(path)
        return await asyncio.to_thread(lambda: self.files.tools().cat(path))

    async def grep(
        self, caller: Caller, pattern: str, path: str = "/", max_matches: int | None = None
    ) -> list[GrepMatch]:
        _require(caller, "read")
        view = await self.visibility(caller)
        if not view.sees_directory(path) and not view.sees_file(path):
            raise ToolError(f"grep: no such file or directory: {path!r}")
        tools = self.files.tools()
        limit = max_matches or tools.max_grep_matches
        # A scoped caller's lines are found among everyone's: ask for all, keep its own.
        wanted = limit if view.whole else 1_000_000
        matches = await asyncio.to_thread(lambda: tools.grep(pattern, path, max_matches=wanted))
        return view.grep(matches)[:limit]

    async def fetch(self, caller: Caller, memory_id: str) -> Fetched:
        """A memory by its chunk id (as search hits carry), or a README by its path."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return await asyncio.to_thread(self.files.fetch, view, memory_id)

    async def history(self, caller: Caller, node_id: str) -> NodeDetail:
        """A memory's Query Graph node: neighbours, conflicts, superseded claims, entries."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return view.node(await self.port.graph("node", node_id))

    async def resources(self, caller: Caller) -> list[ResourceInfo]:
        """READMEs first, then memory files, as this caller may see them."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return await asyncio.to_thread(self.files.resources, view)

    async def read_resource(self, caller: Caller, uri: str) -> str:
        prefix = f"{RESOURCE_SCHEME}://"
        if not uri.startswith(prefix):
            raise ToolError(f"not a memory resource: {uri!r} (expected {prefix}/path)")
        return await self.cat(caller, relative(uri.removeprefix(prefix)))

    # --- writing ----------------------------------------------------------------------------

    async def add(
        self,
        caller: Caller,
        text: str | None = None,
        name: str | None = None,
        paths: tuple[str, ...] = (),
        uploads: tuple[Upload, ...] = (),
    ) -> JobStatus:
        """Queue an add of `text` (kept as the file `name`, default text.md), `uploads`, and
        `paths` (files already on the server, under `agents.add_roots`)."""
        _require(caller, "write")
        if caller.scope.directory is not None:
            raise AccessDenied(
                "this key is limited to a store directory, where the taxonomy may not place "
                "new documents; use a key limited to documents, or an unscoped key"
            )
        check_files(self.config.limits, len(paths) + len(uploads), "files and folders to add")
        files = [str(path) for path in allowed_paths(self.config.agents.add_roots, caller, paths)]
        if text is not None and text.strip():
            uploads = (*uploads, Upload(name=name or "text.md", data=text.encode("utf-8")))
        if uploads:
            folder = uploads_folder(self.store, caller)
            saved = await asyncio.to_thread(save_uploads, folder, uploads)
            files += [str(path) for path in saved]
        if not files:
            raise ToolError("nothing to add: give text, uploads or paths")
        return await self.port.submit(WriteRequest(kind="add", files=files), caller.key_id)

    async def remove(self, caller: Caller, sources: tuple[str, ...]) -> JobStatus:
        """Queue the removal of the documents `sources` names (source path, folder or id)."""
        _require(caller, "write")
        if not sources:
            raise ToolError("nothing to remove: name documents by source path, folder or id")
        check_files(self.config.limits, len(sources), "documents to remove")
        view = await self.visibility(caller)
        if not view.whole:
            named = documents_named(view.sources, sources)
            if not named:
                raise ToolError("not in the store: " + ", ".join(sources))
            sources = tuple(sorted(named))
        request = WriteRequest(kind="remove", sources=list(sources))
        return await self.port.submit(request, caller.key_id)

    async def rebuild(self, caller: Caller) -> JobStatus:
        _require(caller, "admin")
        if not caller.scope.is_whole_store:
            raise AccessDenied("a rebuild re-plans the whole store: it needs an unscoped key")
        return await self.port.submit(WriteRequest(kind="rebuild"), caller.key_id)

    async def job(self, caller: Caller, job_id: str, wait: float = 0.0) -> JobStatus:
        _require(caller, "read")
        status = await (self.port.wait(job_id, wait) if wait > 0 else self.port.job(job_id))
        if not caller.allows("admin") and status.key_id != caller.key_id:
            raise ToolError(f"no write job {job_id!r}")  # another key's job is not there for it
        return status

    async def jobs(self, caller: Caller) -> list[JobStatus]:
        _require(caller, "read")
        return await self.port.jobs(caller.key_id, everyone=caller.allows("admin"))

    # --- conversations and sessions ---------------------------------------------------------

    def conversation_id(self, caller: Caller, conversation_id: str) -> str:
        """The stored id of `caller`'s conversation (see `conversation_prefix`)."""
        return conversation_prefix(caller) + check_conversation_id(conversation_id)

    async def add_turn(
        self,
        caller: Caller,
        conversation_id: str,
        speaker: str,
        text: str,
        timestamp: str | None = None,
    ) -> TurnRecord:
        _require(caller, "write")
        stored = self.conversation_id(caller, conversation_id)
        return await self.port.add_turn(stored, speaker, text, timestamp)

    async def recall(
        self, caller: Caller, conversation_id: str, query: str, max_tokens: int | None = None
    ) -> RecallResult:
        _require(caller, "read")
        stored = self.conversation_id(caller, conversation_id)
        return await self.port.recall(stored, query, max_tokens)

    async def consolidate(self, caller: Caller, conversation_id: str) -> int:
        _require(caller, "write")
        return await self.port.consolidate(self.conversation_id(caller, conversation_id))

    async def conversation(self, caller: Caller, conversation_id: str) -> ConversationInfo:
        _require(caller, "read")
        info = await self.port.conversation(self.conversation_id(caller, conversation_id))
        return info.model_copy(update={"conversation_id": conversation_id})

    async def conversation_ids(self, caller: Caller) -> list[str]:
        _require(caller, "read")
        own = conversation_prefix(caller)
        ids = await self.port.conversation_ids()
        return [cid.removeprefix(own) for cid in ids if cid.startswith(own)]

    async def session(self, caller: Caller, method: str, *args: Any) -> Any:
        """A Memory Bank session call (open_session, insight_doc, intercept, enhance_prompt,
        close): the session's agents read the whole store's Query Graph, so a key limited to
        part of the store cannot run one."""
        needed: Permission = "read" if method in ("insight_doc", "enhance_prompt") else "write"
        _require(caller, needed)
        if not caller.scope.is_whole_store:
            raise AccessDenied(
                "sessions plan and enhance prompts over the whole store's Query Graph; they "
                "need a key that is not limited to part of the store"
            )
        return await self.port.graph(method, *args)

    async def open_session(self, caller: Caller, task_goal: str) -> InsightDoc:
        return await self.session(caller, "open_session", task_goal)

    async def intercept(self, caller: Caller, session_id: str, context: str) -> InterceptResult:
        return await self.session(caller, "intercept", session_id, context)

    async def enhance_prompt(self, caller: Caller, session_id: str) -> str:
        return await self.session(caller, "enhance_prompt", session_id)

    async def close_session(self, caller: Caller, session_id: str) -> SessionExport:
        return await self.session(caller, "close", session_id)

    # --- what a caller sees -----------------------------------------------------------------

    async def visibility(self, caller: Caller) -> Visibility:
        if caller.scope.is_whole_store:
            return Visibility.everything()
        version = self.files.version()
        scope = read_scope(self.store, caller)
        with self._lock:
            known = self._visibilities.get((version, scope))
        if known is None:
            known = await asyncio.to_thread(Visibility.of, scope, StoreReader(version))
            with self._lock:
                self._visibilities[(version, scope)] = known
                while len(self._visibilities) > VISIBILITIES_KEPT:
                    self._visibilities.popitem(last=False)
        return known


def conversation_prefix(caller: Caller) -> str:
    """What `caller`'s conversation ids are kept under: a scoped key's conversations are its
    own (`plan` is kept as `k<key id>.plan`); an unscoped key's are the store's."""
    return "" if caller.scope.is_whole_store else f"k{caller.key_id}."


def _require(caller: Caller, needed: Permission) -> None:
    if not caller.allows(needed):
        raise AccessDenied(f"this key has {caller.permission} permission; this needs {needed}")
