"""One store, one Serve app (with a read key) and one Chromium for every browser test of this
package; each test gets a fresh tab, and leaves a screenshot under tests/artifacts/browser/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_bank.config import AppConfig
from tests.chromium import WIDE, chromium_context, missing_reason
from tests.load_client import free_port

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "browser"
API_KEY = "a-read-key-for-the-browser-tests"
KEY_ITEM = "memory-bank-key"  # where the page keeps the key (actors/ui/static/api.js)


@pytest.fixture(scope="package")
def chromium():
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    with chromium_context(WIDE) as context:
        yield context


@pytest.fixture(scope="package")
def server(chromium, ray_cluster, browse_bank) -> str:
    """The base URL of the Serve app over the browse store; it wants API_KEY."""
    from ray import serve

    from actors.serve_app import start

    url = start(browse_bank.store, AppConfig(), "127.0.0.1", free_port(), api_key=API_KEY)
    try:
        yield url
    finally:
        serve.shutdown()


def _open_tab(chromium, request, with_key: bool):
    tab = chromium.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    if with_key:
        tab.add_init_script(f"sessionStorage.setItem({KEY_ITEM!r}, {json.dumps(API_KEY)})")
    yield tab
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=ARTIFACTS / f"{request.node.name}.png", full_page=True)
    tab.close()
    assert errors == [], f"the page raised: {errors}"


@pytest.fixture
def page(chromium, server, request):
    """A tab that already holds the key (as after the key form)."""
    yield from _open_tab(chromium, request, with_key=True)


@pytest.fixture
def keyless_page(chromium, server, request):
    """A tab that holds no key yet."""
    yield from _open_tab(chromium, request, with_key=False)
