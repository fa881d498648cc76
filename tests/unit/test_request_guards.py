"""The HTTP API's refusals, on a FastAPI app wired as the ingress wires its own (no Ray): an
over-limit body is a 413 in the API's error body and is never read whole; a request that does
not validate is a 422 whatever text it holds, never a 500."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from pydantic import ValidationError

from actors.request_guards import (
    BodyTooLarge,
    EscapedJSONResponse,
    LimitRequestBody,
    refused_body,
    refused_validation,
)
from actors.serve_api import InterceptRequest, QueryRequest
from memory_bank.config import LimitsConfig

LIMIT = 4096


@pytest.fixture
def client() -> TestClient:
    app = FastAPI(default_response_class=EscapedJSONResponse)
    app.state.limits = LimitsConfig(max_body_bytes=LIMIT)
    app.add_middleware(LimitRequestBody)
    app.add_exception_handler(BodyTooLarge, refused_body)
    app.add_exception_handler(RequestValidationError, refused_validation)

    @app.post("/query")
    def query(request: QueryRequest) -> dict:
        return {"question": request.question}

    return TestClient(app)


def test_a_declared_body_over_the_limit_is_refused_with_the_error_body(client):
    response = client.post("/query", json={"question": "x" * (2 * LIMIT)})
    assert response.status_code == 413
    assert response.json() == {
        "error": "ContentTooLarge",
        "detail": f"the request body is larger than {LIMIT:,} bytes (limits.max_body_bytes)",
    }


def test_a_chunked_body_is_refused_before_it_is_read_whole(client):
    """The app is driven as a server drives it: body chunks are handed over one at a time,
    as the app asks for them."""
    pulled = []

    async def receive():
        pulled.append(1024)
        return {"type": "http.request", "body": b"x" * 1024, "more_body": len(pulled) < 1000}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/query",
        "raw_path": b"/query",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("testserver", 80),
        "client": ("testclient", 50000),
    }
    asyncio.run(client.app(scope, receive, send))

    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"] == "ContentTooLarge"
    assert sum(pulled) <= LIMIT + 1024  # of the 1,024,000 bytes offered


def test_a_lone_surrogate_is_a_422_naming_where_it_is(client):
    response = client.post(
        "/query",
        content=b'{"question": "why \\ud800?"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422
    assert "body.question holds a lone surrogate" in response.text


def test_text_that_validates_is_echoed_whatever_it_holds(client):
    question = "naïve \U0001f600 \u202e \x00 question"
    response = client.post("/query", json={"question": question})
    assert response.status_code == 200
    assert response.json() == {"question": question}


def test_a_long_invalid_input_is_not_echoed_back(client):
    response = client.post("/query", json={"question": "x" * 3000, "mode": "deep"})
    assert response.status_code == 422
    assert len(response.content) < 1000


def test_surrogates_anywhere_in_a_request_are_refused():
    with pytest.raises(ValidationError, match=r"body.metadata.k\[1\] holds a lone surrogate"):
        InterceptRequest.model_validate({"context": "c", "metadata": {"k": ["ok", "\ud800"]}})
    with pytest.raises(ValidationError, match="body.metadata key holds a lone surrogate"):
        InterceptRequest.model_validate({"context": "c", "metadata": {"\udfff": 1}})
