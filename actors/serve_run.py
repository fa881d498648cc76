"""`memory-bank serve`: start (or join) Ray, deploy the app, and stop cleanly on a signal.

Why a signal handler: `ray.init()` installs Ray's own SIGTERM handler in the driver, which
aborts the process (exit -6) without running `ray.shutdown()`; the raylet then goes, but the
dashboard and runtime-env agents it started ignore SIGTERM and stay behind, orphaned. Here
SIGTERM and SIGINT (Ctrl-C) both become a KeyboardInterrupt in the main thread, so the
`finally` below removes the app and, when this process started Ray, shuts that Ray down,
which ends every process it started.
"""

from __future__ import annotations

import ipaddress
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from memory_bank.config import AppConfig, load_config
from memory_bank.errors import ConfigError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
API_KEY_ENV = "MEMORY_BANK_API_KEY"
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def require_api_key_off_loopback(host: str, api_key: str | None, has_keys: bool = False) -> None:
    """A server reachable from other machines must not answer strangers: refuse to bind a
    non-loopback address without an API key (`--api-key`, or keys made with `memory-bank
    keys create`, which every request from off loopback must then carry)."""
    if api_key or has_keys or is_loopback(host):
        return
    raise ConfigError(
        f"refusing to serve on {host}: it is not a loopback address, so anyone who can reach "
        f"it could read the store. Make a key (`memory-bank keys create`), give an API key "
        f"(--api-key, or the {API_KEY_ENV} environment variable), or bind 127.0.0.1."
    )


def _interrupt(signum: int, _: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def _signals_interrupt() -> Iterator[None]:
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    try:
        _catch_stop_signals()
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _catch_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _interrupt)


def _ignore_stop_signals() -> None:
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def run_blocking(
    store: str | Path,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    config_path: str | Path | None = None,
    config: AppConfig | None = None,
    api_key: str | None = None,
) -> None:
    """Join or start Ray, serve the store, block until SIGTERM or Ctrl-C, then clean up."""
    from memory_bank.agents.keys import KeyRing

    require_api_key_off_loopback(host, api_key, KeyRing(store).has_active_keys())
    config = config or load_config(config_path)
    import ray
    from ray import serve

    from actors.runtime import ensure_ray
    from actors.serve_app import start

    with _signals_interrupt():
        joined_before = ray.is_initialized()
        try:
            ensure_ray(config.ray, config.llm)
            _catch_stop_signals()  # again: ray.init() put its own SIGTERM handler in place
            url = start(store, config, host, port, api_key=api_key)
            print(
                f"memory-bank is serving {Path(store).absolute()} at {url} (API docs: {url}/docs;"
                f" MCP: {url}/mcp; OpenAI-compatible: {url}/v1)"
            )
            print("Press Ctrl-C to stop.", flush=True)
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            print("stopping ...", flush=True)
            try:
                if ray.is_initialized():
                    serve.shutdown()  # drains requests; a second Ctrl-C skips to the next step
            except KeyboardInterrupt:
                pass
            finally:
                _ignore_stop_signals()  # nothing may cut the shutdown of our own Ray short
                if not joined_before and ray.is_initialized():
                    ray.shutdown()  # also when a signal came in the middle of ray.init
