"""The JSON API's routes, each through the replica's `MemoryGateway` as the request's caller.

    POST /query   {"question", "mode"?, "max_iterations"?, "system_prompt"?, "within"?, "under"?}
    POST /search  {"query", "top_k"?, "mode"?, "within"?, "under"?}     -> list[SearchHit]
    GET  /tree                                                         -> DirectoryNode
    GET  /ls?path=/   /cat?path=...   /grep?pattern=...&path=/   /fetch/{id}
    GET  /memory/{id}          -> NodeDetail: a memory, its neighbours, history, raw entries
    POST /conversations/{id}/turns | /recall | /consolidate;  GET /conversations[/{id}]
    POST /sessions;  GET /sessions/{id};  POST /sessions/{id}/intercept;
    GET  /sessions/{id}/prompt;  POST /sessions/{id}/close
    POST /documents {"text"?, "name"?, "paths"?}         -> 202 JobStatus (an add job)
    POST /documents/files/{name}  (the file's bytes as the body)   -> 202 JobStatus
    POST /documents/remove {"sources"}                   -> 202 JobStatus
    POST /rebuild                                        -> 202 JobStatus (admin)
    GET  /jobs;  GET /jobs/{id}?wait=SECONDS             -> JobStatus (progress, counts, errors)
    GET  /tools                                -> the store tools as OpenAI function schemas

The caller is the one the HTTP guard (`actors/serve_access.py`) found for the request's key;
the gateway checks its permission and keeps it to its part of the store.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations at runtime.
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from actors.request_guards import UPLOAD_PATH, EscapedJSONResponse
from actors.serve_api import (
    ERROR_RESPONSES,
    ApiRequest,
    Consolidated,
    ErrorBody,
    InterceptRequest,
    Prompt,
    QueryRequest,
    RecallRequest,
    SearchRequest,
    SessionRequest,
    TurnRequest,
    error_status,
)
from memory_bank.agents.files import Fetched
from memory_bank.agents.gateway import MemoryGateway
from memory_bank.agents.jobs import JobStatus
from memory_bank.agents.keys import Caller
from memory_bank.agents.uploads import Upload
from memory_bank.conversation.records import ConversationInfo, RecallResult, TurnRecord
from memory_bank.errors import AccessDenied, MemoryBankError
from memory_bank.query.tools import Entry, GrepMatch
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.session.models import InsightDoc, InterceptResult, NodeDetail, SessionExport

router = APIRouter(responses=ERROR_RESPONSES)
MAX_WAIT_SECONDS = 300.0


class AddRequest(ApiRequest):
    text: str | None = Field(None, description="Text to add (kept as the file `name`).")
    name: str | None = Field(None, description="A file name for the text, e.g. notes.md.")
    paths: list[str] = Field(
        default_factory=list, description="Files or folders on the server, under agents.add_roots."
    )


class RemoveRequest(ApiRequest):
    sources: list[str] = Field(
        min_length=1, description="Documents: source paths as added, folders, or document ids."
    )


async def domain_error(_: Request, exc: MemoryBankError) -> JSONResponse:
    """The domain's errors as the API's error body, with their status (`serve_api`)."""
    body = ErrorBody(error=type(exc).__name__, detail=str(exc))
    return EscapedJSONResponse(status_code=error_status(exc), content=body.model_dump())


def _gateway(request: Request) -> MemoryGateway:
    return request.app.state.gateway


def caller_of(request: Request) -> Caller:
    caller = getattr(request.state, "caller", None)
    if not isinstance(caller, Caller):  # never served without the guard's stamp
        raise AccessDenied("this request did not pass the key check")
    return caller


# --- reading ------------------------------------------------------------------------------------


@router.post("/query", response_model=ChatResult)
async def query(body: QueryRequest, request: Request) -> ChatResult:
    return await _gateway(request).ask(
        caller_of(request),
        body.question,
        body.mode,
        body.max_iterations,
        body.system_prompt,
        tuple(body.within),
        body.under,
    )


@router.post("/search", response_model=list[SearchHit])
async def search(body: SearchRequest, request: Request) -> list[SearchHit]:
    return await _gateway(request).search(
        caller_of(request), body.query, body.top_k, body.mode, tuple(body.within), body.under
    )


@router.get("/tree", response_model=DirectoryNode)
async def tree(request: Request) -> DirectoryNode:
    return await _gateway(request).tree(caller_of(request))


@router.get("/ls", response_model=list[Entry])
async def ls(request: Request, path: str = "/") -> list[Entry]:
    return await _gateway(request).ls(caller_of(request), path)


@router.get("/cat")
async def cat(request: Request, path: str) -> str:
    return await _gateway(request).cat(caller_of(request), path)


@router.get("/grep", response_model=list[GrepMatch])
async def grep(
    request: Request,
    pattern: Annotated[str, Query(min_length=1)],
    path: str = "/",
    max_matches: Annotated[int | None, Query(ge=1, le=1000)] = None,
) -> list[GrepMatch]:
    return await _gateway(request).grep(caller_of(request), pattern, path, max_matches)


@router.get("/fetch/{memory_id:path}", response_model=Fetched)
async def fetch(memory_id: str, request: Request) -> Fetched:
    return await _gateway(request).fetch(caller_of(request), memory_id)


@router.get("/memory/{node_id}", response_model=NodeDetail)
async def memory(node_id: str, request: Request) -> NodeDetail:
    return await _gateway(request).history(caller_of(request), node_id)


@router.get("/tools")
def tools() -> list[dict]:
    """The store tools as OpenAI function schemas, for an outside agent to drive the store."""
    from memory_bank.query.toolbox import TOOL_SCHEMAS

    return TOOL_SCHEMAS


# --- conversations ------------------------------------------------------------------------------


@router.post("/conversations/{conversation_id}/turns", response_model=TurnRecord)
async def add_turn(conversation_id: str, body: TurnRequest, request: Request) -> TurnRecord:
    return await _gateway(request).add_turn(
        caller_of(request), conversation_id, body.speaker, body.text, body.timestamp
    )


@router.post("/conversations/{conversation_id}/recall", response_model=RecallResult)
async def recall(conversation_id: str, body: RecallRequest, request: Request) -> RecallResult:
    return await _gateway(request).recall(
        caller_of(request), conversation_id, body.query, body.max_tokens
    )


@router.post("/conversations/{conversation_id}/consolidate", response_model=Consolidated)
async def consolidate(conversation_id: str, request: Request) -> Consolidated:
    count = await _gateway(request).consolidate(caller_of(request), conversation_id)
    return Consolidated(consolidated=count)


@router.get("/conversations/{conversation_id}", response_model=ConversationInfo)
async def conversation(conversation_id: str, request: Request) -> ConversationInfo:
    return await _gateway(request).conversation(caller_of(request), conversation_id)


@router.get("/conversations", response_model=list[str])
async def conversations(request: Request) -> list[str]:
    return await _gateway(request).conversation_ids(caller_of(request))


# --- the Memory Bank's session mode, for an outside agent ---------------------------------------


@router.post("/sessions", response_model=InsightDoc)
async def open_session(body: SessionRequest, request: Request) -> InsightDoc:
    return await _gateway(request).open_session(caller_of(request), body.task_goal)


@router.get("/sessions/{session_id}", response_model=InsightDoc)
async def insight_doc(session_id: str, request: Request) -> InsightDoc:
    return await _gateway(request).session(caller_of(request), "insight_doc", session_id)


@router.post("/sessions/{session_id}/intercept", response_model=InterceptResult)
async def intercept(session_id: str, body: InterceptRequest, request: Request) -> InterceptResult:
    from memory_bank.graph.model import Attachment

    files = tuple(
        Attachment(id=f"a{n}", type=kind, path=path)
        for n, (kind, path) in enumerate(body.attachments, start=1)
    )
    return await _gateway(request).session(
        caller_of(request),
        "intercept",
        session_id,
        body.context,
        body.task_type,
        files,
        body.metadata,
    )


@router.get("/sessions/{session_id}/prompt", response_model=Prompt)
async def enhance(session_id: str, request: Request) -> Prompt:
    return Prompt(prompt=await _gateway(request).enhance_prompt(caller_of(request), session_id))


@router.post("/sessions/{session_id}/close", response_model=SessionExport)
async def close_session(session_id: str, request: Request) -> SessionExport:
    return await _gateway(request).close_session(caller_of(request), session_id)


# --- writes, as jobs ----------------------------------------------------------------------------


@router.post("/documents", response_model=JobStatus, status_code=202)
async def add_documents(body: AddRequest, request: Request) -> JobStatus:
    return await _gateway(request).add(
        caller_of(request), text=body.text, name=body.name, paths=tuple(body.paths)
    )


@router.post(
    UPLOAD_PATH + "{name}",
    response_model=JobStatus,
    status_code=202,
    openapi_extra={
        "requestBody": {"content": {"application/octet-stream": {}}, "required": True},
    },
)
async def upload(name: str, request: Request) -> JobStatus:
    """Add one file, sent as the body (at most `limits.max_upload_bytes`); its name's suffix
    picks the reader (.md, .txt, .pdf, .json, .jsonl)."""
    data = await request.body()
    return await _gateway(request).add(caller_of(request), uploads=(Upload(name=name, data=data),))


@router.post("/documents/remove", response_model=JobStatus, status_code=202)
async def remove_documents(body: RemoveRequest, request: Request) -> JobStatus:
    return await _gateway(request).remove(caller_of(request), tuple(body.sources))


@router.post("/rebuild", response_model=JobStatus, status_code=202)
async def rebuild(request: Request) -> JobStatus:
    return await _gateway(request).rebuild(caller_of(request))


@router.get("/jobs", response_model=list[JobStatus])
async def jobs(request: Request) -> list[JobStatus]:
    return await _gateway(request).jobs(caller_of(request))


@router.get("/jobs/{job_id}", response_model=JobStatus)
async def job(
    job_id: str, request: Request, wait: Annotated[float, Query(ge=0, le=MAX_WAIT_SECONDS)] = 0.0
) -> JobStatus:
    return await _gateway(request).job(caller_of(request), job_id, wait=wait)
