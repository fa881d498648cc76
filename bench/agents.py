"""What the agents' ways in cost next to the JSON API, on one Serve app over the sample corpus
(data/sample, ingested once under bench/out/query/sample, as bench/query.py does):

1. MCP tool-call latency (the SDK's client over streamable HTTP, one session) for `search` and
   `ask`, p50/p95, next to POST /search and POST /query. Target: within 1.2x.
2. The chat endpoint in memory-as-model mode (`memory-bank`, not streamed) next to POST /query.
3. Router mode: the tokens of recalled memories injected per request at several budgets
   (`agents.router.inject_tokens`), against the loopback OpenAI-compatible server.

One client, one request at a time; every request a question not asked before (the replica caches
query vectors), each path its own questions from the same shuffled mix, the paths interleaved
so that a slow moment of the machine falls on all of them alike. Every request carries a read
key, as a client off loopback would. Timing: run under `flock /tmp/bench.lock`.

    flock /tmp/ray.lock flock /tmp/bench.lock .venv/bin/python bench/agents.py [--requests 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.serve_load import question_bodies, sample_store
from memory_bank.agents.keys import KeyRing
from memory_bank.config import AgentsConfig, AppConfig, RouterConfig
from tests.load_client import free_port
from tests.loopback_llm import serve_loopback

ROUTED_MODEL = "loopback-chat"
BUDGETS = (128, 256, 512, 1024, 2048)
PATHS = ("POST /search", "MCP search", "POST /query", "MCP ask", "chat memory-bank")


async def _latencies(base_url: str, token: str, questions, requests: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {path: [] for path in PATHS}
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(base_url=base_url, headers=headers, timeout=120) as http,
        httpx2.AsyncClient(headers=headers, timeout=120) as mcp_http,
        Client(streamable_http_client(f"{base_url}/mcp", http_client=mcp_http)) as mcp,
    ):

        async def post_search(q: str) -> None:
            (await http.post("/search", json={"query": q})).raise_for_status()

        async def mcp_search(q: str) -> None:
            assert not (await mcp.call_tool("search", {"query": q})).is_error

        async def post_query(q: str) -> None:
            (await http.post("/query", json={"question": q})).raise_for_status()

        async def mcp_ask(q: str) -> None:
            assert not (await mcp.call_tool("ask", {"question": q})).is_error

        async def chat(q: str) -> None:
            body = {"model": "memory-bank", "messages": [{"role": "user", "content": q}]}
            (await http.post("/v1/chat/completions", json=body)).raise_for_status()

        calls = dict(zip(PATHS, (post_search, mcp_search, post_query, mcp_ask, chat), strict=True))
        for warm in PATHS:  # the first of each path pays for connections and lazy starts
            await calls[warm](questions()["question"])
        for number in range(requests):
            order = PATHS[number % len(PATHS) :] + PATHS[: number % len(PATHS)]
            for path in order:
                question = questions()["question"]
                started = time.perf_counter()
                await calls[path](question)
                timings[path].append(time.perf_counter() - started)
    return timings


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=60, help="Timed requests per path.")
    parser.add_argument("--router-requests", type=int, default=20, help="Per budget.")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import ray
    from ray import serve

    from actors.serve_app import APP_NAME, build_app_for

    store = sample_store()
    questions = question_bodies(store)
    ring = KeyRing(store)
    key, token = ring.create("bench/agents.py", "read")
    port = free_port()
    loads = [os.getloadavg()[0]]
    with serve_loopback() as llm:
        llm.handle("chat", lambda _, body: "ok", plain=True)
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}},
        )
        try:
            serve.start(http_options={"host": "127.0.0.1", "port": port})
            base_url = f"http://127.0.0.1:{port}"
            serve.run(build_app_for(store, AppConfig(), num_replicas=1), name=APP_NAME)
            timings = asyncio.run(_latencies(base_url, token, questions, args.requests))
            loads.append(os.getloadavg()[0])
            injected = {}
            for budget in BUDGETS:  # the budget is the server's: one deployment per budget
                router = RouterConfig(
                    base_url=llm.base_url,
                    models=[f"{ROUTED_MODEL}-{budget}"],
                    inject_tokens=budget,
                )
                config = AppConfig(agents=AgentsConfig(router=router))
                serve.run(build_app_for(store, config, num_replicas=1), name=APP_NAME)
                injected[budget] = _injected(
                    base_url, token, questions, args.router_requests, budget
                )
            loads.append(os.getloadavg()[0])
        finally:
            serve.shutdown()
            ray.shutdown()
            ring.revoke(key.id)
    _print(timings, injected, loads, args)


def _injected(
    base_url: str, token: str, questions, requests: int, budget: int
) -> list[tuple[int, int]]:
    """(tokens injected, memories cited) per routed request."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as http:
        counts = []
        for _ in range(requests):
            body = {
                "model": f"{ROUTED_MODEL}-{budget}",
                "messages": [
                    {"role": "system", "content": "role: chat"},
                    {"role": "user", "content": questions()["question"]},
                ],
            }
            reply = http.post("/v1/chat/completions", json=body, timeout=120)
            reply.raise_for_status()
            info = reply.json()["memory_bank"]
            counts.append((info["injected_tokens"], len(info["sources"])))
    return counts


def _print(timings, injected, loads, args) -> None:
    console = Console()
    table = Table(title=f"Latency per request, 1 client, {args.requests} requests per path")
    for header in ("path", "p50 ms", "p95 ms", "mean ms", "p50 vs JSON API", "p95 vs JSON API"):
        table.add_column(header, justify="right")
    baseline = {"POST /search": "POST /search", "MCP search": "POST /search"}
    baseline |= {"POST /query": "POST /query", "MCP ask": "POST /query"}
    baseline["chat memory-bank"] = "POST /query"
    for path in PATHS:
        values = timings[path]
        base = timings[baseline[path]]
        p50, p95 = _percentile(values, 50), _percentile(values, 95)
        table.add_row(
            path,
            f"{1000 * p50:.1f}",
            f"{1000 * p95:.1f}",
            f"{1000 * statistics.fmean(values):.1f}",
            f"{p50 / _percentile(base, 50):.2f}x",
            f"{p95 / _percentile(base, 95):.2f}x",
        )
    console.print(table)
    routed = Table(
        title=f"Router mode: tokens injected per request ({args.router_requests} requests per budget)"
    )
    for header in ("budget", "mean", "p50", "max", "memories cited (mean)"):
        routed.add_column(header, justify="right")
    for budget, counts in injected.items():
        tokens = [t for t, _ in counts]
        routed.add_row(
            str(budget),
            f"{statistics.fmean(tokens):.0f}",
            f"{_percentile(tokens, 50):.0f}",
            str(max(tokens)),
            f"{statistics.fmean(n for _, n in counts):.1f}",
        )
    console.print(routed)
    console.print(
        "load average (1 min): "
        + ", ".join(f"{load:.2f}" for load in loads)
        + " (before, after the latencies, after the router)"
    )


if __name__ == "__main__":
    main()
