"""What every command of the CLI shares: the consoles, the common options, the settings read
at the edge (the config file, the LLM environment variables, `--backend`), and a domain or file
system error turned into one red line and exit status 1 (`--debug`: the traceback)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn, ParamSpec

import typer
from rich.console import Console

from memory_bank.errors import MemoryBankError
from memory_bank.store.disk import error_line

P = ParamSpec("P")
DEBUG_ENV = "MEMORY_BANK_DEBUG"
_err = Console(stderr=True)
_out = Console()

StoreOption = Annotated[Path, typer.Option("--store", help="Store directory.")]
ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="YAML config (default: built-in defaults).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object/list on stdout.")]
AddressOption = Annotated[
    str | None, typer.Option("--address", help="Join this Ray cluster (else RAY_ADDRESS).")
]
BackendOption = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="LLM backend: offline (embedded) or openai (OPENAI_BASE_URL, OPENAI_MODEL, "
        "OPENAI_API_KEY). Default: llm.backend of the config.",
    ),
]
FollowLinksOption = Annotated[
    bool,
    typer.Option(
        "--follow-links",
        help="Enter symlinked directories that stay inside the input (links that leave it are "
        "always skipped, with a reason). Default: sources.follow_links of the config.",
    ),
]
LocalOption = Annotated[bool, typer.Option("--local", help="Same as --runner local.")]
RunnerOption = Annotated[
    str,
    typer.Option(
        "--runner",
        help="auto (default): Ray when joining a cluster or for a corpus of at least "
        "ray.in_process_below_tokens, else in this process; ray; local (in-process).",
    ),
]


def _fail(message: str) -> NoReturn:
    _err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=1)


def _reports_errors(command: Callable[P, None]) -> Callable[P, None]:
    """A domain error, or a file system error (disk full, permission denied, read-only), becomes
    one red line and exit status 1, here at the edge, with what the failed work left behind
    (the exception's notes) after it; `--debug` shows the traceback instead."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            command(*args, **kwargs)
        except (MemoryBankError, OSError) as exc:
            if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
                raise
            _fail(error_line(exc))

    return run


def _settings(config: Path | None, backend: str | None = None):
    """The config file's settings, the LLM environment variables over them (read here, at the
    edge), and `--backend` over both."""
    from memory_bank.config import load_config, with_llm_environment

    settings = with_llm_environment(load_config(config), os.environ)
    if backend is not None:
        if backend not in ("offline", "openai"):
            _fail(f"--backend must be offline or openai, not {backend!r}")
        settings.llm.backend = backend
    return settings
