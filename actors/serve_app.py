"""The HTTP API: a Ray Serve deployment with a FastAPI ingress over one memory store.

    POST /query   {"question": ..., "mode"?: "navigate" | "research", "max_iterations"?,
                   "system_prompt"?}                               -> ChatResult
    POST /search  {"query": ..., "top_k"?, "mode": "hybrid"}         -> list[SearchHit]
    GET  /tree                                                     -> DirectoryNode
    POST /conversations/{id}/turns  {"speaker", "text", "timestamp"?}  -> TurnRecord
    POST /conversations/{id}/recall {"query", "max_tokens"?}          -> RecallResult
    POST /conversations/{id}/consolidate                  -> {"consolidated": N}
    GET  /conversations/{id}                                       -> ConversationInfo
    GET  /conversations                                            -> list of ids
    GET  /tools                                  -> the store tools as OpenAI function schemas
    GET  /healthz                                                  -> {"status", "store_version"}
    POST /sessions            {"task_goal": ...}                    -> InsightDoc (doc_id = id)
    GET  /sessions/{id}                                            -> InsightDoc
    POST /sessions/{id}/intercept {"context": ..., "task_type"?}   -> InterceptResult
    GET  /sessions/{id}/prompt                          -> {"prompt": the enhanced prompt}
    POST /sessions/{id}/close                                      -> SessionExport
    GET  /memory/{id}          -> NodeDetail: a memory, its neighbours, history, raw entries
    GET  /docs, /openapi.json                                      (FastAPI defaults)

Each replica opens the store read-only through one `QueryService`, built and warmed up in the
constructor, so the model and the indexes load once per replica; a new ingest is picked up by
the service itself when the store version on disk changes. Sessions and memories go to the
store's graph actor (`actors/graph.py`): every replica sees the same sessions.

Three ways to run it:
- `memory-bank serve --store DIR` (`run_blocking` below),
- `serve run actors.serve_app:build_app store=DIR [config=FILE] [num_replicas=N]`,
- `serve deploy configs/serve.yaml`.
"""

# No `from __future__ import annotations` here: Serve's ingress rebuilds the handler signatures
# outside this module, so FastAPI could not resolve string annotations and would take the
# request models for query parameters.
import threading
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ray import serve
from ray.serve import Application

from memory_bank.config import AppConfig, load_config
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import ConfigError, MemoryBankError, SessionError, StoreError, ToolError
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.session.models import (
    InsightDoc,
    InterceptResult,
    NodeDetail,
    SessionExport,
)

APP_NAME = "memory-bank"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
# A query embeds a handful of words: one torch thread is as fast as two here and leaves the
# other core to the Serve proxy and to a second replica (see bench/query.py).
REPLICA_TORCH_THREADS = 1


# --- request and response models ----------------------------------------------------------------


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="The question to answer from the store.")
    mode: Literal["navigate", "research"] = Field(
        "navigate",
        description="navigate: the agent explores the tree; research: plan -> search -> "
        "integrate -> reflect rounds for multi-hop questions.",
    )
    max_iterations: int | None = Field(
        None,
        ge=1,
        le=50,
        description="Navigation steps, or research rounds, at most (default: "
        "retrieval.max_iterations / research.max_iterations).",
    )
    system_prompt: str | None = Field(
        None,
        max_length=8000,
        description="Extra instructions for the navigation agent (LLM backend only).",
    )

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("question must not be blank")
        return question


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(description="Search text; a blank query finds nothing.")
    top_k: int | None = Field(None, ge=1, le=100, description="Hits (default: retrieval.top_k).")
    mode: Literal["hybrid", "bm25", "vector", "tree"] = "hybrid"


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=100_000)
    timestamp: str | None = Field(
        None, description="ISO 8601; relative dates in the text are resolved against it."
    )


class RecallRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=16, le=100_000)


class Consolidated(BaseModel):
    consolidated: int


class SessionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_goal: str = Field(min_length=1, description="The task or question of the session.")


class InterceptRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    context: str = Field(min_length=1, description="The context of the task just carried out.")
    task_type: Literal["normal", "cross_validate"] | None = Field(
        None, description="Default: from the pending task (a cross-validation settles conflicts)."
    )
    attachments: list[tuple[str, str]] = Field(
        default_factory=list, description="(type, path) pairs: files kept with the raw context."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)


class Prompt(BaseModel):
    prompt: str


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    store_version: str


class ErrorBody(BaseModel):
    error: str  # the error class, e.g. "StoreError"
    detail: str  # a message meant for the caller


# --- domain errors as JSON ----------------------------------------------------------------------

app = FastAPI(
    title="memory-bank",
    summary="Ask and search a hierarchical memory store.",
    version="0.1.0",
)

# A store being replaced or missing is the server's problem and may pass (503); bad arguments
# are the caller's (400). Anything else from the domain is still reported, without a traceback.
_ERROR_STATUS: tuple[tuple[type[MemoryBankError], int], ...] = (
    (SessionError, 404),
    (StoreError, 503),
    (ToolError, 400),
    (ConfigError, 400),
)
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Invalid arguments."},
    404: {"model": ErrorBody, "description": "No such session or memory."},
    503: {"model": ErrorBody, "description": "The store is missing or being replaced."},
}


def error_status(exc: MemoryBankError) -> int:
    return next((status for kind, status in _ERROR_STATUS if isinstance(exc, kind)), 500)


@app.exception_handler(MemoryBankError)
async def _domain_error(_: Request, exc: MemoryBankError) -> JSONResponse:
    body = ErrorBody(error=type(exc).__name__, detail=str(exc))
    return JSONResponse(status_code=error_status(exc), content=body.model_dump())


# --- the deployment -----------------------------------------------------------------------------


@serve.deployment(name="MemoryBank", ray_actor_options={"num_cpus": 1})
@serve.ingress(app)
class MemoryBankServer:
    """One replica: a warmed-up QueryService over an absolute store path."""

    def __init__(self, store: str, config: dict[str, Any] | None = None) -> None:
        import torch

        from memory_bank.query.service import QueryService

        torch.set_num_threads(REPLICA_TORCH_THREADS)
        self._config = AppConfig.model_validate(config or {})
        self._store = store
        self._service = QueryService(Path(store), self._config)
        self._keeper = None
        self._service.warm_up()  # the model, every index and the grep corpus, before any traffic
        self._conversations = self._service.conversations()
        # FastAPI runs these handlers on a thread pool; the embedding model's tokenizer must not
        # be entered by two threads at once, so domain calls take turns within a replica (the
        # work is CPU-bound on one core anyway). Scale out with num_replicas instead.
        self._turn = threading.Lock()

    @app.post("/query", response_model=ChatResult, responses=_ERROR_RESPONSES)
    def query(self, request: QueryRequest) -> ChatResult:
        with self._turn:
            if request.mode == "research":
                return self._service.research(
                    request.question, max_iterations=request.max_iterations
                )
            return self._service.ask(
                request.question,
                max_iterations=request.max_iterations,
                system_prompt=request.system_prompt,
            )

    @app.post("/search", response_model=list[SearchHit], responses=_ERROR_RESPONSES)
    def search(self, request: SearchRequest) -> list[SearchHit]:
        with self._turn:
            return self._service.search(request.query, top_k=request.top_k, mode=request.mode)

    @app.post(
        "/conversations/{conversation_id}/turns",
        response_model=TurnRecord,
        responses=_ERROR_RESPONSES,
    )
    def add_turn(self, conversation_id: str, request: TurnRequest) -> TurnRecord:
        with self._turn:
            memory = self._conversations.get(conversation_id)
            return memory.add_turn(request.speaker, request.text, request.timestamp)

    @app.post(
        "/conversations/{conversation_id}/recall",
        response_model=RecallResult,
        responses=_ERROR_RESPONSES,
    )
    def recall(self, conversation_id: str, request: RecallRequest) -> RecallResult:
        with self._turn:
            memory = self._conversations.get(conversation_id)
            return memory.recall(request.query, max_tokens=request.max_tokens)

    @app.post(
        "/conversations/{conversation_id}/consolidate",
        response_model=Consolidated,
        responses=_ERROR_RESPONSES,
    )
    def consolidate(self, conversation_id: str) -> Consolidated:
        with self._turn:
            return Consolidated(consolidated=self._conversations.get(conversation_id).consolidate())

    @app.get(
        "/conversations/{conversation_id}",
        response_model=ConversationInfo,
        responses=_ERROR_RESPONSES,
    )
    def conversation(self, conversation_id: str) -> ConversationInfo:
        with self._turn:
            return self._conversations.get(conversation_id).info()

    @app.get("/conversations", response_model=list[str])
    def conversations(self) -> list[str]:
        return self._conversations.ids()

    @app.get("/tree", response_model=DirectoryNode, responses=_ERROR_RESPONSES)
    def tree(self) -> DirectoryNode:
        return self._service.tree()

    @app.get("/tools")
    def tools(self) -> list[dict]:
        """The store tools as OpenAI function schemas, for an outside agent to drive the store."""
        from memory_bank.llm.agent import TOOL_SCHEMAS

        return TOOL_SCHEMAS

    # --- the Memory Bank's session mode, for an outside agent ---------------------------------

    def _graph(self):
        if self._keeper is None:
            from actors.graph import RemoteKeeper, graph_actor

            self._keeper = RemoteKeeper(graph_actor(self._store, self._config))
        return self._keeper

    @app.post("/sessions", response_model=InsightDoc, responses=_ERROR_RESPONSES)
    def open_session(self, request: SessionRequest) -> InsightDoc:
        return self._graph().open_session(request.task_goal)

    @app.get("/sessions/{session_id}", response_model=InsightDoc, responses=_ERROR_RESPONSES)
    def insight_doc(self, session_id: str) -> InsightDoc:
        return self._graph().insight_doc(session_id)

    @app.post(
        "/sessions/{session_id}/intercept",
        response_model=InterceptResult,
        responses=_ERROR_RESPONSES,
    )
    def intercept(self, session_id: str, request: InterceptRequest) -> InterceptResult:
        from memory_bank.graph.model import Attachment

        files = tuple(
            Attachment(id=f"a{n}", type=kind, path=path)
            for n, (kind, path) in enumerate(request.attachments, start=1)
        )
        return self._graph().intercept(
            session_id, request.context, request.task_type, files, request.metadata
        )

    @app.get("/sessions/{session_id}/prompt", response_model=Prompt, responses=_ERROR_RESPONSES)
    def enhance(self, session_id: str) -> Prompt:
        return Prompt(prompt=self._graph().enhance_prompt(session_id))

    @app.post(
        "/sessions/{session_id}/close", response_model=SessionExport, responses=_ERROR_RESPONSES
    )
    def close_session(self, session_id: str) -> SessionExport:
        return self._graph().close(session_id)

    @app.get("/memory/{node_id}", response_model=NodeDetail, responses=_ERROR_RESPONSES)
    def memory(self, node_id: str) -> NodeDetail:
        return self._graph().node(node_id)

    @app.get("/healthz", response_model=Health, responses=_ERROR_RESPONSES)
    def healthz(self) -> Health:
        return Health(store_version=self._service.store_version)


# --- building and running the application -------------------------------------------------------


class AppArgs(BaseModel):
    """Arguments of `build_app` (`serve run ... key=value` or the `args:` of configs/serve.yaml)."""

    model_config = ConfigDict(extra="forbid")

    store: str
    config: str | None = None  # YAML validated by AppConfig; None = built-in defaults
    num_replicas: int = Field(1, ge=1)


def build_app(args: dict[str, Any]) -> Application:
    """The Serve application for one store; the config is read here, in the driver, once."""
    try:
        parsed = AppArgs.model_validate(args)
    except ValidationError as exc:
        raise ConfigError(f"invalid serve arguments:\n{exc}") from exc
    return build_app_for(parsed.store, load_config(parsed.config), parsed.num_replicas)


def build_app_for(store: str | Path, config: AppConfig, num_replicas: int = 1) -> Application:
    from memory_bank.store.layout import is_store

    # Replicas may run in another working directory (or on another node): hand them an
    # absolute path, and refuse a missing store here rather than in a crash-looping replica.
    # Not resolve(): the store path is a link that each commit moves to a new version.
    store_path = Path(store).expanduser().absolute()
    if not is_store(store_path):
        raise StoreError(f"no memory store at {store_path} (run `memory-bank ingest` first)")
    deployment = MemoryBankServer.options(num_replicas=num_replicas)
    return deployment.bind(str(store_path), config.model_dump(mode="json"))


def start(store: str | Path, config: AppConfig, host: str, port: int) -> str:
    """Start Serve's HTTP proxy on host:port and deploy the app; returns the base URL.

    Ray must already be initialized (the caller owns it).
    """
    serve.start(http_options={"host": host, "port": port})
    serve.run(build_app_for(store, config), name=APP_NAME, route_prefix="/")
    return f"http://{host}:{port}"


def run_blocking(
    store: str | Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    config_path: str | Path | None = None,
    config: AppConfig | None = None,
) -> None:
    """`memory-bank serve`: join or start Ray, serve the store, block until Ctrl-C."""
    import ray

    from pipeline.runtime import ensure_ray

    config = config or load_config(config_path)
    started_ray = ensure_ray(config.ray, config.llm)
    try:
        url = start(store, config, host, port)
        print(f"memory-bank is serving {Path(store).absolute()} at {url} (API docs: {url}/docs)")
        print("Press Ctrl-C to stop.")
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        serve.shutdown()
        if started_ray:
            ray.shutdown()
