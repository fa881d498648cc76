"""Property-based tests (Hypothesis) over the source readers and the HTTP API's request handling:
hostile files are read or skipped with a reason, hostile requests get a status below 500 with
no traceback, and a folder of hostile files ingests into a store that verifies. The counts here
are kept small for the suite; bench/fuzz.py runs more than 10,000 inputs."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from actors.request_guards import (
    BodyTooLarge,
    EscapedJSONResponse,
    LimitRequestBody,
    refused_body,
    refused_validation,
)
from actors.serve_api import InterceptRequest, QueryRequest, SearchRequest, TurnRequest
from memory_bank.app.bank import MemoryBank
from memory_bank.config import LimitsConfig
from memory_bank.store.verify import verify_store
from tests.fuzz_inputs import (
    SUFFIXES,
    Tally,
    file_contents,
    file_stems,
    http_requests,
    read_hostile_file,
    send_hostile_request,
)

FIXTURES_REUSED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=200, deadline=None, suppress_health_check=FIXTURES_REUSED)
@given(stem=file_stems, suffix=st.sampled_from(SUFFIXES), content=file_contents)
# Found by bench/fuzz.py: JSON escapes half a surrogate pair, which no UTF-8 text holds.
@example(stem="nil", suffix=".json", content=b'[{"speaker": "a", "text": "x \\ud800 y"}]')
def test_a_hostile_file_is_read_or_skipped_with_a_reason(tmp_path, stem, suffix, content):
    tally = Tally()
    read_hostile_file(tmp_path, stem, suffix, content, tally)
    assert tally.tracebacks == 0, tally.failures


@settings(max_examples=3, deadline=None, suppress_health_check=FIXTURES_REUSED)
@given(
    files=st.lists(
        st.tuples(file_stems, st.sampled_from(SUFFIXES), file_contents),
        min_size=1,
        max_size=10,
        unique_by=lambda file: (file[0] + file[1]).lower(),
    )
)
def test_a_folder_of_hostile_files_ingests_into_a_store_that_verifies(
    tmp_path_factory, embedder, files
):
    folder = tmp_path_factory.mktemp("hostile")
    for stem, suffix, content in files:
        try:
            (folder / f"{stem}{suffix}").write_bytes(content)
        except OSError:
            continue
    (folder / "plain.md").write_text("# Plain\n\nOne ordinary note among hostile files.")
    store = tmp_path_factory.mktemp("store") / "store"

    summary = MemoryBank(store, embedder=embedder).add(files=[folder])

    assert summary.documents >= 1
    report = verify_store(store)
    assert report.ok, report.problems


@pytest.fixture(scope="module")
def api() -> TestClient:
    """The request models and refusals of the HTTP API, as the ingress wires them, over
    handlers that echo what they received."""
    app = FastAPI(default_response_class=EscapedJSONResponse)
    app.state.limits = LimitsConfig()
    app.add_middleware(LimitRequestBody)
    app.add_exception_handler(BodyTooLarge, refused_body)
    app.add_exception_handler(RequestValidationError, refused_validation)

    @app.post("/query")
    def query(request: QueryRequest) -> QueryRequest:
        return request

    @app.post("/search")
    def search(request: SearchRequest) -> SearchRequest:
        return request

    @app.post("/sessions/{session_id}/intercept")
    def intercept(session_id: str, request: InterceptRequest) -> InterceptRequest:
        return request

    @app.post("/conversations/{conversation_id}/turns")
    def turn(conversation_id: str, request: TurnRequest) -> TurnRequest:
        return request

    @app.get("/sessions/{session_id}")
    def session(session_id: str) -> dict:
        return {"session_id": session_id}

    return TestClient(app)


@settings(max_examples=300, deadline=None, suppress_health_check=FIXTURES_REUSED)
@given(request=http_requests())
def test_a_hostile_request_is_answered_below_500_without_a_traceback(api, request):
    tally = Tally()
    send_hostile_request(api, request, tally)
    assert tally.server_errors == tally.tracebacks == 0, tally.failures


@pytest.mark.parametrize("name", ["a\x00b", "~no_such_user_x/notes.md", "\ud800"])
def test_a_name_that_can_be_no_path_names_no_document(name):
    """Found by bench/fuzz.py: `within` holding a NUL byte was a 500."""
    from memory_bank.errors import StoreError
    from memory_bank.store.sources import resolve_documents

    with pytest.raises(StoreError, match="not in the store"):
        resolve_documents({"d1": "/tmp/notes.md"}, [name])
