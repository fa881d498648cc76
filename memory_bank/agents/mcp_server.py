"""The MCP server: the store's tools and files for any MCP client (the official `mcp` SDK).

`memory-bank mcp --store DIR` serves it over stdio to one local agent (the CLI), and the Serve
app mounts it at `/mcp` over streamable HTTP (`actors/serve_agents.py`), where each request
carries the caller its key stands for (`request.state.caller`, set by the HTTP guard). Every
tool goes through `MemoryGateway`, so permissions and a key's part of the store hold here as on
the JSON API.

Tools: `search` and `fetch` (the connector convention: search results carry ids that fetch
reads), `ls`, `cat`, `grep`, `ask`, `research`, `add`, `remove`, `job_status`, `history`, the
session tools (`session_start`, `session_intercept`, `session_prompt`) and the conversation tools
(`conversation_add_turn`, `conversation_recall`). Resources: every README and memory file as
`memory:///<store path>` (the template `memory:///{+path}` reads any of them).
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at runtime to
# build their schemas.
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ListResourcesResult
from mcp_types import Resource as MCPResource
from pydantic import BaseModel, Field

from memory_bank.agents.files import Fetched, resource_uri
from memory_bank.agents.gateway import MemoryGateway
from memory_bank.agents.jobs import JobStatus
from memory_bank.agents.keys import LOCAL_OWNER, Caller
from memory_bank.agents.port import AskMode, SearchMode
from memory_bank.conversation.records import RecallResult, TurnRecord
from memory_bank.errors import MemoryBankError
from memory_bank.query.tools import Entry, GrepMatch
from memory_bank.schemas import ChatResult, HistoryNote
from memory_bank.session.models import InsightDoc, InterceptResult, NodeDetail

T = TypeVar("T")
INSTRUCTIONS = """A hierarchical memory: documents were split into memories, filed in a tree of
directories with a README.md summarizing each. Start with `search` (or `ask` for an answer with
cited memory files); `fetch` a hit's id for its full text; browse with `ls` / `cat` / `grep`
(paths are store-relative, "/" is the root). `add` stores new text, `history` shows how a
memory's claims changed over time."""


Query = Annotated[str, Field(description="What to look for, in plain words.")]
StorePath = Annotated[str, Field(description='A store path; "/" is the root.')]
Question = Annotated[str, Field(description="A question in plain words.")]
ConversationId = Annotated[str, Field(description="Your conversation's id (you choose it).")]


class SearchResult(BaseModel):
    id: str = Field(description="Pass to `fetch` for the full text.")
    title: str
    path: str = Field(description="The memory file in the store (for `cat`).")
    source: str = Field(description="The document it came from, as it was added.")
    kind: str = Field(description="chunk: a memory; readme: a directory summary (tree mode).")
    score: float
    text: str = Field(description="The passage (raw text the memory was made from).")
    url: str = Field(description="The memory as an MCP resource.")


class SearchResults(BaseModel):
    results: list[SearchResult]


class Prompt(BaseModel):
    prompt: str


class Answer(BaseModel):
    """What `ask` and `research` return: the answer and what it rests on. The exploration's
    steps stay out: a client validates every result against its schema, and they would be
    most of it."""

    answer: str
    sources: list[str] = Field(description="The memory files the answer rests on (for `cat`).")
    confidence: float = Field(description="0..1; below about 0.3 the memory lacks the answer.")
    history: list[HistoryNote] = Field(
        description="Claims of these memories that later ones replaced, with when."
    )

    @classmethod
    def of(cls, result: ChatResult) -> "Answer":
        return cls(
            answer=result.answer,
            sources=result.sources,
            confidence=result.confidence,
            history=result.history,
        )


class MemoryMCP(MCPServer):
    """An `MCPServer` whose resource list is the caller's: a key limited to part of the store
    lists only that part."""

    def __init__(self, gateway: MemoryGateway, default_caller: Caller | None) -> None:
        super().__init__(
            "memory-bank",
            instructions=INSTRUCTIONS,
            log_level="WARNING",
            warn_on_duplicate_tools=False,
        )
        self.gateway = gateway
        # stdio: the local owner; over HTTP None, so a request the guard did not stamp fails.
        self.default_caller = default_caller

    def caller(self, ctx: Context) -> Caller:
        return self.caller_of(ctx.request_context.request)

    def caller_of(self, request: Any) -> Caller:
        """The caller of one request: the guard's stamp over HTTP, the default on stdio."""
        if request is None:
            if self.default_caller is None:
                raise ToolError("AccessDenied: no caller for this request")
            return self.default_caller
        caller = getattr(request.state, "caller", None)
        if not isinstance(caller, Caller):
            raise ToolError("AccessDenied: this request did not pass the key check")
        return caller

    async def _handle_list_resources(self, ctx: Any, params: Any) -> ListResourcesResult:
        caller = self.caller_of(ctx.request)
        listed = await _tool(self.gateway.resources(caller))
        return ListResourcesResult(
            resources=[
                MCPResource(
                    uri=item.uri,
                    name=item.name,
                    description=item.description,
                    mime_type=item.mime_type,
                )
                for item in listed
            ]
        )


async def _tool(call: Awaitable[T]) -> T:
    """The domain's errors as MCP tool errors: a message for the model, not a crash."""
    try:
        return await call
    except MemoryBankError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from exc


def build_mcp(gateway: MemoryGateway, default_caller: Caller | None = LOCAL_OWNER) -> MemoryMCP:
    """The MCP server over `gateway`; `default_caller` answers requests that carry none (stdio;
    None over HTTP, where the guard stamps every request)."""
    server = MemoryMCP(gateway, default_caller)
    wait = gateway.config.agents.write_wait_seconds
    _reading_tools(server)
    _writing_tools(server, wait)
    _session_tools(server)

    @server.resource(
        "memory:///{+path}",
        name="memory file",
        description="A README.md or memory file of the store, by its store path.",
        mime_type="text/markdown",
    )
    async def memory_file(path: str, ctx: Context) -> str:
        try:
            return await server.gateway.read_resource(server.caller(ctx), resource_uri(path))
        except MemoryBankError as exc:
            raise ResourceNotFoundError(str(exc)) from exc

    return server


def _reading_tools(server: MemoryMCP) -> None:
    gateway = server.gateway

    @server.tool()
    async def search(
        query: Query,
        ctx: Context,
        top_k: Annotated[int, Field(ge=1, le=50, description="Results wanted.")] = 5,
        mode: Annotated[
            SearchMode,
            Field(description="hybrid (default), bm25, vector, or tree (READMEs too)."),
        ] = "hybrid",
    ) -> SearchResults:
        """Find the memories that best match a query, best first. Each result's `id` can be
        passed to `fetch` for the full text."""
        hits = await _tool(gateway.search(server.caller(ctx), query, top_k, mode))
        return SearchResults(
            results=[
                SearchResult(
                    id=hit.chunk_id if hit.kind == "chunk" else hit.chunk_path,
                    title=hit.chunk_path.rsplit("/", 1)[-1].removesuffix(".md").replace("_", " "),
                    path=hit.chunk_path,
                    source=hit.source,
                    kind=hit.kind,
                    score=hit.score,
                    text=hit.text,
                    url=resource_uri(hit.chunk_path),
                )
                for hit in hits
            ]
        )

    @server.tool()
    async def fetch(
        id: Annotated[str, Field(description="An id from `search` (or a store path).")],
        ctx: Context,
    ) -> Fetched:
        """The full memory for an id that `search` returned: its memory file and the raw
        passage it was made from."""
        return await _tool(gateway.fetch(server.caller(ctx), id))

    @server.tool()
    async def ls(ctx: Context, path: StorePath = "/") -> list[Entry]:
        """List a directory of the memory tree: subdirectories and memory files (each
        directory has a README.md summarizing it)."""
        return await _tool(gateway.ls(server.caller(ctx), path))

    @server.tool()
    async def cat(path: StorePath, ctx: Context) -> str:
        """Read a memory file or README.md."""
        return await _tool(gateway.cat(server.caller(ctx), path))

    @server.tool()
    async def grep(
        pattern: Annotated[str, Field(description="Text to find (case-insensitive, not a regex).")],
        ctx: Context,
        path: StorePath = "/",
        max_matches: Annotated[int, Field(ge=1, le=1000)] = 50,
    ) -> list[GrepMatch]:
        """Lines containing `pattern` in the memory files under `path`."""
        return await _tool(gateway.grep(server.caller(ctx), pattern, path, max_matches))

    @server.tool()
    async def ask(
        question: Question,
        ctx: Context,
        max_iterations: Annotated[int | None, Field(ge=1, le=50)] = None,
    ) -> ChatResult:
        """Answer a question from the memory, citing the memory files used (`sources`), with
        a confidence; `history` lists claims that later ones replaced."""
        return await _tool(gateway.ask(server.caller(ctx), question, "navigate", max_iterations))

    @server.tool()
    async def research(
        question: Question,
        ctx: Context,
        max_iterations: Annotated[int | None, Field(ge=1, le=10)] = None,
    ) -> Answer:
        """Answer a multi-hop question by research rounds (plan, search, integrate, reflect);
        slower than `ask`, better when the answer joins facts from several memories."""
        mode: AskMode = "research"
        caller = server.caller(ctx)
        return Answer.of(await _tool(gateway.ask(caller, question, mode, max_iterations)))

    @server.tool()
    async def history(
        memory_id: Annotated[str, Field(description="A memory id (a search result's id).")],
        ctx: Context,
    ) -> NodeDetail:
        """A memory's node in the Query Graph: related memories, conflicts between claims, and
        the claims later memories superseded (with when)."""
        return await _tool(gateway.history(server.caller(ctx), memory_id))


def _writing_tools(server: MemoryMCP, wait: float) -> None:
    gateway = server.gateway

    async def settled(submitted: Callable[[], Awaitable[JobStatus]], caller: Caller) -> JobStatus:
        status = await _tool(submitted())
        return await _tool(gateway.job(caller, status.id, wait=wait))

    @server.tool()
    async def add(
        ctx: Context,
        text: Annotated[str | None, Field(description="Text to remember.")] = None,
        name: Annotated[
            str | None, Field(description="A file name for the text, e.g. notes.md.")
        ] = None,
        paths: Annotated[
            list[str] | None,
            Field(description="Files or folders on the server, under its configured roots."),
        ] = None,
    ) -> JobStatus:
        """Add text or server files to the memory. Waits for the write job (up to the server's
        limit) and returns its status; `job_status` follows one still running."""
        caller = server.caller(ctx)
        return await settled(
            lambda: gateway.add(caller, text=text, name=name, paths=tuple(paths or ())), caller
        )

    @server.tool()
    async def remove(
        sources: Annotated[
            list[str], Field(description="Documents: source paths as added, folders, or ids.")
        ],
        ctx: Context,
    ) -> JobStatus:
        """Remove documents (and every memory made from them) from the memory."""
        caller = server.caller(ctx)
        return await settled(lambda: gateway.remove(caller, tuple(sources)), caller)

    @server.tool()
    async def job_status(job_id: str, ctx: Context) -> JobStatus:
        """The status of a write job: state, stage, progress, counts, errors."""
        return await _tool(gateway.job(server.caller(ctx), job_id))


def _session_tools(server: MemoryMCP) -> None:
    gateway = server.gateway

    @server.tool()
    async def session_start(
        task_goal: Annotated[str, Field(description="The task or question you work on.")],
        ctx: Context,
    ) -> InsightDoc:
        """Open a Memory Bank session for a task: its Insight Doc (what is known, the pending
        sub-tasks). Report each step's findings with `session_intercept`."""
        return await _tool(gateway.open_session(server.caller(ctx), task_goal))

    @server.tool()
    async def session_intercept(
        session_id: str,
        context: Annotated[str, Field(description="What the step just done found.")],
        ctx: Context,
    ) -> InterceptResult:
        """Record a step's findings in the session: new memories, conflicts found or settled,
        the updated Insight Doc, and whether the task is done."""
        return await _tool(gateway.intercept(server.caller(ctx), session_id, context))

    @server.tool()
    async def session_prompt(session_id: str, ctx: Context) -> Prompt:
        """The session's enhanced prompt: the task, what is known and what to do next."""
        return Prompt(prompt=await _tool(gateway.enhance_prompt(server.caller(ctx), session_id)))

    @server.tool()
    async def conversation_add_turn(
        conversation_id: ConversationId,
        speaker: str,
        text: str,
        ctx: Context,
        timestamp: Annotated[str | None, Field(description="ISO 8601 time of the turn.")] = None,
    ) -> TurnRecord:
        """Add a turn to a live conversation memory (relative dates are resolved)."""
        caller = server.caller(ctx)
        return await _tool(gateway.add_turn(caller, conversation_id, speaker, text, timestamp))

    @server.tool()
    async def conversation_recall(
        conversation_id: ConversationId,
        query: str,
        ctx: Context,
        max_tokens: Annotated[int | None, Field(ge=16, le=100_000)] = None,
    ) -> RecallResult:
        """What a conversation memory recalls for a query: the running summary and the turns
        that match, with their neighbours."""
        caller = server.caller(ctx)
        return await _tool(gateway.recall(caller, conversation_id, query, max_tokens))
