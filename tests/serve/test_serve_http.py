"""The Serve app over real HTTP on 127.0.0.1: a small store ingested from Markdown files, one
replica, and every endpoint, including error bodies and picking up a second ingest."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.schemas import ChatResult, DirectoryNode, SearchHit
from memory_bank.store.reader import StoreReader
from tests.load_client import free_port, post_chunked_until_answered

pytestmark = [pytest.mark.ray, pytest.mark.serve]

DOCUMENTS = {
    "python_concurrency.md": """# Python concurrency

The Global Interpreter Lock (GIL) in CPython allows only one thread to execute Python bytecode
at a time. Threads still help for I/O-bound work because the GIL is released while a thread
waits on sockets and files. CPU-bound code should use multiprocessing, which runs one
interpreter per process, each with its own GIL.

asyncio runs coroutines on a single-threaded event loop. An await expression suspends the
coroutine until the awaited future completes, so other tasks can run in the meantime.
asyncio.gather schedules several coroutines concurrently and collects their results in order.
""",
    "transformers.md": """# Transformer models

The transformer architecture replaces recurrence with self-attention. Each token is projected
to a query, a key and a value; the attention weights are the softmax of the scaled dot
products of queries and keys. Multi-head attention runs several heads in parallel.

BERT is a bidirectional transformer encoder published by Google in 2018. It is pretrained with
masked language modeling, predicting 15 percent of tokens that are masked out, and with next
sentence prediction, and it is then fine-tuned on downstream tasks such as question answering.
""",
    "sourdough.md": """# Baking sourdough bread

A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in flour and
water. Feeding the starter twice a day keeps it active; it is ready to bake with when it
doubles in size within six hours of a feeding.

The dough rests in bulk fermentation for four to six hours at room temperature, with a few
sets of stretch and folds. Shaped loaves proof overnight in the fridge and bake in a covered
Dutch oven at 250 degrees Celsius, uncovered for the last twenty minutes.
""",
}

ADDED_DOCUMENT = (
    "rust_ownership.md",
    """# Rust ownership

Rust's borrow checker enforces ownership rules at compile time: every value has exactly one
owner, and a value may have either one mutable reference or any number of shared references,
never both at once. When the owner goes out of scope the value is dropped, so Rust needs no
garbage collector and has no data races in safe code.
""",
)


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("corpus")
    return {name: _write(directory, name, text) for name, text in DOCUMENTS.items()}


@pytest.fixture(scope="module")
def bank(tmp_path_factory, corpus) -> MemoryBank:
    memory_bank = MemoryBank(tmp_path_factory.mktemp("serve") / "store")
    memory_bank.add(files=sorted(corpus.values()))
    return memory_bank


@pytest.fixture(scope="module")
def client(ray_cluster, bank):
    from ray import serve

    from actors.serve_app import start

    base_url = start(bank.store, AppConfig(), host="127.0.0.1", port=free_port())
    try:
        with httpx.Client(base_url=base_url, timeout=60.0) as http:
            yield http
    finally:
        serve.shutdown()


def test_healthz_reports_the_store_version(client, bank):
    response = client.get("/healthz")

    assert response.status_code == 200, response.text
    assert response.json() == {
        "status": "ok",
        "store_version": StoreReader(bank.store).store_version,
    }


def test_query_answers_with_cited_sources_and_confidence(client):
    response = client.post(
        "/query", json={"question": "What does the Global Interpreter Lock allow?"}
    )

    assert response.status_code == 200, response.text
    result = ChatResult.model_validate(response.json())
    assert result.question == "What does the Global Interpreter Lock allow?"
    assert result.sources, "an answerable question cites the chunk files it used"
    assert all(source.endswith(".md") for source in result.sources)
    assert result.confidence > 0.5
    assert "one thread" in result.answer


def test_query_about_an_absent_topic_has_low_confidence(client):
    response = client.post(
        "/query",
        json={"question": "How does Kubernetes schedule pods onto nodes?", "max_iterations": 5},
    )

    assert response.status_code == 200, response.text
    assert response.json()["confidence"] < 0.3


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "vector", "tree"])
def test_search_hits_carry_the_ingested_file_path(client, corpus, mode):
    response = client.post(
        "/search", json={"query": "sourdough starter feeding", "top_k": 3, "mode": mode}
    )

    assert response.status_code == 200, response.text
    hits = [SearchHit.model_validate(hit) for hit in response.json()]
    assert 1 <= len(hits) <= 3
    chunk_hits = [hit for hit in hits if hit.kind == "chunk"]
    assert chunk_hits[0].source == str(corpus["sourdough.md"])
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_tree_covers_every_chunk(client, bank):
    response = client.get("/tree")

    assert response.status_code == 200, response.text
    tree = DirectoryNode.model_validate(response.json())
    assert tree.path == "/"
    indices = sorted(i for node in tree.iter_nodes() for i in node.chunk_indices)
    assert indices == list(range(StoreReader(bank.store).meta["total_chunks"]))


def test_openapi_schema_and_docs_are_served(client):
    schema = client.get("/openapi.json")
    docs = client.get("/docs")

    assert schema.status_code == 200
    assert {"/query", "/search", "/tree", "/healthz"} <= set(schema.json()["paths"])
    assert docs.status_code == 200
    assert "swagger" in docs.text.lower()


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/query", {"question": ""}, "question"),
        ("/query", {"question": "   "}, "question"),
        ("/query", {"question": "gil?", "max_iterations": 0}, "max_iterations"),
        ("/query", {"question": "gil?", "mode": "deep"}, "mode"),
        ("/search", {"query": "gil", "mode": "fuzzy"}, "mode"),
        ("/search", {"query": "gil", "top_k": 1000}, "top_k"),
    ],
)
def test_invalid_requests_are_rejected_with_the_offending_field(client, path, body, field):
    response = client.post(path, json=body)

    assert response.status_code == 422
    problems = response.json()["detail"]
    assert any(field in problem["loc"] and problem["msg"] for problem in problems)


def test_a_missing_store_is_a_503_with_a_message(client, bank):
    moved = bank.store.with_name("store_moved_away")
    bank.store.rename(moved)
    try:
        response = client.post("/search", json={"query": "gil"})
    finally:
        moved.rename(bank.store)

    assert response.status_code == 503
    body = response.json()
    assert body["error"] == "StoreError"
    assert "no memory store" in body["detail"]
    assert "Traceback" not in response.text


def test_a_second_ingest_is_picked_up_by_the_next_request(client, bank, tmp_path):
    before = client.get("/healthz").json()["store_version"]
    added = _write(tmp_path, *ADDED_DOCUMENT)

    bank.add(files=[added])
    response = client.post("/search", json={"query": "borrow checker ownership", "top_k": 1})

    after = client.get("/healthz").json()["store_version"]
    assert after != before
    assert after == StoreReader(bank.store).store_version
    assert response.status_code == 200, response.text
    assert response.json()[0]["source"] == str(added)


def test_query_in_research_mode_returns_its_rounds(client):
    response = client.post(
        "/query",
        json={"question": "What does the Global Interpreter Lock allow?", "mode": "research"},
    )

    assert response.status_code == 200, response.text
    result = ChatResult.model_validate(response.json())
    assert result.sources and "python_concurrency" in " ".join(result.sources)
    actions = [step.action for step in result.steps]
    assert actions[0] == "plan" and "reflect" in actions
    assert "thread" in result.answer.lower()


def test_a_conversation_over_http(client, bank):
    base = "/conversations/serve-talk"
    turns = [
        (
            "Caroline",
            "I went to a LGBTQ support group yesterday, it was powerful.",
            "2023-05-08T13:56:00",
        ),
        ("Melanie", "The sourdough starter doubled in six hours this morning.", None),
        ("Caroline", "My cat knocked the plant off the windowsill again.", None),
    ]
    for number, (speaker, text, timestamp) in enumerate(turns):
        body = {"speaker": speaker, "text": text}
        if timestamp:
            body["timestamp"] = timestamp
        response = client.post(f"{base}/turns", json=body)
        assert response.status_code == 200, response.text
        assert response.json()["turn_id"] == number
    assert response.json()["tokens"] > 0

    recalled = client.post(f"{base}/recall", json={"query": "When was the support group?"})
    assert recalled.status_code == 200, recalled.text
    best = recalled.json()["turns"][0]
    assert best["turn_id"] == 0 and "yesterday (2023-05-07)" in best["text"]

    info = client.get(base).json()
    assert info["turns"] == 3 and info["working_turns"] == 3
    assert "serve-talk" in client.get("/conversations").json()
    assert client.post(f"{base}/consolidate").json() == {"consolidated": 0}  # nothing evicted

    bad = client.post(
        f"{base}/turns", json={"speaker": "Ana", "text": "hi", "timestamp": "soonish"}
    )
    assert bad.status_code == 400 and "timestamp" in bad.json()["detail"]
    assert client.post("/conversations/..bad/recall", json={"query": "x"}).status_code == 400
    assert client.post(f"{base}/turns", json={"speaker": "", "text": "x"}).status_code == 422


def test_an_outside_agent_runs_a_session_over_http(client, bank):
    opened = client.post("/sessions", json={"task_goal": "How should a sourdough starter be fed?"})
    assert opened.status_code == 200, opened.text
    session = opened.json()["doc_id"]
    assert len(opened.json()["pending_tasks"]) <= 1

    intercepted = client.post(
        f"/sessions/{session}/intercept",
        json={
            "context": "A sourdough starter is fed twice a day with equal weights of flour and water."
        },
    )
    assert intercepted.status_code == 200, intercepted.text
    [node] = intercepted.json()["new_nodes"]
    prompt = client.get(f"/sessions/{session}/prompt")
    assert prompt.status_code == 200 and prompt.json()["prompt"].startswith("<task>")

    memory = client.get(f"/memory/{node['id']}")
    assert memory.status_code == 200, memory.text
    assert memory.json()["kind"] == "session"
    assert "twice a day" in memory.json()["entries"][0]["text"]

    closed = client.post(f"/sessions/{session}/close")
    assert closed.status_code == 200 and closed.json()["open"] is False
    again = client.post(f"/sessions/{session}/intercept", json={"context": "more"})
    assert again.status_code == 404 and again.json()["error"] == "SessionError"


def test_two_sources_disagreeing_without_a_cue_are_cross_validated_over_http(client):
    opened = client.post("/sessions", json={"task_goal": "What is the Kelby tram depot built of?"})
    session = opened.json()["doc_id"]
    contexts = [
        ("The Kelby tram depot is built of yellow brick.", "https://a.example.org"),
        ("The Kelby tram depot is built of grey limestone.", "https://b.example.net"),
    ]
    replies = [
        client.post(
            f"/sessions/{session}/intercept",
            json={"context": text, "metadata": {"source": source}},
        ).json()
        for text, source in contexts
    ]
    [conflict] = replies[1]["conflicts"]
    assert {conflict["old_value"], conflict["new_value"]} == {"yellow brick", "grey limestone"}
    assert replies[1]["insight_doc"]["pending_tasks"][0].startswith("Cross-validate")

    validated = client.post(
        f"/sessions/{session}/intercept",
        json={"context": "Listed building record: the Kelby tram depot is built of yellow brick."},
    ).json()

    assert validated["task_type"] == "cross_validate" and validated["resolved"]
    current = client.get(f"/memory/{validated['new_nodes'][0]['id']}").json()
    assert current["status"] == "current" and "yellow brick" in current["summary"]
    assert "grey limestone" not in current["summary"]
    assert any("grey limestone" in h["summary"] for h in current["history"])


def test_a_stored_memory_is_readable_with_its_raw_chunk(client, bank):
    chunk_id = StoreReader(bank.store).memories().column("chunk_id").to_pylist()[0]

    response = client.get(f"/memory/{chunk_id}")

    assert response.status_code == 200, response.text
    assert response.json()["kind"] == "memory"
    assert response.json()["entries"][0]["entry_id"] == chunk_id
    assert client.get("/memory/no-such-node").status_code == 404


def test_the_replica_collector_never_traverses_what_the_replica_loaded(client):
    """actors/serve_model.py relies on Serve freezing the collector once a replica's __init__
    returns: a full collection over the loaded model and store is slow enough to show in the
    tail latency of a loaded replica."""
    import gc

    import ray

    names = [
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if "#MemoryBank#" in actor["name"]
    ]
    assert names, "no MemoryBank replica among Ray's named actors"
    replica = ray.get_actor(names[0], namespace="serve")

    frozen = ray.get(replica.__ray_call__.remote(lambda _: gc.get_freeze_count()))

    assert frozen > 100_000  # the model, the indexes (587,000 in a bench replica on the sample)


def test_every_replica_port_of_a_loopback_app_listens_on_loopback(client):
    """Serve binds each replica's inter-deployment gRPC port to every interface; served on
    127.0.0.1, actors/loopback.py keeps it on loopback (Ray's own worker ports aside)."""
    import ipaddress

    import psutil
    import ray

    names = [
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if "#MemoryBank" in actor["name"]
    ]
    assert len(names) == 2, names  # the ingress and the query replica
    for name in names:
        replica = ray.get_actor(name, namespace="serve")
        pid, port = ray.get(
            replica.__ray_call__.remote(
                lambda actor: (__import__("os").getpid(), actor._replica_impl._internal_grpc_port)
            )
        )
        listening = [
            connection.laddr.ip
            for connection in psutil.Process(pid).net_connections(kind="tcp")
            if connection.status == psutil.CONN_LISTEN and connection.laddr.port == port
        ]
        assert listening, f"{name}: nothing listens on its port {port}"
        for address in listening:
            ip = ipaddress.ip_address(address)
            mapped = getattr(ip, "ipv4_mapped", None)
            assert (mapped or ip).is_loopback, f"{name} listens on {address}:{port}"


def test_oversized_requests_are_refused_at_once_with_413(client):
    body = b'{"question": "' + b"x" * (2 << 20) + b'"}'  # past limits.max_body_bytes (1 MiB)
    response = client.post("/query", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"] == "ContentTooLarge"

    response = client.post("/query", json={"question": "why? " * 3000})  # > 10,000 characters
    assert response.status_code == 413
    assert response.json()["error"] == "InputTooLargeError"
    assert "limits.max_question_chars" in response.json()["detail"]

    session = client.post("/sessions", json={"task_goal": "Check the request limits"})
    session_id = session.json()["doc_id"]
    response = client.post(f"/sessions/{session_id}/intercept", json={"context": "y" * 300_000})
    assert response.status_code == 413
    assert "limits.max_context_chars" in response.json()["detail"]


def test_a_chunked_body_over_the_limit_is_stopped_in_the_proxy(client):
    """Serve's proxy reads a body as fast as it comes, whatever its replica reads: the body
    limit in the proxy stops it there, so a client that reads while it sends is answered
    long before it has sent what it offered."""
    limit = AppConfig().limits.max_body_bytes
    offered = 256 * limit
    sent, answer = post_chunked_until_answered(str(client.base_url), "/query", offered)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"ContentTooLarge" in answer
    assert sent < offered // 4  # the limit, and what the sockets' buffers took meanwhile


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/query", b'{"question": "what \\ud800 is this?"}'),
        ("/search", b'{"query": "\\udfff"}'),
        ("/sessions", b'{"task_goal": "a \\ud83d goal"}'),
        ("/query", b'{"question": "\\ud800", "mode": "deep"}'),  # invalid twice over
    ],
)
def test_a_lone_surrogate_is_a_422_not_a_500(client, path, body):
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert "Traceback" not in response.text


def test_hostile_requests_get_no_500_and_leave_a_store_that_verifies(client, bank):
    """Hypothesis over the real endpoints (random JSON, unicode edge cases, raw bytes, path
    segments); bench/fuzz.py sends more than 10,000 of these."""
    from hypothesis import HealthCheck, given, settings

    from memory_bank.store.verify import verify_store
    from tests.fuzz_inputs import Tally, http_requests, send_hostile_request

    session = client.post("/sessions", json={"task_goal": "Answer hostile requests"})
    tally = Tally()

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(request=http_requests(session=session.json()["doc_id"]))
    def hostile(request):
        send_hostile_request(client, request, tally)

    hostile()
    assert tally.inputs >= 60
    assert tally.server_errors == tally.tracebacks == 0, tally.failures
    assert verify_store(bank.store).ok
