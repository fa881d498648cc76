"""The CLI's commands for agents: `memory-bank mcp` and `memory-bank keys create|list|revoke`.

Registered on the main app by `memory_bank/cli/main.py`; the options and helpers they share
with its commands are in `options.py`.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from memory_bank.cli.options import (
    ConfigOption,
    JsonOption,
    StoreOption,
    _err,
    _fail,
    _out,
    _reports_errors,
    _settings,
)

keys_app = typer.Typer(
    no_args_is_help=True,
    help="API keys of a store's server: read, write or admin, optionally limited to part of "
    "the store. Kept beside the store, hashed; a token is shown once, when made.",
)


@_reports_errors
def mcp(
    store: StoreOption,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            help="stdio (default): one local agent, in this process. http: the Serve app, "
            "whose /mcp is the MCP server over streamable HTTP (keys required off loopback).",
        ),
    ] = "stdio",
    host: Annotated[str, typer.Option("--host", help="http: address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="http: port.")] = 8000,
    config: ConfigOption = None,
) -> None:
    """Serve the store to MCP clients (Claude Desktop, IDEs, agent frameworks): search, fetch,
    ls/cat/grep, ask, research, add, remove, history, sessions, conversations, and every
    README and memory as a resource."""
    settings = _settings(config)
    if transport == "http":
        from actors.serve_run import run_blocking

        run_blocking(store, host=host, port=port, config=settings)
        return
    if transport != "stdio":
        _fail(f"--transport must be stdio or http, not {transport!r}")
    from memory_bank.agents.gateway import MemoryGateway
    from memory_bank.agents.local import LocalMemory
    from memory_bank.agents.mcp_server import build_mcp
    from memory_bank.app.bank import MemoryBank

    memory = LocalMemory(MemoryBank(store, config=settings))
    try:
        build_mcp(MemoryGateway(memory, settings)).run("stdio")
    finally:
        memory.close()


@keys_app.command("create")
@_reports_errors
def create_key(
    name: Annotated[str, typer.Argument(help="Who or what the key is for.")],
    store: StoreOption,
    permission: Annotated[
        str, typer.Option("--permission", help="read, write (includes read) or admin.")
    ] = "read",
    documents: Annotated[
        list[str] | None,
        typer.Option(
            "--documents",
            help="Limit the key to these documents: source paths as added, folders holding "
            "them, or document ids; repeatable.",
        ),
    ] = None,
    directory: Annotated[
        str | None,
        typer.Option("--directory", help="Limit the key to this store directory (/a/b)."),
    ] = None,
) -> None:
    """Make a key and print its token (once: only its hash is kept)."""
    from memory_bank.agents.keys import PERMISSIONS, KeyRing, KeyScope

    if permission not in PERMISSIONS:
        _fail(f"--permission must be one of {', '.join(PERMISSIONS)}, not {permission!r}")
    scope = KeyScope(documents=tuple(documents or ()), directory=directory)
    key, token = KeyRing(store).create(name, permission, scope)  # type: ignore[arg-type]
    _err.print(
        f"key {key.id} ({key.name}, {key.permission}, {_scope_text(key.scope)}); the token "
        "follows and will not be shown again:",
        highlight=False,
    )
    print(token)


@keys_app.command("list")
@_reports_errors
def list_keys(store: StoreOption, as_json: JsonOption = False) -> None:
    """The store's keys (never their tokens)."""
    from memory_bank.agents.keys import KeyRing

    keys = KeyRing(store).keys()
    if as_json:
        print(json.dumps([key.model_dump(mode="json", exclude={"sha256"}) for key in keys]))
        return
    table = Table("id", "name", "permission", "limited to", "created", "revoked")
    for key in keys:
        table.add_row(
            key.id,
            key.name,
            key.permission,
            _scope_text(key.scope),
            key.created_at,
            key.revoked_at or "",
        )
    _out.print(table)


@keys_app.command("revoke")
@_reports_errors
def revoke_key(
    key: Annotated[str, typer.Argument(help="The key's id (or its name, if unique).")],
    store: StoreOption,
) -> None:
    """Revoke a key: a running server refuses it from its next request on."""
    from memory_bank.agents.keys import KeyRing

    revoked = KeyRing(store).revoke(key)
    _out.print(f"revoked key {revoked.id} ({revoked.name})", highlight=False)


def _scope_text(scope) -> str:
    parts = [*scope.documents, *([scope.directory] if scope.directory else [])]
    return ", ".join(parts) if parts else "the whole store"


def register(app: typer.Typer) -> None:
    app.command()(mcp)
    app.add_typer(keys_app, name="keys")
