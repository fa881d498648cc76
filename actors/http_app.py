"""The FastAPI app of the HTTP API, as the Serve ingress (`actors/serve_app.py`) mounts it and
the agents' tests serve it without Ray: its routers, its error handlers and the guards every
route passes, outermost first: the Host / Origin allowlists and the caller's key
(`actors/serve_access.py`), then the body limit (`actors/request_guards.py`), so nothing of a
body is read before the caller is known. Every response is ASCII-escaped JSON."""

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from actors import serve_chat, serve_routes
from actors.request_guards import (
    BodyTooLarge,
    EscapedJSONResponse,
    LimitRequestBody,
    refused_body,
    refused_validation,
)
from actors.serve_access import AccessGuard
from actors.ui import router as ui_router
from memory_bank.errors import MemoryBankError


def http_app() -> FastAPI:
    """The routes and guards; a replica then attaches its store (`serve_agents.install_agents`,
    `ui.attach_browser`), and the guards let requests in once it has."""
    app = FastAPI(
        title="memory-bank",
        summary="Ask and search a hierarchical memory store.",
        version="0.1.0",
        default_response_class=EscapedJSONResponse,
    )
    app.add_exception_handler(BodyTooLarge, refused_body)
    app.add_exception_handler(RequestValidationError, refused_validation)
    app.add_exception_handler(MemoryBankError, serve_routes.domain_error)
    app.add_middleware(LimitRequestBody)
    app.add_middleware(AccessGuard)  # added last, so it runs first
    app.include_router(serve_routes.router)
    app.include_router(serve_chat.router)
    # The page at /ui/ and the /browse/ views it reads, each as the caller's key sees the store.
    app.include_router(ui_router)
    return app
