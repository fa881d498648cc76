"""The HTTP API's request and response bodies and how errors become statuses.

Shared by the ingress (`actors/serve_app.py`), which validates requests and answers, and the
query replicas (`actors/serve_model.py`), which receive the validated requests.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory_bank.errors import (
    AccessDenied,
    ConfigError,
    InputTooLargeError,
    MemoryBankError,
    SessionError,
    StorageError,
    StoreError,
    ToolError,
)

# --- request and response models ----------------------------------------------------------------


class ApiRequest(BaseModel):
    """A request body: no unknown fields, and text that is valid Unicode.

    JSON may carry a lone surrogate ("\\ud800"), which no UTF-8 text can hold: every part of
    the store would fail on it later (an embedding, a file, a response), so it is refused here.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _valid_unicode(cls, data: Any) -> Any:
        where = lone_surrogate(data, "body")
        if where is not None:
            raise ValueError(f"{where} holds a lone surrogate: not valid Unicode text")
        return data


def lone_surrogate(value: Any, where: str) -> str | None:
    """Where in a parsed JSON value a string (or a key) holds a lone surrogate; None: nowhere.
    The place is said in ASCII, so the 422 can name it."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where.encode("ascii", "backslashreplace").decode("ascii")
        return None
    if isinstance(value, dict):
        parts = [(f"{where} key", key) for key in value]
        parts += [(f"{where}.{key}", item) for key, item in value.items()]
    elif isinstance(value, list):
        parts = [(f"{where}[{number}]", item) for number, item in enumerate(value)]
    else:
        return None
    return next((found for inner, item in parts if (found := lone_surrogate(item, inner))), None)


class QueryRequest(ApiRequest):
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
    within: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Answer from these documents only (as for /search); empty: every document.",
    )
    under: str | None = Field(None, description="Answer from this store directory only (/a/b).")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("question must not be blank")
        return question


class SearchRequest(ApiRequest):
    query: str = Field(description="Search text; a blank query finds nothing.")
    top_k: int | None = Field(None, ge=1, le=100, description="Hits (default: retrieval.top_k).")
    mode: Literal["hybrid", "bm25", "vector", "tree"] = "hybrid"
    within: list[str] = Field(
        default_factory=list,
        max_length=1000,
        description="Only these documents (source path as ingested, a folder holding them, or "
        "document id); empty: every document.",
    )
    under: str | None = Field(None, description="Only this store directory's subtree (/a/b).")


class TurnRequest(ApiRequest):
    speaker: str = Field(min_length=1, max_length=200)
    text: str = Field(min_length=1, max_length=100_000)
    timestamp: str | None = Field(
        None, description="ISO 8601; relative dates in the text are resolved against it."
    )


class RecallRequest(ApiRequest):
    query: str = Field(min_length=1, max_length=10_000)
    max_tokens: int | None = Field(None, ge=16, le=100_000)


class Consolidated(BaseModel):
    consolidated: int


class SessionRequest(ApiRequest):
    task_goal: str = Field(min_length=1, description="The task or question of the session.")


class InterceptRequest(ApiRequest):
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


# --- errors as statuses -------------------------------------------------------------------------

# A store being replaced or missing is the server's problem and may pass (503); bad arguments
# are the caller's (400). Anything else from the domain is still reported, without a traceback.
_ERROR_STATUS: tuple[tuple[type[MemoryBankError], int], ...] = (
    (AccessDenied, 403),
    (SessionError, 404),
    (InputTooLargeError, 413),
    (StoreError, 503),
    (StorageError, 503),
    (ToolError, 400),
    (ConfigError, 400),
)
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody, "description": "Invalid arguments."},
    401: {"model": ErrorBody, "description": "A missing or wrong API key (Authorization: Bearer)."},
    403: {
        "model": ErrorBody,
        "description": "The key lacks the permission this needs, or reaches beyond its part "
        "of the store; or the Host / Origin header is not allowed.",
    },
    404: {"model": ErrorBody, "description": "No such session or memory."},
    413: {
        "model": ErrorBody,
        "description": "The body, a question, a context or a list of files is larger than "
        "the server's limits (limits.* in its config).",
    },
    503: {
        "model": ErrorBody,
        "description": "The store is missing, being replaced or cannot be written (disk full, "
        "read-only), or the server is at capacity (then with a Retry-After header: try again "
        "after that many seconds).",
    },
}


def error_status(exc: MemoryBankError) -> int:
    return next((status for kind, status in _ERROR_STATUS if isinstance(exc, kind)), 500)
