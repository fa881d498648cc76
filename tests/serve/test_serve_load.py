"""The Serve app under load, over real HTTP on 127.0.0.1, with an API key, on the default
config (one replica admitting `serve.max_ongoing_requests`, a queue of `max_queued_requests`
at the ingress).

One run drives /query with 1, then 8, then 50 concurrent clients (closed loop: each sends its
next question when the last one is answered), while a probe asks /healthz twice a second.
Many clients once made throughput collapse: left at Serve's defaults, the replica admitted a
few requests and the rest waited in Serve's router, which retried it with backoff while it went
idle. What keeps it from collapsing is asserted here from the ingress's queue and the replica's
own counts, never from timings: the 50 clients fit in what the replica admits, so none of them
waits in the ingress's queue and none is turned away; the ingress lets the crowd out together;
the replica holds more of the crowd at once than the small loads could give it, so the crowd was
not kept back in Serve's router, and never more than the ingress let out; every answer is a 200;
health is answered while the replica is saturated, never behind the model; and the replica
embedded the questions that waited together in one batch. What many clients do to throughput
is measured by `python bench/query.py --sweep` (`--sweep-clients 1 8 50` for these loads).
(Clients beyond what the replicas admit: tests/serve/test_serve_queue.py; load shedding beyond
the queue: tests/serve/test_serve_backpressure.py.)
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx
import numpy as np
import pytest

from actors.admission import AdmissionStats
from memory_bank.config import AppConfig
from tests.load_client import LoadResult, closed_loop, free_port, numbered_questions

pytestmark = [pytest.mark.ray, pytest.mark.serve]

API_KEY = "a-test-key-for-the-load-run"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
CONFIG = AppConfig()
ADMITTED = CONFIG.serve.max_ongoing_requests  # by the one replica, and let out by the ingress
PHASES = ((1, 4.0), (8, 5.0), (50, 25.0))  # (clients, seconds)
SMALL_LOAD = max(clients for clients, _ in PHASES[:-1])
HEALTH_PROBE_EVERY_S = 0.5


@dataclass
class LoadRun:
    phases: list[LoadResult]  # one per PHASES, in order
    health: list[tuple[int, float]]  # (status, seconds) of each probe during the last phase
    queue: AdmissionStats  # what the ingress's queue held over the whole run
    replica_most_in_flight: int  # the most requests the replica held at once, over the run


async def _probe_health(base_url: str, until: asyncio.Event) -> list[tuple[int, float]]:
    answers = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60.0) as http:
        while not until.is_set():
            started = time.perf_counter()
            response = await http.get("/healthz")
            answers.append((response.status_code, time.perf_counter() - started))
            await asyncio.sleep(HEALTH_PROBE_EVERY_S)
    return answers


async def _load_run(base_url: str):
    body = numbered_questions()

    async def drive(clients: int, seconds: float) -> LoadResult:
        return await closed_loop(base_url, "/query", body, clients, seconds, headers=AUTH)

    await drive(8, 2.0)  # warm-up: connections, first batches
    phases = [await drive(clients, seconds) for clients, seconds in PHASES[:-1]]
    done = asyncio.Event()
    probe = asyncio.ensure_future(_probe_health(base_url, done))
    phases.append(await drive(*PHASES[-1]))
    done.set()
    return phases, await probe


@pytest.fixture(scope="module")
def server(ray_cluster, ml_tech_store):
    from ray import serve

    from actors.serve_app import start

    base_url = start(ml_tech_store, CONFIG, "127.0.0.1", free_port(), api_key=API_KEY)
    try:
        yield base_url
    finally:
        serve.shutdown()


@pytest.fixture(scope="module")
def load_run(server) -> LoadRun:
    from ray import serve

    from actors.serve_app import APP_NAME, MemoryBankIngress
    from actors.serve_model import MemoryBankModel

    phases, health = asyncio.run(_load_run(server))
    ingress = serve.get_deployment_handle(MemoryBankIngress.name, app_name=APP_NAME)
    replica = serve.get_deployment_handle(MemoryBankModel.name, app_name=APP_NAME)
    run = LoadRun(
        phases,
        health,
        ingress.admission_stats.remote().result(),
        replica.most_in_flight.remote().result(),
    )
    for phase in phases:
        print(
            f"{phase.clients:>3} clients: {phase.answered_per_s:5.1f} answers/s, "
            f"p50 {phase.percentile_ms(50):.0f} ms, {dict(phase.statuses)}"
        )
    print(run.queue, f"replica held at most {run.replica_most_in_flight}")
    return run


def test_under_load_every_request_is_answered(load_run):
    for phase in load_run.phases:
        assert phase.unexplained == [], phase.unexplained[:5]
        # The replica admits every client: none is turned away (not even with Retry-After).
        assert set(phase.statuses) == {200}, (phase.clients, phase.statuses)


def test_clients_the_replica_admits_never_wait_in_the_ingress_queue(load_run):
    crowd = PHASES[-1][0]
    assert crowd <= ADMITTED  # what this test is about; beyond: tests/serve/test_serve_queue.py

    assert (load_run.queue.waited, load_run.queue.most_waiting) == (0, 0), load_run.queue


def test_the_crowd_reaches_the_replica_together_and_no_more_than_it_admits(load_run):
    let_out = load_run.queue.most_in_flight
    held = load_run.replica_most_in_flight

    # More requests out at once than the small loads could send: the crowd's, through the line.
    assert SMALL_LOAD < let_out <= ADMITTED, load_run.queue
    # The replica held more at once than the small loads could give it: the crowd was not kept
    # back in Serve's router in front of a few places. And no more than the ingress let out:
    # every request the replica held came through the ingress's line.
    assert SMALL_LOAD < held <= let_out, (held, load_run.queue)


def test_health_is_answered_while_the_query_replica_is_saturated(load_run):
    crowd = load_run.phases[-1]
    statuses = [status for status, _ in load_run.health]
    waits = [seconds for _, seconds in load_run.health]

    assert len(load_run.health) >= 10
    assert set(statuses) == {200}
    # Served by the ingress, never queued behind the model: a typical health check takes a
    # small part of a typical answer to /query at the same moment (queued, it would take all).
    assert np.median(waits) < 0.25 * np.median(crowd.latencies_s)


def test_the_replica_embeds_waiting_questions_together_under_load(load_run):
    from ray import serve

    from actors.serve_app import APP_NAME
    from actors.serve_model import MemoryBankModel

    replica = serve.get_deployment_handle(MemoryBankModel.name, app_name=APP_NAME)
    batch_sizes = replica.batch_sizes.remote().result()

    questions = sum(size * count for size, count in batch_sizes.items())
    batches = sum(batch_sizes.values())
    assert max(batch_sizes) >= 8
    assert questions / batches > 2


def test_the_api_key_is_required_on_queries_but_not_on_health(server):
    question = {"question": "What does the GIL allow?"}
    with httpx.Client(base_url=server, timeout=60.0) as http:
        missing = http.post("/query", json=question)
        wrong = http.post("/query", json=question, headers={"Authorization": "Bearer nope"})
        not_bearer = http.get("/tree", headers={"Authorization": API_KEY})
        right = http.post("/query", json=question, headers=AUTH)
        tree = http.get("/tree", headers=AUTH)
        health = http.get("/healthz")

    for refused in (missing, wrong, not_bearer):
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"] == "Unauthorized"
    assert right.status_code == 200, right.text
    assert right.json()["sources"]
    assert tree.status_code == 200
    assert health.status_code == 200
