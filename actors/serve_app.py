"""The HTTP API: a light FastAPI ingress in front of the query replicas, on Ray Serve.

    GET  /healthz                                                  -> {"status", "store_version"}
    the JSON API (query, search, tree, files, memories, conversations, sessions, writes as
    jobs)                                                          `actors/serve_routes.py`
    /mcp: the MCP server over streamable HTTP                      `actors/serve_agents.py`
    /v1/models, /v1/chat/completions (OpenAI-compatible)           `actors/serve_chat.py`
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

Every path but /healthz passes the HTTP guard (`actors/serve_access.py`): the Host and Origin
allowlists, then the caller's key (`memory-bank keys`; required off loopback), whose permission
and part of the store every route then keeps to (`memory_bank/agents/gateway.py`). A single
`--api-key` still works as an admin key required everywhere; only its SHA-256 reaches Ray.
`memory-bank serve` refuses a non-loopback address without a key. Then every body passes the
size limits (`actors/request_guards.py`): the routes and guards are `actors/http_app.py`.

Three ways to run it:
- `memory-bank serve --store DIR` (`actors/serve_run.py`),
- `serve run actors.serve_app:build_app store=DIR [config=FILE] [num_replicas=N]`,
- `serve deploy configs/serve.yaml`.
"""

# No `from __future__ import annotations` here: Serve's ingress rebuilds the handler signatures
# outside this module, so FastAPI could not resolve string annotations and would take the
# request models for query parameters.
import hashlib
import os
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from ray import serve
from ray.exceptions import RayTaskError
from ray.serve import Application
from ray.serve.config import BackpressureConfig
from ray.serve.exceptions import BackPressureError, DeploymentUnavailableError
from ray.serve.handle import DeploymentHandle

from actors.admission import AdmissionQueue, AdmissionStats, QueueFull
from actors.http_app import http_app
from actors.loopback import keep_replica_port_on_loopback
from actors.proxy_limits import proxy_environment
from actors.request_guards import EscapedJSONResponse
from actors.serve_agents import wire_agents
from actors.serve_api import ERROR_RESPONSES, ErrorBody, Health, error_status
from actors.serve_model import MemoryBankModel
from actors.ui import attach_browser
from memory_bank.config import AppConfig, ServeConfig, load_config
from memory_bank.errors import ConfigError, MemoryBankError, StoreError
from memory_bank.store.layout import is_store
from memory_bank.store.reader import StoreReader

__all__ = ["APP_NAME", "AppArgs", "build_app", "build_app_for", "error_status", "start"]

APP_NAME = "memory-bank"
# The ingress only awaits the replicas: thousands in flight cost it little, and its own queue
# (at the proxy) should never be the one that fills first.
INGRESS_MAX_ONGOING_REQUESTS = 1000


class Overloaded(Exception):
    """Every query replica is busy and the queue in front of them is full."""

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail)
        self.retry_after_s = retry_after_s


app = http_app()


@app.exception_handler(Overloaded)
async def _overloaded(_: Request, exc: Overloaded) -> JSONResponse:
    body = ErrorBody(error="Overloaded", detail=str(exc))
    headers = {"Retry-After": str(exc.retry_after_s)}
    return EscapedJSONResponse(status_code=503, content=body.model_dump(), headers=headers)


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
        bound_host: str | None = None,
    ) -> None:
        keep_replica_port_on_loopback()
        self._model = model
        self._store = store
        self.config = AppConfig.model_validate(config)
        self._view = _StoreView(store)
        attach_browser(app, store, self.config)
        self._keeper = None
        settings = self.config.serve
        self._admission = AdmissionQueue(
            model_capacity or settings.max_ongoing_requests, settings.max_queued_requests
        )
        wire_agents(app, self, store, bound_host, api_key_sha256)

    async def model_call(self, method: str, *args: Any) -> Any:
        try:
            async with self._admission.admitted():
                return await getattr(self._model, method).remote(*args)
        except (QueueFull, BackPressureError):
            raise Overloaded(
                "every query replica is busy and the queue before them is full; "
                f"try again in {self.config.serve.retry_after_s} s",
                self.config.serve.retry_after_s,
            ) from None
        except DeploymentUnavailableError:
            raise Overloaded(
                "no query replica is available (starting, or being replaced); "
                f"try again in {self.config.serve.retry_after_s} s",
                self.config.serve.retry_after_s,
            ) from None
        except RayTaskError as exc:
            # The domain's own error, as raised in the replica (its class, a clear message).
            if isinstance(exc.cause, MemoryBankError):
                raise exc.cause from None
            raise

    def admission_stats(self) -> AdmissionStats:
        """What the queue in front of the query replicas held since this replica started
        (through a DeploymentHandle; no HTTP route)."""
        return self._admission.stats()

    # --- answered here, never behind the model -------------------------------------------------

    @app.get("/healthz", response_model=Health, responses=ERROR_RESPONSES)
    def healthz(self) -> Health:
        return Health(store_version=self._view.reader().store_version)

    def graph_keeper(self):
        """The store's graph actor behind the keeper's interface (sessions, graph nodes)."""
        if self._keeper is None:
            from actors.graph import RemoteKeeper, graph_actor

            self._keeper = RemoteKeeper(graph_actor(self._store, self.config))
        return self._keeper


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
    bound_host: str | None = None,
) -> Application:
    """The ingress bound to the query replicas, configured by `config.serve`; `num_replicas`
    (fixed) overrides its replicas or autoscaling. `bound_host`, the address Serve's proxy
    listens on, is a Host the guard lets in (with those of `config.agents`)."""
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
        bound_host,
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
    serve.start(
        http_options={"host": host, "port": port},
        # The proxy's body limits (`proxy_limits`); Serve applies them when this call starts
        # its controller, and keeps a running controller's.
        controller_options={"runtime_env": {"env_vars": proxy_environment(config.limits)}},
    )
    serve.run(
        build_app_for(store, config, num_replicas, api_key, bound_host=host),
        name=APP_NAME,
        route_prefix="/",
    )
    return f"http://{host}:{port}"
