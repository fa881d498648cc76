"""Load shedding over real HTTP: beyond what the query replica admits plus the queue before it,
a request is turned away at once with 503 and Retry-After instead of waiting in line.

The app runs with the smallest limits (one request in the replica, one waiting) so that a burst
overflows them on any machine: with the default 64 + 64, whether 256 requests sent together
ever fill the queue depends on how fast the replica answers against how fast the ingress takes
them in (on a fast CI machine every one of them was answered).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from memory_bank.config import AppConfig
from tests.load_client import free_port

pytestmark = [pytest.mark.ray, pytest.mark.serve]

CONFIG = AppConfig.model_validate(
    {"serve": {"max_ongoing_requests": 1, "max_queued_requests": 1, "retry_after_s": 2}}
)
# Requests sent together: many times what the replica and its queue take.
BURST = 16 * (CONFIG.serve.max_ongoing_requests + CONFIG.serve.max_queued_requests)


async def _burst(base_url: str) -> list[tuple[int, str | None]]:
    """BURST different questions sent together, one connection each: (status, Retry-After)."""

    async def one(http: httpx.AsyncClient, number: int) -> tuple[int, str | None]:
        response = await http.post("/query", json={"question": f"What does the GIL do, {number}?"})
        return response.status_code, response.headers.get("retry-after")

    limits = httpx.Limits(max_connections=BURST)
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0, limits=limits) as http:
        return await asyncio.gather(*(one(http, number) for number in range(BURST)))


@pytest.fixture(scope="module")
def server(ray_cluster, ml_tech_store):
    from ray import serve

    from actors.serve_app import start

    base_url = start(ml_tech_store, CONFIG, "127.0.0.1", free_port())
    try:
        yield base_url
    finally:
        serve.shutdown()


@pytest.fixture(scope="module")
def burst(server):
    """The burst's (status, Retry-After) per request, and how many questions reached
    the query replica while it ran."""
    from ray import serve

    from actors.serve_app import APP_NAME
    from actors.serve_model import MemoryBankModel

    replica = serve.get_deployment_handle(MemoryBankModel.name, app_name=APP_NAME)

    def questions_embedded() -> int:
        batch_sizes = replica.batch_sizes.remote().result()
        return sum(size * count for size, count in batch_sizes.items())

    # One answer first: the replica's first question warms its model up.
    warm = httpx.post(f"{server}/query", json={"question": "What is the GIL?"}, timeout=120)
    assert warm.status_code == 200, warm.text
    before = questions_embedded()
    results = asyncio.run(_burst(server))
    return results, questions_embedded() - before


def test_beyond_the_replica_and_its_queue_requests_get_a_503_with_retry_after(burst):
    burst, _ = burst
    statuses = [status for status, _ in burst]
    turned_away = [retry for status, retry in burst if status == 503]

    assert set(statuses) == {200, 503}, statuses
    assert set(turned_away) == {str(CONFIG.serve.retry_after_s)}


def test_a_refused_request_never_reaches_the_model(burst):
    burst, questions_reached_replica = burst
    answered = [status for status, _ in burst if status == 200]

    # Each question of the burst is a new one, embedded once if it gets to the replica: only
    # the answered did. A refusal is decided by the ingress's router on arrival, before any
    # waiting in line for the model.
    assert questions_reached_replica == len(answered)


@pytest.mark.usefixtures("burst")
def test_once_the_burst_is_over_the_server_answers_again(server):
    # Nothing of the burst is left counted as waiting: a request alone is answered.
    with httpx.Client(base_url=server, timeout=120.0) as http:
        answers = [
            http.post("/query", json={"question": "What is a React hook?"}) for _ in range(3)
        ]

    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert all(answer.json()["sources"] for answer in answers)
