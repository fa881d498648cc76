"""`MemoryGateway`: what an agent may do with a store, checked against the caller's key.

The HTTP API, the MCP tools and the chat endpoint all go through here, so every way in applies
the same rules: the permission each operation needs (`keys.Permission`), and, for a key limited
to part of the store, only that part (`visibility.py`) in every result, search mode, file,
answer and graph node. The work itself is done by a `MemoryPort`: in-process over a
`MemoryBank` (`local.py`: the stdio MCP server), or on Ray Serve over the query replicas, the
graph actor and the write-job actor (`actors/serve_agents.py`). Files (ls, cat, grep, fetch,
resources) are read here, from the store's live version on disk.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from memory_bank.agents.jobs import JobStatus, WriteRequest, uploads_directory
from memory_bank.agents.keys import Caller, KeyScope, Permission
from memory_bank.agents.visibility import Visibility, relative
from memory_bank.config import AppConfig
from memory_bank.conversation.memory import check_conversation_id
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import AccessDenied, StoreError, ToolError
from memory_bank.index.scope import SearchScope
from memory_bank.query.navigation import NOT_FOUND_ANSWER
from memory_bank.query.tools import Entry, GrepMatch, StoreTools
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.session.models import InsightDoc, InterceptResult, NodeDetail, SessionExport
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader
from memory_bank.store.sources import documents_named
from memory_bank.text.sources import SUPPORTED_SUFFIXES

SearchMode = Literal["hybrid", "bm25", "vector", "tree"]
AskMode = Literal["navigate", "research"]
MAX_LISTED_RESOURCES = 2000
VISIBILITIES_KEPT = 16
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class MemoryPort(Protocol):
    """The work behind the gateway (see the module docstring); never checks permissions."""

    store: Path

    async def ask(
        self,
        question: str,
        mode: AskMode,
        max_iterations: int | None,
        system_prompt: str | None,
        scope: SearchScope | None,
    ) -> ChatResult: ...

    async def search(
        self, query: str, top_k: int | None, mode: SearchMode, scope: SearchScope | None
    ) -> list[SearchHit]: ...

    async def add_turn(
        self, conversation_id: str, speaker: str, text: str, timestamp: str | None
    ) -> TurnRecord: ...

    async def recall(
        self, conversation_id: str, query: str, max_tokens: int | None
    ) -> RecallResult: ...

    async def consolidate(self, conversation_id: str) -> int: ...

    async def conversation(self, conversation_id: str) -> ConversationInfo: ...

    async def conversation_ids(self) -> list[str]: ...

    async def graph(self, method: str, *args: Any) -> Any:
        """A call of the store's graph keeper: open_session, insight_doc, intercept,
        enhance_prompt, close, node."""

    async def submit(self, request: WriteRequest, key_id: str | None) -> JobStatus: ...

    async def job(self, job_id: str) -> JobStatus: ...

    async def jobs(self, key_id: str | None, everyone: bool) -> list[JobStatus]: ...

    async def wait(self, job_id: str, timeout: float) -> JobStatus: ...


class Upload(BaseModel):
    """A file sent to be added: its name (suffix picks the reader) and its bytes."""

    name: str
    data: bytes


class Fetched(BaseModel):
    """One memory (or README) in full: what `fetch` returns for an id a search gave."""

    id: str
    title: str
    path: str
    uri: str
    source: str = ""
    memory: str  # the memory file: frontmatter and memory text
    text: str  # the raw passage it was made from (a README: the README itself)


class ResourceInfo(BaseModel):
    uri: str
    name: str
    description: str
    mime_type: str = "text/markdown"


RESOURCE_SCHEME = "memory"


def resource_uri(path: str) -> str:
    """`memory:///a/b/x.md` for the store path `a/b/x.md`."""
    return f"{RESOURCE_SCHEME}:///{relative(path)}"


class MemoryGateway:
    def __init__(self, port: MemoryPort, config: AppConfig) -> None:
        self.port = port
        self.store = Path(port.store)
        self.config = config
        self._lock = threading.Lock()
        self._tools: StoreTools | None = None
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
        root = await asyncio.to_thread(lambda: StoreReader(self._version()).tree())
        return view.tree(root)

    async def ls(self, caller: Caller, path: str = "/") -> list[Entry]:
        _require(caller, "read")
        view = await self.visibility(caller)
        view.require_directory(path)
        entries = await asyncio.to_thread(lambda: self._store_tools().ls(path))
        return view.entries(path, entries)

    async def cat(self, caller: Caller, path: str) -> str:
        _require(caller, "read")
        view = await self.visibility(caller)
        view.require_file(path)
        return await asyncio.to_thread(lambda: self._store_tools().cat(path))

    async def grep(
        self, caller: Caller, pattern: str, path: str = "/", max_matches: int | None = None
    ) -> list[GrepMatch]:
        _require(caller, "read")
        view = await self.visibility(caller)
        if view.sees_directory(path) is False and view.sees_file(path) is False:
            raise ToolError(f"grep: no such file or directory: {path!r}")
        tools = self._store_tools()
        limit = max_matches or tools.max_grep_matches
        # A scoped caller's lines are found among everyone's: ask for all, keep its own.
        wanted = limit if view.whole else 1_000_000
        matches = await asyncio.to_thread(lambda: tools.grep(pattern, path, max_matches=wanted))
        return view.grep(matches)[:limit]

    async def fetch(self, caller: Caller, memory_id: str) -> Fetched:
        """A memory by its chunk id (as search hits carry), or a README by its path."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return await asyncio.to_thread(self._fetch, view, memory_id)

    def _fetch(self, view: Visibility, memory_id: str) -> Fetched:
        tools = self._store_tools()
        if memory_id.endswith(".md") or memory_id.startswith(f"{RESOURCE_SCHEME}://"):
            path = relative(memory_id.removeprefix(f"{RESOURCE_SCHEME}://"))
            view.require_file(path, "fetch")
            text = tools.cat(path)
            return Fetched(
                id=path, title=path, path=path, uri=resource_uri(path), memory=text, text=text
            )
        if not view.sees_memory(memory_id):
            raise ToolError(f"fetch: no memory with id {memory_id!r}")
        memories = tools.reader.memories().select(["chunk_id", "title", "path", "source"])
        row = next(
            (r for r in memories.to_pylist() if r["chunk_id"] == memory_id),
            None,
        )
        if row is None:
            raise ToolError(f"fetch: no memory with id {memory_id!r}")
        return Fetched(
            id=memory_id,
            title=row["title"].replace("_", " "),
            path=row["path"],
            uri=resource_uri(row["path"]),
            source=row["source"],
            memory=tools.cat(row["path"]),
            text=tools.deep_retrieval(memory_id),
        )

    async def history(self, caller: Caller, node_id: str) -> NodeDetail:
        """A memory's Query Graph node: neighbours, conflicts, superseded claims, entries."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return view.node(await self.port.graph("node", node_id))

    async def resources(self, caller: Caller) -> list[ResourceInfo]:
        """READMEs first, then memory files, as this caller may see them."""
        _require(caller, "read")
        view = await self.visibility(caller)
        return await asyncio.to_thread(self._resources, view)

    def _resources(self, view: Visibility) -> list[ResourceInfo]:
        reader = StoreReader(self._version())
        listed = [
            ResourceInfo(
                uri=resource_uri(f"{node.path.strip('/')}/README.md".lstrip("/")),
                name=f"README of {node.path}",
                description=node.description or f"Summary of {node.path}",
            )
            for node in reader.tree().iter_nodes()
            if view.sees_file(f"{node.path.strip('/')}/README.md".lstrip("/"))
        ]
        for row in reader.memories().select(["path", "title", "tldr"]).to_pylist():
            if len(listed) >= MAX_LISTED_RESOURCES:
                break
            if view.sees_file(row["path"]):
                listed.append(
                    ResourceInfo(
                        uri=resource_uri(row["path"]),
                        name=row["title"].replace("_", " "),
                        description=row["tldr"],
                    )
                )
        return listed

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
        files = [str(path) for path in self._allowed_paths(caller, paths)]
        if text is not None and text.strip():
            uploads = (*uploads, Upload(name=name or "text.md", data=text.encode("utf-8")))
        if uploads:
            files += [str(path) for path in self._save_uploads(caller, uploads)]
        if not files:
            raise ToolError("nothing to add: give text, uploads or paths")
        return await self.port.submit(WriteRequest(kind="add", files=files), caller.key_id)

    async def remove(self, caller: Caller, sources: tuple[str, ...]) -> JobStatus:
        """Queue the removal of the documents `sources` names (source path, folder or id)."""
        _require(caller, "write")
        if not sources:
            raise ToolError("nothing to remove: name documents by source path, folder or id")
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
        """A scoped key's conversations are its own: kept under `k<key id>.<id>`."""
        check_conversation_id(conversation_id)
        if caller.scope.is_whole_store:
            return conversation_id
        return f"k{caller.key_id}.{conversation_id}"

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
        ids = await self.port.conversation_ids()
        if caller.scope.is_whole_store:
            return ids
        own = f"k{caller.key_id}."
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
        version = self._version()
        scope = self._read_scope(caller)
        with self._lock:
            known = self._visibilities.get((version, scope))
        if known is None:
            known = await asyncio.to_thread(Visibility.of, scope, StoreReader(version))
            with self._lock:
                self._visibilities[(version, scope)] = known
                while len(self._visibilities) > VISIBILITIES_KEPT:
                    self._visibilities.popitem(last=False)
        return known

    def _read_scope(self, caller: Caller) -> KeyScope:
        """A key limited to documents also sees what it uploaded itself."""
        scope = caller.scope
        if not scope.documents:
            return scope
        own = str(self._uploads_folder(caller))
        return scope.model_copy(update={"documents": (*scope.documents, own)})

    def _version(self) -> Path:
        version = self.store.resolve()
        if not is_store(version):
            raise StoreError(f"no memory store at {self.store} (run `memory-bank ingest` first)")
        return version

    def _store_tools(self) -> StoreTools:
        version = self._version()
        with self._lock:
            if self._tools is None or self._tools.root != version:
                self._tools = StoreTools(version)
            return self._tools

    def _allowed_paths(self, caller: Caller, paths: tuple[str, ...]) -> list[Path]:
        roots = [Path(root).expanduser().resolve() for root in self.config.agents.add_roots]
        allowed: list[Path] = []
        for given in paths:
            path = Path(given).expanduser().resolve()
            if not any(path == root or path.is_relative_to(root) for root in roots):
                raise AccessDenied(
                    f"{given} is not under a directory this server adds from "
                    "(agents.add_roots); upload the file instead"
                )
            if caller.scope.documents and not _inside_named(path, caller.scope.documents):
                raise AccessDenied(f"{given} is outside the documents this key is limited to")
            if not path.exists():
                raise ToolError(f"{given} does not exist on the server")
            allowed.append(path)
        return allowed

    def _uploads_folder(self, caller: Caller) -> Path:
        return uploads_directory(self.store) / (f"k{caller.key_id}" if caller.key_id else "local")

    def _save_uploads(self, caller: Caller, uploads: tuple[Upload, ...]) -> list[Path]:
        folder = self._uploads_folder(caller) / secrets.token_hex(6)
        saved = []
        for upload in uploads:
            name = _SAFE_NAME.sub("_", Path(upload.name).name).lstrip(".") or "upload.md"
            if Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
                raise ToolError(
                    f"{upload.name}: unsupported type; send one of "
                    + ", ".join(sorted(SUPPORTED_SUFFIXES))
                )
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / name
            target.write_bytes(upload.data)
            saved.append(target)
        return saved


def _require(caller: Caller, needed: Permission) -> None:
    if not caller.allows(needed):
        raise AccessDenied(f"this key has {caller.permission} permission; this needs {needed}")


def _inside_named(path: Path, names: tuple[str, ...]) -> bool:
    for name in names:
        target = Path(name).expanduser().resolve()
        if path == target or path.is_relative_to(target):
            return True
    return False
