"""The query replica's domain thread, without Ray: one call at a time in arrival order, and the
questions waiting when the thread gets to them embedded in one batch."""

from __future__ import annotations

import asyncio
import threading

import pytest

from actors.domain_thread import DomainThread


class RecordingEncoder:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.calls_on: set[str] = set()

    def __call__(self, texts: list[str]) -> None:
        self.calls_on.add(threading.current_thread().name)
        self.batches.append(list(texts))


async def _busy_then_many(thread: DomainThread, questions: list[str], answered: list[str]):
    release = threading.Event()
    blocker = asyncio.ensure_future(thread.run(release.wait))
    await asyncio.sleep(0.05)  # the thread is now busy: the questions below queue behind it

    def answer(question: str) -> str:
        answered.append(question)
        return question.upper()

    calls = [asyncio.ensure_future(thread.run_embedded(q, answer, q)) for q in questions]
    await asyncio.sleep(0.05)
    release.set()
    await blocker
    return await asyncio.gather(*calls)


def test_questions_waiting_together_are_embedded_in_one_batch_and_answered_in_order():
    encoder = RecordingEncoder()
    thread = DomainThread(encoder, max_batch=32)
    questions = [f"question {n}" for n in range(10)]
    answered: list[str] = []

    results = asyncio.run(_busy_then_many(thread, questions, answered))

    assert results == [q.upper() for q in questions]
    assert answered == questions  # arrival order: the same wait for everyone
    assert encoder.batches == [questions]  # one forward pass for all ten
    assert thread.batch_sizes == {10: 1}
    assert (thread.most_in_flight, thread.in_flight) == (11, 0)  # the ten and the blocker
    assert len(encoder.calls_on) == 1 and next(iter(encoder.calls_on)).startswith("domain")
    thread.shutdown()


def test_batches_are_capped_and_the_rest_is_embedded_by_a_later_call():
    encoder = RecordingEncoder()
    thread = DomainThread(encoder, max_batch=4)
    questions = [f"q{n}" for n in range(10)]

    asyncio.run(_busy_then_many(thread, questions, []))

    assert encoder.batches == [questions[0:4], questions[4:8], questions[8:10]]
    thread.shutdown()


def test_an_idle_thread_embeds_a_lone_question_at_once():
    encoder = RecordingEncoder()
    thread = DomainThread(encoder, max_batch=32)

    async def one_by_one() -> list[str]:
        return [await thread.run_embedded(q, str.upper, q) for q in ("a", "b")]

    assert asyncio.run(one_by_one()) == ["A", "B"]
    assert encoder.batches == [["a"], ["b"]]
    assert (thread.most_in_flight, thread.in_flight) == (1, 0)
    thread.shutdown()


def test_a_cancelled_request_does_not_stop_batching():
    encoder = RecordingEncoder()
    thread = DomainThread(encoder, max_batch=32)

    async def scenario() -> None:
        release = threading.Event()
        blocker = asyncio.ensure_future(thread.run(release.wait))
        await asyncio.sleep(0.05)
        gone = asyncio.ensure_future(thread.run_embedded("gone", str.upper, "gone"))
        await asyncio.sleep(0.01)
        gone.cancel()  # e.g. the client hung up; its call never runs
        kept = [asyncio.ensure_future(thread.run_embedded(q, str.upper, q)) for q in "xyz"]
        await asyncio.sleep(0.05)
        release.set()
        await blocker
        assert await asyncio.gather(*kept) == ["X", "Y", "Z"]

    asyncio.run(scenario())

    assert encoder.batches == [["gone", "x", "y", "z"]]
    thread.shutdown()


def test_an_embedding_failure_reaches_the_caller():
    def failing(_: list[str]) -> None:
        raise RuntimeError("the store went away")

    thread = DomainThread(failing, max_batch=8)

    async def ask() -> None:
        await thread.run_embedded("q", str.upper, "q")

    with pytest.raises(RuntimeError, match="store went away"):
        asyncio.run(ask())
    assert thread.in_flight == 0
    thread.shutdown()
