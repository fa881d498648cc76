"""Debian's headless Chromium driven by Playwright, for the browser tests and bench/ui.py.

Playwright only drives it (`executable_path`): no browser is ever downloaded (`make browser`
installs Debian's package where it runs as root). Every launch gets a fresh profile directory
and the flags that keep Chromium from reaching the network on its own.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}


def missing_reason() -> str | None:
    """Why no browser test can run here, or None when Chromium and Playwright are both there."""
    if not CHROMIUM.is_file() or shutil.which(str(CHROMIUM)) is None:
        return (
            f"no Chromium at {CHROMIUM}: `make browser` (part of `make test`) installs Debian's "
            "package when run as root; elsewhere run `apt-get install chromium` as root"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (`make install`)"
    return None


@contextmanager
def chromium_context(viewport: dict[str, int] = WIDE):
    """A Playwright browser context on Debian's Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=list(FLAGS),
            viewport=viewport,
        )
        try:
            yield context
        finally:
            context.close()
