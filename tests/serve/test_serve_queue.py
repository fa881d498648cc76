"""More clients than the query replica admits, over real HTTP: those beyond it wait their turn
in the ingress's queue (actors/admission.py) and throughput holds.

Left to wait in Serve's router instead, they were retried with backoff while the replica went
idle, and throughput collapsed. Here the replica admits 4 and the queue holds 32, so 36
clients fill both; the comparison is within one run, never against wall time.
"""

from __future__ import annotations

import asyncio

import pytest

from memory_bank.config import AppConfig
from tests.load_client import closed_loop, free_port, numbered_questions

pytestmark = [pytest.mark.ray, pytest.mark.serve]

CONFIG = AppConfig.model_validate({"serve": {"max_ongoing_requests": 4, "max_queued_requests": 32}})
ADMITTED = CONFIG.serve.max_ongoing_requests
CROWD = ADMITTED + CONFIG.serve.max_queued_requests


@pytest.fixture(scope="module")
def runs(ray_cluster, ml_tech_store):
    from ray import serve

    from actors.serve_app import start

    base_url = start(ml_tech_store, CONFIG, "127.0.0.1", free_port())
    body = numbered_questions()

    async def drive():
        admitted = await closed_loop(base_url, "/query", body, ADMITTED, 5.0, ramp_s=2.0)
        crowd = await closed_loop(base_url, "/query", body, CROWD, 6.0, ramp_s=2.0)
        return admitted, crowd

    try:
        yield asyncio.run(drive())
    finally:
        serve.shutdown()


def test_clients_beyond_the_replica_wait_in_line_and_throughput_holds(runs):
    admitted, crowd = runs

    assert admitted.unexplained == [] and crowd.unexplained == []
    assert set(crowd.statuses) == {200}, crowd.statuses  # the queue holds every one of them
    assert crowd.answered_per_s >= 0.7 * admitted.answered_per_s, (
        admitted.answered_per_s,
        crowd.answered_per_s,
    )
