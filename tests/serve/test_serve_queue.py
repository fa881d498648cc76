"""More clients than the query replica admits, over real HTTP: those beyond it wait their turn
in the ingress's queue (actors/admission.py), every one is answered, and the replica is handed
no more than it admits.

Left to wait in Serve's router instead, they were retried with backoff while the replica went
idle, and throughput collapsed. Here the replica admits 4 and the queue holds 32: 4 clients
never wait, 36 fill both. Where the requests waited is read from the ingress's queue and the
replica's own counts (the most calls out, waiting and held at once, and how many waited), not
from timings; what the queue does to throughput is measured by `python bench/query.py --sweep`
(its rows beyond the 64 clients one replica admits).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from actors.admission import AdmissionStats
from memory_bank.config import AppConfig
from tests.load_client import LoadResult, closed_loop, free_port, numbered_questions

pytestmark = [pytest.mark.ray, pytest.mark.serve]

CONFIG = AppConfig.model_validate({"serve": {"max_ongoing_requests": 4, "max_queued_requests": 32}})
ADMITTED = CONFIG.serve.max_ongoing_requests
QUEUED = CONFIG.serve.max_queued_requests
CROWD = ADMITTED + QUEUED


@dataclass
class Runs:
    admitted: LoadResult  # ADMITTED clients
    queue_after_admitted: AdmissionStats  # the ingress's queue then
    crowd: LoadResult  # CROWD clients, next
    queue_after_crowd: AdmissionStats
    replica_most_in_flight: int  # the most requests the replica held at once, over both


@pytest.fixture(scope="module")
def runs(ray_cluster, ml_tech_store):
    from ray import serve

    from actors.serve_app import APP_NAME, MemoryBankIngress, start
    from actors.serve_model import MemoryBankModel

    base_url = start(ml_tech_store, CONFIG, "127.0.0.1", free_port())
    ingress = serve.get_deployment_handle(MemoryBankIngress.name, app_name=APP_NAME)
    replica = serve.get_deployment_handle(MemoryBankModel.name, app_name=APP_NAME)
    body = numbered_questions()

    def drive(clients: int, seconds: float) -> LoadResult:
        return asyncio.run(closed_loop(base_url, "/query", body, clients, seconds))

    try:
        admitted = drive(ADMITTED, 3.0)
        queue_after_admitted = ingress.admission_stats.remote().result()
        crowd = drive(CROWD, 5.0)
        runs = Runs(
            admitted,
            queue_after_admitted,
            crowd,
            ingress.admission_stats.remote().result(),
            replica.most_in_flight.remote().result(),
        )
        for run in (runs.admitted, runs.crowd):
            print(f"{run.clients:>2} clients: {dict(run.statuses)}")
        print(runs.queue_after_admitted, runs.queue_after_crowd, runs.replica_most_in_flight)
        yield runs
    finally:
        serve.shutdown()


def test_every_client_is_answered_and_none_turned_away(runs):
    for run in (runs.admitted, runs.crowd):
        assert run.unexplained == [], run.unexplained[:5]
        # The queue holds every client beyond the replica: none gets a 503.
        assert set(run.statuses) == {200}, run.statuses


def test_only_the_clients_beyond_the_replica_wait_and_they_wait_in_the_ingress_queue(runs):
    before, after = runs.queue_after_admitted, runs.queue_after_crowd

    # As many clients as the replica admits: each is let through at once.
    assert (before.waited, before.most_waiting) == (0, 0)
    # Nine clients for every place: at any moment most of them have a request waiting at the
    # ingress, so most requests waited there (with the queue bypassed, none would).
    answered = runs.crowd.statuses[200]
    assert after.waited >= answered / 2, (after, answered)
    assert 0 < after.most_waiting <= QUEUED, after


def test_the_ingress_lets_out_every_place_of_the_replica_and_never_more(runs):
    # Every place was used, and nothing was left for Serve's router to hold.
    assert runs.queue_after_crowd.most_in_flight == ADMITTED, runs.queue_after_crowd


def test_the_replica_never_holds_more_than_it_admits(runs):
    assert runs.replica_most_in_flight <= ADMITTED, runs.replica_most_in_flight
