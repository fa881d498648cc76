"""The HTTP API: a light FastAPI ingress in front of the query replicas, on Ray Serve.

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
    GET  /ui/ (the page, no key needed), GET /browse/...   the page's views (actors/ui)
    GET  /docs, /openapi.json                                      (FastAPI defaults)

Two deployments (Serve model composition):
- `MemoryBankIngress` (no CPU reserved, never loads the model) validates requests, checks the
  API key, answers /healthz, /tree and /tools from the store on disk and the session endpoints
  through the store's graph actor (`actors/graph.py`), and hands the rest to
- `MemoryBank` (`actors/serve_model.py`), the query replicas, through a DeploymentHandle.
  Each replica admits `serve.max_ongoing_requests`; the ingress lets out no more calls than the
  replicas admit together, up to `serve.max_queued_requests` more wait in its own queue, first
  come first served, and the next request gets 503 with Retry-After at once
  (`actors/admission.py`): requests left waiting in Serve's router, which probes the replicas
  with backoff, made throughput collapse. So health and tree never wait behind the model, and
  load is shed early.

An API key, when given, is required as `Authorization: Bearer <key>` on every path but
/healthz; only its SHA-256 reaches Ray. `memory-bank serve` refuses a non-loopback address
without one.

Three ways to run it:
- `memory-bank serve --store DIR` (`actors/serve_run.py`),
- `serve run actors.serve_app:build_app store=DIR [config=FILE] [num_replicas=N]`,
- `serve deploy configs/serve.yaml`.
"""

# No `from __future__ import annotations` here: Serve's ingress rebuilds the handler signatures
# outside this module, so FastAPI could not resolve string annotations and would take the
# request models for query parameters.
import hashlib
import hmac
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.datastructures import Headers
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ray import serve
from ray.exceptions import RayTaskError
from ray.serve import Application
from ray.serve.config import BackpressureConfig
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle

from actors.admission import AdmissionQueue, QueueFull
from actors.loopback import keep_replica_port_on_loopback
from actors.request_guards import (
    BodyTooLarge,
    EscapedJSONResponse,
    LimitRequestBody,
    refused_body,
    refused_validation,
)
from actors.serve_api import (
    ERROR_RESPONSES,
    Consolidated,
    ErrorBody,
    Health,
    InterceptRequest,
    Prompt,
    QueryRequest,
    RecallRequest,
    SearchRequest,
    SessionRequest,
    TurnRequest,
    error_status,
)
from actors.serve_model import MemoryBankModel
from actors.ui import attach_browser, is_page_path
from actors.ui import router as ui_router
from memory_bank.config import AppConfig, ServeConfig, load_config
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import ConfigError, MemoryBankError, StoreError
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.session.models import InsightDoc, InterceptResult, NodeDetail, SessionExport
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader

__all__ = ["APP_NAME", "AppArgs", "build_app", "build_app_for", "error_status", "start"]

APP_NAME = "memory-bank"
# The ingress only awaits the replicas: thousands in flight cost it little, and its own queue
# (at the proxy) should never be the one that fills first.
INGRESS_MAX_ONGOING_REQUESTS = 1000
# Paths answered without the API key: a load balancer's health probe carries none.
OPEN_PATHS = frozenset({"/healthz"})


class Overloaded(Exception):
    """Every query replica is busy and the queue in front of them is full."""

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


app = FastAPI(
    title="memory-bank",
    summary="Ask and search a hierarchical memory store.",
    version="0.1.0",
    default_response_class=EscapedJSONResponse,
)
app.add_exception_handler(BodyTooLarge, refused_body)
app.add_exception_handler(RequestValidationError, refused_validation)


@app.exception_handler(MemoryBankError)
async def _domain_error(_: Request, exc: MemoryBankError) -> JSONResponse:
    body = ErrorBody(error=type(exc).__name__, detail=str(exc))
    return EscapedJSONResponse(status_code=error_status(exc), content=body.model_dump())


@app.exception_handler(Overloaded)
async def _overloaded(_: Request, exc: Overloaded) -> JSONResponse:
    body = ErrorBody(error="Overloaded", detail=str(exc))
    headers = {"Retry-After": str(exc.retry_after_s)}
    return EscapedJSONResponse(status_code=503, content=body.model_dump(), headers=headers)


class _RequireApiKey:
    """Pure ASGI (Starlette's BaseHTTPMiddleware costs about a millisecond per request): a
    request without the key, on any path but OPEN_PATHS, is answered 401 here."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        # Set per replica by MemoryBankIngress.__init__; None means no key was configured.
        expected = getattr(scope["app"].state, "api_key_sha256", None) if "app" in scope else None
        path = scope.get("path", "")
        if expected is None or scope["type"] != "http" or path in OPEN_PATHS or is_page_path(path):
            return await self.app(scope, receive, send)
        scheme, _, token = Headers(scope=scope).get("authorization", "").partition(" ")
        presented = hashlib.sha256(token.strip().encode("utf-8")).hexdigest()
        if scheme.lower() == "bearer" and hmac.compare_digest(presented, expected):
            return await self.app(scope, receive, send)
        body = ErrorBody(error="Unauthorized", detail="a valid 'Authorization: Bearer <key>'")
        refusal = JSONResponse(
            status_code=401, content=body.model_dump(), headers={"WWW-Authenticate": "Bearer"}
        )
        await refusal(scope, receive, send)


app.add_middleware(LimitRequestBody)
app.add_middleware(_RequireApiKey)  # added last, so it runs first: no body is looked at before
app.include_router(ui_router)  # the page at /ui/ and the /browse/ views it reads


class _StoreView:
    """The live version of the store, read without the model: a commit moves the store link
    to a new version directory, and the next request opens that one."""

    def __init__(self, store: str) -> None:
        self._store = Path(store)
        self._reader: StoreReader | None = None

    def reader(self) -> StoreReader:
        version_dir = self._store.resolve()
        if not is_store(version_dir):
            raise StoreError(f"no memory store at {self._store} (run `memory-bank ingest` first)")
        if self._reader is None or self._reader.root != version_dir:
            self._reader = StoreReader(version_dir)
        return self._reader


@serve.deployment(name="MemoryBankIngress", ray_actor_options={"num_cpus": 0})
@serve.ingress(app)
class MemoryBankIngress:
    def __init__(
        self,
        model: DeploymentHandle,
        store: str,
        config: dict[str, Any],
        api_key_sha256: str | None = None,
        model_capacity: int | None = None,
    ) -> None:
        keep_replica_port_on_loopback()
        app.state.api_key_sha256 = api_key_sha256
        self._model = model
        self._store = store
        self._config = AppConfig.model_validate(config)
        app.state.max_body_bytes = self._config.limits.max_body_bytes
        self._view = _StoreView(store)
        attach_browser(app, store, self._config)
        self._keeper = None
        settings = self._config.serve
        self._admission = AdmissionQueue(
            model_capacity or settings.max_ongoing_requests, settings.max_queued_requests
        )

    async def _model_call(self, method: str, *args: Any) -> Any:
        try:
            async with self._admission.admitted():
                return await getattr(self._model, method).remote(*args)
        except (QueueFull, BackPressureError):
            raise Overloaded(
                "every query replica is busy and the queue before them is full; "
                f"try again in {self._config.serve.retry_after_s} s",
                self._config.serve.retry_after_s,
            ) from None
        except DeploymentUnavailableError:
            raise Overloaded(
                "no query replica is available (starting, or being replaced); "
                f"try again in {self._config.serve.retry_after_s} s",
                self._config.serve.retry_after_s,
            ) from None
        except RayTaskError as exc:
            # The domain's own error, as raised in the replica (its class, a clear message).
            if isinstance(exc.cause, MemoryBankError):
                raise exc.cause from None
            raise

    @app.post("/query", response_model=ChatResult, responses=ERROR_RESPONSES)
    async def query(self, request: QueryRequest) -> ChatResult:
        return await self._model_call("query", request)

    @app.post("/search", response_model=list[SearchHit], responses=ERROR_RESPONSES)
    async def search(self, request: SearchRequest) -> list[SearchHit]:
        return await self._model_call("search", request)

    @app.post(
        "/conversations/{conversation_id}/turns",
        response_model=TurnRecord,
        responses=ERROR_RESPONSES,
    )
    async def add_turn(self, conversation_id: str, request: TurnRequest) -> TurnRecord:
        return await self._model_call("add_turn", conversation_id, request)

    @app.post(
        "/conversations/{conversation_id}/recall",
        response_model=RecallResult,
        responses=ERROR_RESPONSES,
    )
    async def recall(self, conversation_id: str, request: RecallRequest) -> RecallResult:
        return await self._model_call("recall", conversation_id, request)

    @app.post(
        "/conversations/{conversation_id}/consolidate",
        response_model=Consolidated,
        responses=ERROR_RESPONSES,
    )
    async def consolidate(self, conversation_id: str) -> Consolidated:
        return await self._model_call("consolidate", conversation_id)

    @app.get(
        "/conversations/{conversation_id}",
        response_model=ConversationInfo,
        responses=ERROR_RESPONSES,
    )
    async def conversation(self, conversation_id: str) -> ConversationInfo:
        return await self._model_call("conversation", conversation_id)

    @app.get("/conversations", response_model=list[str], responses=ERROR_RESPONSES)
    async def conversations(self) -> list[str]:
        return await self._model_call("conversation_ids")

    # --- answered here, never behind the model -------------------------------------------------

    @app.get("/healthz", response_model=Health, responses=ERROR_RESPONSES)
    def healthz(self) -> Health:
        return Health(store_version=self._view.reader().store_version)

    @app.get("/tree", response_model=DirectoryNode, responses=ERROR_RESPONSES)
    def tree(self) -> DirectoryNode:
        return self._view.reader().tree()

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

    @app.post("/sessions", response_model=InsightDoc, responses=ERROR_RESPONSES)
    def open_session(self, request: SessionRequest) -> InsightDoc:
        return self._graph().open_session(request.task_goal)

    @app.get("/sessions/{session_id}", response_model=InsightDoc, responses=ERROR_RESPONSES)
    def insight_doc(self, session_id: str) -> InsightDoc:
        return self._graph().insight_doc(session_id)

    @app.post(
        "/sessions/{session_id}/intercept",
        response_model=InterceptResult,
        responses=ERROR_RESPONSES,
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

    @app.get("/sessions/{session_id}/prompt", response_model=Prompt, responses=ERROR_RESPONSES)
    def enhance(self, session_id: str) -> Prompt:
        return Prompt(prompt=self._graph().enhance_prompt(session_id))

    @app.post(
        "/sessions/{session_id}/close", response_model=SessionExport, responses=ERROR_RESPONSES
    )
    def close_session(self, session_id: str) -> SessionExport:
        return self._graph().close(session_id)

    @app.get("/memory/{node_id}", response_model=NodeDetail, responses=ERROR_RESPONSES)
    def memory(self, node_id: str) -> NodeDetail:
        return self._graph().node(node_id)


# --- building the application -------------------------------------------------------------------


class AppArgs(BaseModel):
    """Arguments of `build_app` (`serve run ... key=value` or the `args:` of configs/serve.yaml)."""

    model_config = ConfigDict(extra="forbid")

    store: str
    config: str | None = None  # YAML validated by AppConfig; None = built-in defaults
    num_replicas: int | None = Field(None, ge=1)  # None: serve.num_replicas of the config
    # The environment variable holding the API key (read here, once, in the process that
    # builds the app); None: no key.
    api_key_env: str | None = None


def build_app(args: dict[str, Any]) -> Application:
    """The Serve application for one store; the config is read here, in the driver, once."""
    try:
        parsed = AppArgs.model_validate(args)
    except ValidationError as exc:
        raise ConfigError(f"invalid serve arguments:\n{exc}") from exc
    api_key = None
    if parsed.api_key_env is not None:
        api_key = os.environ.get(parsed.api_key_env)
        if not api_key:
            raise ConfigError(f"api_key_env names {parsed.api_key_env}, which is not set")
    config = load_config(parsed.config)
    return build_app_for(parsed.store, config, parsed.num_replicas, api_key=api_key)


def build_app_for(
    store: str | Path,
    config: AppConfig,
    num_replicas: int | None = None,
    api_key: str | None = None,
) -> Application:
    """The ingress bound to the query replicas, configured by `config.serve`; `num_replicas`
    (fixed) overrides its replicas or autoscaling."""
    # Replicas may run in another working directory (or on another node): hand them an
    # absolute path, and refuse a missing store here rather than in a crash-looping replica.
    # Not resolve(): the store path is a link that each commit moves to a new version.
    store_path = Path(store).expanduser().absolute()
    if not is_store(store_path):
        raise StoreError(f"no memory store at {store_path} (run `memory-bank ingest` first)")
    settings = config.serve
    scaling: dict[str, Any] = {"num_replicas": num_replicas or settings.num_replicas}
    if num_replicas is None and settings.autoscaling is not None:
        scaling = {"autoscaling_config": settings.autoscaling.model_dump()}
    logging = {"enable_access_log": settings.access_log}
    model = MemoryBankModel.options(
        max_ongoing_requests=settings.max_ongoing_requests,
        # The ingress keeps the line (`actors/admission.py`) and lets out no more calls than
        # the replicas admit; a limit here would count calls being routed as queued.
        max_queued_requests=-1,
        logging_config=logging,
        **scaling,
    )
    ingress = MemoryBankIngress.options(
        max_ongoing_requests=INGRESS_MAX_ONGOING_REQUESTS,
        max_queued_requests=INGRESS_MAX_ONGOING_REQUESTS,
        backpressure_config=BackpressureConfig(retry_after_s=settings.retry_after_s),
        logging_config=logging,
    )
    settings_json = config.model_dump(mode="json")
    key_digest = hashlib.sha256(api_key.encode("utf-8")).hexdigest() if api_key else None
    return ingress.bind(
        model.bind(str(store_path), settings_json),
        str(store_path),
        settings_json,
        key_digest,
        model_capacity(settings, num_replicas),
    )


def model_capacity(settings: ServeConfig, num_replicas: int | None = None) -> int:
    """The calls the query replicas admit together, which the ingress lets out at once
    (`actors/admission.py`). Under autoscaling, those of its fewest replicas: Serve adds
    replicas on requests in flight per replica, and more of them share the same calls."""
    if num_replicas is None and settings.autoscaling is not None:
        replicas = max(1, settings.autoscaling.min_replicas)
    else:
        replicas = num_replicas or settings.num_replicas
    return replicas * settings.max_ongoing_requests


def start(
    store: str | Path,
    config: AppConfig,
    host: str,
    port: int,
    num_replicas: int | None = None,
    api_key: str | None = None,
) -> str:
    """Start Serve's HTTP proxy on host:port and deploy the app; returns the base URL.

    Ray must already be initialized (the caller owns it).
    """
    serve.start(http_options={"host": host, "port": port})
    serve.run(build_app_for(store, config, num_replicas, api_key), name=APP_NAME, route_prefix="/")
    return f"http://{host}:{port}"
