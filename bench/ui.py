"""The page at /ui/ on the 10k-chunk store, through Debian's Chromium: time to first render of
the tree and of a memory view, and the bytes each view transfers; screenshots of every view at
1280 and 390 px.

    flock /tmp/bench.lock flock /tmp/ray.lock python bench/ui.py [--size 10000] [--loads 20]

The store is the synthetic one of bench/query.py (cached under bench/out/query/). The Serve app
runs on 127.0.0.1 with one query replica. Each view is loaded `--loads` times in a new browser
context ("cold": empty cache, every file fetched) and `--loads` times more as reloads of one
context ("warm": the files from the cache, the page revalidated, the JSON fetched again). Time
to first render is the page's own user-timing mark "view-rendered" (actors/ui/static/app.js),
set once the view's content is in the DOM, measured from the start of navigation. Bytes are
what crossed the wire (headers and bodies, as encoded), from the DevTools protocol.
It prints a table; it is not a test. Screenshots go to bench/out/ui/.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from bench.query import OUT as QUERY_OUT  # noqa: E402
from bench.query import load_pool, synthesize_store  # noqa: E402
from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from tests.chromium import CHROMIUM, FLAGS, NARROW, WIDE, missing_reason  # noqa: E402
from tests.load_client import free_port  # noqa: E402

OUT = REPO / "bench" / "out" / "ui"
RENDER_MARK = "view-rendered"


@dataclass
class Loads:
    view: str
    cache: str
    render_ms: list[float] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)
    requests: list[int] = field(default_factory=list)

    def cells(self) -> list[str]:
        p50, p95 = np.percentile(self.render_ms, [50, 95])
        return [
            self.view,
            self.cache,
            str(len(self.render_ms)),
            f"{p50:.0f}",
            f"{p95:.0f}",
            f"{np.median(self.bytes) / 1024:.1f}",
            f"{np.median(self.requests):.0f}",
        ]


def wait_rendered(page, timeout_s: float = 120.0) -> float:
    """The view's render mark, in ms since navigation began (polled from here: the page's
    Content-Security-Policy forbids the string evaluation `wait_for_function` relies on)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = page.evaluate(
            f"performance.getEntriesByName({RENDER_MARK!r}).map(mark => mark.startTime)"
        )
        if found:
            return float(found[0])
        time.sleep(0.02)
    raise TimeoutError(f"{page.url} did not render within {timeout_s:.0f} s")


def load_once(page, url: str) -> tuple[float, int, int]:
    """Navigate to `url` and wait for the view; (ms to first render, bytes, requests)."""
    client = page.context.new_cdp_session(page)
    received: list[int] = []
    client.on("Network.loadingFinished", lambda event: received.append(event["encodedDataLength"]))
    client.send("Network.enable")
    page.goto("about:blank")
    page.goto(url)
    render = wait_rendered(page)
    page.wait_for_load_state("networkidle")
    client.detach()
    over_the_wire = [size for size in received if size > 0]  # 0: served from the cache
    return render, int(sum(over_the_wire)), len(over_the_wire)


def measure(browser, url: str, view: str, loads: int) -> list[Loads]:
    cold, warm = Loads(view, "cold"), Loads(view, "warm")
    for _ in range(loads):
        context = browser.new_context(viewport=WIDE)
        ms, size, count = load_once(context.new_page(), url)
        context.close()
        cold.render_ms.append(ms)
        cold.bytes.append(size)
        cold.requests.append(count)
    context = browser.new_context(viewport=WIDE)
    page = context.new_page()
    load_once(page, url)  # fills the cache
    for _ in range(loads):
        ms, size, count = load_once(page, url)
        warm.render_ms.append(ms)
        warm.bytes.append(size)
        warm.requests.append(count)
    context.close()
    return [cold, warm]


def screenshots(browser, base: str, views: dict[str, str]) -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    saved = []
    for viewport in (WIDE, NARROW):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        for name, fragment in views.items():
            page.goto("about:blank")
            page.goto(f"{base}/ui/{fragment}")
            wait_rendered(page)
            page.wait_for_load_state("networkidle")
            path = OUT / f"{name}-{viewport['width']}.png"
            page.screenshot(path=path, full_page=True)
            saved.append(path)
        context.close()
    return saved


def deepest_directory(base: str) -> tuple[str, str]:
    """The first path down the tree to a leaf, and that leaf's first memory."""
    path = "/"
    with httpx.Client(base_url=base, timeout=120) as http:
        while True:
            page = http.get("/browse/directory", params={"path": path, "limit": 1}).json()
            if not page["directories"]:
                return path, page["files"][0]["chunk_id"]
            path = page["directories"][0]["path"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", type=int, default=10_000, help="memories in the store")
    parser.add_argument("--loads", type=int, default=20, help="loads per view and cache state")
    args = parser.parse_args()
    reason = missing_reason()
    if reason is not None:
        raise SystemExit(reason)

    import ray
    from playwright.sync_api import sync_playwright
    from ray import serve

    from actors.serve_app import start

    config = AppConfig()
    store = QUERY_OUT / f"store_{args.size}"
    embedder = Embedder(config.embedding)
    tree_kind = synthesize_store(store, args.size, load_pool(embedder), config, embedder)
    del embedder
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        base = start(store, config, "127.0.0.1", free_port())
        leaf, memory = deepest_directory(base)
        views = {
            "tree": "#/tree/",
            "tree (deep link)": f"#/tree{leaf}",
            "memory": f"#/memory/{memory}",
        }
        with sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=list(FLAGS)
            )
            rows = [row for view, fragment in views.items() for row in measure(
                browser, f"{base}/ui/{fragment}", view, args.loads
            )]  # fmt: skip
            shots = screenshots(
                browser,
                base,
                {
                    "tree": "#/tree/",
                    "tree-deep": f"#/tree{leaf}",
                    "memory": f"#/memory/{memory}",
                    "search": "#/search?q=album+released&mode=hybrid",
                    "ask": "#/ask?q=Which+band+released+the+album%3F&mode=navigate",
                    "status": "#/status",
                    "conversations": "#/conversations",
                },
            )
            browser.close()
    finally:
        serve.shutdown()
        ray.shutdown()

    print()
    print(
        f"Store: bench/query.py's synthetic {args.size:,}-chunk store ({tree_kind}); Serve on "
        "127.0.0.1, 1 query replica; Debian Chromium "
        f"{os.popen(f'{CHROMIUM} --version').read().split()[1]} headless, 1280x900."
    )
    print(
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (at {time.strftime('%H:%M:%S')})"
    )
    print()
    header = ["view", "cache", "loads", "render p50 ms", "p95 ms", "KiB (wire)", "requests"]
    table = [header] + [row.cells() for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for number, line in enumerate(table):
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * width for width in widths))
    print()
    print(f"screenshots: {len(shots)} under {OUT.relative_to(REPO)}/")


if __name__ == "__main__":
    main()
