"""The agents' side of the Serve app: the gateway's work on Ray, and the MCP endpoint.

`ServeMemory` is the `MemoryPort` of an ingress replica: questions, searches and conversation
turns go to the query replicas through the ingress's admission queue, sessions and graph nodes
to the store's graph actor, writes to the store's write-job actor (`actors/write_jobs.py`).
`McpEndpoint` serves the MCP server (`memory_bank/agents/mcp_server.py`) over streamable HTTP at
/mcp: stateless, answered as JSON, so any ingress replica can take any request, and the caller
is the one the HTTP guard (`actors/serve_access.py`) stamped on the request.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError

from actors.serve_api import QueryRequest, RecallRequest, SearchRequest, TurnRequest
from memory_bank.agents.gateway import MemoryGateway
from memory_bank.agents.jobs import JobStatus, WriteRequest
from memory_bank.agents.mcp_server import MemoryMCP
from memory_bank.agents.port import AskMode, SearchMode
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import ToolError
from memory_bank.index.scope import SearchScope, scope_filters
from memory_bank.schemas import ChatResult, SearchHit

if TYPE_CHECKING:
    from actors.graph import RemoteKeeper
    from memory_bank.config import AppConfig


class Ingress(Protocol):
    """What the agents' port asks of an ingress replica (`serve_app.MemoryBankIngress`)."""

    config: AppConfig

    async def model_call(self, method: str, *args: Any) -> Any:
        """`method` of the query replicas, through the ingress's admission queue."""

    def graph_keeper(self) -> RemoteKeeper:
        """The store's graph actor (sessions, graph nodes)."""


MCP_PATH = "/mcp"


class ServeMemory:
    """`MemoryPort` of one ingress replica (see the module docstring)."""

    def __init__(self, ingress: Ingress, store: str) -> None:
        self._ingress = ingress
        self.store = Path(store)
        self._jobs = None

    async def ask(
        self,
        question: str,
        mode: AskMode,
        max_iterations: int | None,
        system_prompt: str | None,
        scope: SearchScope | None,
    ) -> ChatResult:
        within, under = scope_filters(scope)
        request = _valid(
            QueryRequest,
            question=question,
            mode=mode,
            max_iterations=max_iterations,
            system_prompt=system_prompt,
            within=within,
            under=under,
        )
        return await self._ingress.model_call("query", request)

    async def search(
        self, query: str, top_k: int | None, mode: SearchMode, scope: SearchScope | None
    ) -> list[SearchHit]:
        within, under = scope_filters(scope)
        request = _valid(
            SearchRequest, query=query, top_k=top_k, mode=mode, within=within, under=under
        )
        return await self._ingress.model_call("search", request)

    async def add_turn(
        self, conversation_id: str, speaker: str, text: str, timestamp: str | None
    ) -> TurnRecord:
        request = _valid(TurnRequest, speaker=speaker, text=text, timestamp=timestamp)
        return await self._ingress.model_call("add_turn", conversation_id, request)

    async def recall(
        self, conversation_id: str, query: str, max_tokens: int | None
    ) -> RecallResult:
        request = _valid(RecallRequest, query=query, max_tokens=max_tokens)
        return await self._ingress.model_call("recall", conversation_id, request)

    async def consolidate(self, conversation_id: str) -> int:
        return (await self._ingress.model_call("consolidate", conversation_id)).consolidated

    async def conversation(self, conversation_id: str) -> ConversationInfo:
        return await self._ingress.model_call("conversation", conversation_id)

    async def conversation_ids(self) -> list[str]:
        return await self._ingress.model_call("conversation_ids")

    async def graph(self, method: str, *args: Any) -> Any:
        keeper = self._ingress.graph_keeper()
        return await asyncio.to_thread(getattr(keeper, method), *args)

    async def submit(self, request: WriteRequest, key_id: str | None) -> JobStatus:
        return await self._actor().submit.remote(request, key_id)

    async def job(self, job_id: str) -> JobStatus:
        return await self._call("status", job_id)

    async def jobs(self, key_id: str | None, everyone: bool) -> list[JobStatus]:
        return await self._actor().list.remote(key_id, everyone)

    async def wait(self, job_id: str, timeout: float) -> JobStatus:
        return await self._call("wait", job_id, timeout)

    async def _call(self, method: str, *args: Any) -> Any:
        import ray

        from memory_bank.errors import MemoryBankError

        try:
            return await getattr(self._actor(), method).remote(*args)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, MemoryBankError):
                raise exc.cause from None
            raise

    def _actor(self):
        if self._jobs is None:
            from actors.write_jobs import write_jobs_actor

            self._jobs = write_jobs_actor(self.store, self._ingress.config)
        return self._jobs


class McpEndpoint:
    """The MCP server's streamable HTTP transport as an ASGI endpoint. Its session manager
    runs in a task of the replica's event loop, started by the first request."""

    def __init__(self, server: MemoryMCP) -> None:
        # The HTTP guard checks Host and Origin for every route; the SDK's own check would
        # hold a second, different allowlist.
        server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = server.session_manager
        self._ready: asyncio.Event | None = None
        self._runner: asyncio.Task | None = None

    async def __call__(self, scope, receive, send) -> None:
        if self._ready is None:
            self._ready = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        await self.manager.handle_request(scope, receive, send)

    async def _run(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await asyncio.Event().wait()  # until the replica's loop ends


def _valid(model, **fields):
    """A request model from an agent's arguments; invalid ones are the caller's error."""
    try:
        return model(**fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ToolError(f"invalid arguments: {problems}") from None


def wire_agents(
    app, ingress: Ingress, store: str, bound_host: str | None, legacy_key: str | None
) -> None:
    """Set up one ingress replica's gateway (over `ServeMemory`) and what hangs on it."""
    from memory_bank.agents.gateway import MemoryGateway

    gateway = MemoryGateway(ServeMemory(ingress, store), ingress.config)
    install_agents(app, gateway, bound_host, legacy_key)


def install_agents(
    app, gateway: MemoryGateway, bound_host: str | None = None, legacy_key: str | None = None
) -> None:
    """Put `gateway`, the chat endpoint, the MCP route, the request limits and the guard's
    policy on `app`."""
    from actors.serve_access import AccessPolicy
    from memory_bank.agents.chat import ChatEndpoint
    from memory_bank.agents.keys import KeyRing
    from memory_bank.agents.mcp_server import build_mcp

    config = gateway.config
    app.state.gateway = gateway
    app.state.limits = config.limits
    app.state.chat = ChatEndpoint(gateway, config.agents.router)
    endpoint = McpEndpoint(build_mcp(gateway, default_caller=None))
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != MCP_PATH]
    app.router.add_route(MCP_PATH, endpoint, methods=["GET", "POST", "DELETE"])
    # Last: the guard lets requests in only once everything they reach is there.
    app.state.access = AccessPolicy(KeyRing(gateway.store), config.agents, bound_host, legacy_key)
