"""The ingress's admission queue (actors/admission.py), on a plain event loop: no Ray."""

from __future__ import annotations

import asyncio
import random

import pytest

from actors.admission import AdmissionQueue, AdmissionStats, QueueFull

# Not a timing assertion: a place lost by a bug would leave a caller waiting for ever.
DEADLOCK_GUARD_S = 10.0


async def _hold(gate: AdmissionQueue, name: str, order: list[str], release: asyncio.Event):
    async with gate.admitted():
        order.append(name)
        await release.wait()


def test_beyond_capacity_calls_wait_in_arrival_order_and_beyond_the_queue_are_refused():
    async def scenario() -> list[str]:
        gate = AdmissionQueue(capacity=2, queue=2)
        order: list[str] = []
        releases = {name: asyncio.Event() for name in "abcd"}
        tasks = {}
        for name in "abcd":
            tasks[name] = asyncio.ensure_future(_hold(gate, name, order, releases[name]))
            await asyncio.sleep(0)
        assert (gate.in_flight, gate.waiting) == (2, 2)
        with pytest.raises(QueueFull):
            async with gate.admitted():
                pass
        releases["b"].set()
        await tasks["b"]
        await asyncio.sleep(0)
        assert order == ["a", "b", "c"]  # c, the first to wait, took b's place
        assert (gate.in_flight, gate.waiting) == (2, 1)
        for name in "acd":
            releases[name].set()
        await asyncio.gather(*tasks.values())
        assert (gate.in_flight, gate.waiting) == (0, 0)
        return order

    assert asyncio.run(scenario()) == ["a", "b", "c", "d"]


def test_a_caller_that_gives_up_while_waiting_leaves_no_trace():
    async def scenario() -> None:
        gate = AdmissionQueue(capacity=1, queue=2)
        order: list[str] = []
        release = asyncio.Event()
        first = asyncio.ensure_future(_hold(gate, "first", order, release))
        await asyncio.sleep(0)
        quitter = asyncio.ensure_future(_hold(gate, "quitter", order, release))
        last = asyncio.ensure_future(_hold(gate, "last", order, release))
        await asyncio.sleep(0)
        quitter.cancel()  # a client that hung up while in line
        await asyncio.sleep(0)
        assert gate.waiting == 1
        release.set()
        await asyncio.wait_for(asyncio.gather(first, last), DEADLOCK_GUARD_S)
        assert order == ["first", "last"]
        assert (gate.in_flight, gate.waiting) == (0, 0)

    asyncio.run(scenario())


def test_a_place_handed_to_a_caller_that_gave_up_goes_to_the_next_in_line():
    async def scenario() -> None:
        gate = AdmissionQueue(capacity=1, queue=2)
        order: list[str] = []
        release = asyncio.Event()
        release.set()
        async with gate.admitted():
            quitter = asyncio.ensure_future(_hold(gate, "quitter", order, release))
            last = asyncio.ensure_future(_hold(gate, "last", order, release))
            await asyncio.sleep(0)
            assert gate.waiting == 2
        # Leaving handed the place to the quitter; it gives up before it runs again.
        quitter.cancel()
        await asyncio.gather(quitter, return_exceptions=True)
        await asyncio.wait_for(last, DEADLOCK_GUARD_S)  # a lost place would leave it waiting
        assert order == ["last"]
        assert (gate.in_flight, gate.waiting) == (0, 0)

    asyncio.run(scenario())


def test_under_random_load_never_more_than_capacity_are_out():
    # The load is a seeded sequence of arrivals and departures, each followed by a few turns of
    # the event loop; no wall-clock sleeps, so the machine's load cannot change what happens.
    async def scenario() -> tuple[int, int, int]:
        gate = AdmissionQueue(capacity=3, queue=5)
        rng = random.Random(14)
        out = peak = refused = 0
        inside: list[asyncio.Event] = []

        async def call() -> None:
            nonlocal out, peak, refused
            leave = asyncio.Event()
            try:
                async with gate.admitted():
                    out += 1
                    peak = max(peak, out)
                    inside.append(leave)
                    await leave.wait()
                    out -= 1
            except QueueFull:
                refused += 1

        calls = []
        for _ in range(400):
            if len(calls) < 200 and (not inside or rng.random() < 0.6):
                calls.append(asyncio.ensure_future(call()))
            elif inside:
                inside.pop(rng.randrange(len(inside))).set()
            for _ in range(3):
                await asyncio.sleep(0)
            assert out <= 3
        while inside or not all(c.done() for c in calls):
            if inside:
                inside.pop(0).set()
            await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.gather(*calls), DEADLOCK_GUARD_S)
        return peak, refused, gate.in_flight

    peak, refused, left = asyncio.run(scenario())
    assert peak == 3
    assert refused > 0
    assert left == 0


def test_the_stats_keep_the_most_out_and_waiting_and_who_waited():
    async def scenario(callers: int) -> AdmissionStats:
        gate = AdmissionQueue(capacity=2, queue=2)
        release = asyncio.Event()
        order: list[str] = []
        calls = []
        for number in range(callers):
            calls.append(asyncio.ensure_future(_hold(gate, str(number), order, release)))
            await asyncio.sleep(0)
        release.set()
        await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), DEADLOCK_GUARD_S)
        assert (gate.in_flight, gate.waiting) == (0, 0)
        return gate.stats()  # after they all left: the most at once, not what is left

    # As many callers as places: none waits. Two more wait; a fifth is refused, never waiting.
    assert asyncio.run(scenario(2)) == AdmissionStats(most_in_flight=2, most_waiting=0, waited=0)
    assert asyncio.run(scenario(5)) == AdmissionStats(most_in_flight=2, most_waiting=2, waited=2)


def test_capacity_and_queue_are_checked():
    with pytest.raises(ValueError):
        AdmissionQueue(capacity=0, queue=1)
    with pytest.raises(ValueError):
        AdmissionQueue(capacity=1, queue=-1)
