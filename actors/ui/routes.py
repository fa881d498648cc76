"""The page at /ui/ and the read-only JSON it reads, as one router the Serve app mounts.

    GET /ui/                                   the page (asks for a key when the API wants one)
    GET /ui/assets/{build}/{name}              its scripts and styles (cached for a year)
    GET /browse/directory?path=/a/b&offset&limit -> DirectoryPage: README summary and key terms,
                                                  subdirectories with sizes, a page of memories
    GET /browse/memory?ref=<chunk id or path>  -> MemoryPage: frontmatter, text, source, raw
                                                  text, neighbours, claim timelines
    GET /browse/status                         -> StoreStatus: sizes, versions, open conflicts
    GET /browse/conversations                  -> list[ConversationSummary]
    GET /browse/conversations/{id}?limit       -> ConversationPage: working turns, summary

The page and its files hold no data and are served without the key (a browser cannot send one
when it opens a URL); everything under /browse/ takes the same key as the rest of the API.
The views are domain functions (`memory_bank/browse/`) over the live store, read here in the
ingress, never behind the query replicas.
"""

# No `from __future__ import annotations`: FastAPI reads these signatures at run time.
import gzip
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.routing import APIRoute

from actors.serve_api import ERROR_RESPONSES, ErrorBody
from actors.ui.assets import IMMUTABLE, REVALIDATE, SECURITY_HEADERS, Asset, StaticAssets
from memory_bank.browse.models import (
    ConversationPage,
    ConversationSummary,
    DirectoryPage,
    MemoryPage,
    StoreStatus,
)
from memory_bank.browse.service import StoreBrowser
from memory_bank.config import AppConfig

PAGE_PREFIX = "/ui"
GZIP_MIN_BYTES = 1024  # smaller bodies gain less than the header costs


class _GzipRoute(APIRoute):
    """These routes' JSON is sent gzipped to clients that accept it (listings of names and
    summaries compress well); the rest of the app is left as it is."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def compressed(request: Request) -> Response:
            response = await handler(request)
            accepts = "gzip" in request.headers.get("accept-encoding", "").lower()
            if (
                accepts
                and "content-encoding" not in response.headers
                and response.media_type == "application/json"
                and len(response.body) >= GZIP_MIN_BYTES
            ):
                response.body = gzip.compress(response.body, compresslevel=6)
                response.headers["Content-Encoding"] = "gzip"
                response.headers["Content-Length"] = str(len(response.body))
                response.headers["Vary"] = "Accept-Encoding"
            return response

        return compressed


router = APIRouter(route_class=_GzipRoute)
_assets = StaticAssets()


def attach_browser(app: FastAPI, store: str, config: AppConfig) -> None:
    """Give the routes their store (called where the ingress is constructed)."""
    app.state.browser = StoreBrowser(store, config.retrieval.alpha)


def is_page_path(path: str) -> bool:
    """The page and its files: open without a key, since they hold no data."""
    return path == PAGE_PREFIX or path.startswith(PAGE_PREFIX + "/")


def _browser(request: Request) -> StoreBrowser:
    return request.app.state.browser


def _not_found(detail: str) -> JSONResponse:
    body = ErrorBody(error="NotFound", detail=detail)
    return JSONResponse(status_code=404, content=body.model_dump())


# --- the page -------------------------------------------------------------------------------


def _asset_response(request: Request, asset: Asset, cache_control: str) -> Response:
    headers = {"Cache-Control": cache_control, **SECURITY_HEADERS}
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers={**headers, "ETag": asset.etag})
    body, described = asset.response_parts(request.headers.get("accept-encoding", ""))
    return Response(body, media_type=asset.media_type, headers={**headers, **described})


@router.get(PAGE_PREFIX, include_in_schema=False)
def page_without_slash() -> RedirectResponse:
    return RedirectResponse(PAGE_PREFIX + "/", status_code=308)


@router.get(PAGE_PREFIX + "/", include_in_schema=False)
def page(request: Request) -> Response:
    return _asset_response(request, _assets.page(), REVALIDATE)


@router.get(PAGE_PREFIX + "/assets/{build}/{name}", include_in_schema=False)
def asset(request: Request, build: str, name: str) -> Response:
    found = _assets.get(name)
    if found is None:
        return _not_found(f"no file {name!r} in the page's assets")
    # A page from an earlier build may still ask: it gets today's file, revalidated each time.
    return _asset_response(request, found, IMMUTABLE if build == _assets.build else REVALIDATE)


# --- the JSON the page reads ----------------------------------------------------------------


@router.get("/browse/directory", response_model=DirectoryPage, responses=ERROR_RESPONSES)
def directory(
    request: Request,
    path: str = Query("/", description="Tree path of the directory, '/' or '/a/b'."),
    offset: int = Query(0, ge=0, description="First memory of the page (by file name)."),
    limit: int = Query(100, ge=0, le=500, description="Memories on the page."),
):
    found = _browser(request).directory(path, offset, limit)
    return found if found is not None else _not_found(f"no directory {path!r} in the store")


@router.get("/browse/memory", response_model=MemoryPage, responses=ERROR_RESPONSES)
def memory(
    request: Request,
    ref: str = Query(
        min_length=1,
        description="A chunk id, a memory file's store-relative path, or a session memory's "
        "id ('memory:<id>').",
    ),
):
    found = _browser(request).memory(ref)
    return found if found is not None else _not_found(f"no memory {ref!r} in the store")


@router.get("/browse/status", response_model=StoreStatus, responses=ERROR_RESPONSES)
def status(request: Request) -> StoreStatus:
    return _browser(request).status()


@router.get(
    "/browse/conversations",
    response_model=list[ConversationSummary],
    responses=ERROR_RESPONSES,
)
def conversations(request: Request) -> list[ConversationSummary]:
    return _browser(request).conversations()


@router.get(
    "/browse/conversations/{conversation_id}",
    response_model=ConversationPage,
    responses=ERROR_RESPONSES,
)
def conversation(
    request: Request,
    conversation_id: str,
    limit: int = Query(50, ge=0, le=200, description="Latest working turns shown."),
):
    found = _browser(request).conversation(conversation_id, limit)
    if found is None:
        return _not_found(f"no conversation {conversation_id!r} in the store")
    return found
