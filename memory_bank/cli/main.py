"""The `memory-bank` command line: ingest, ask, search, tree, serve.

Errors from the domain (MemoryBankError) and from the file system (disk full, permission
denied, read-only) become one red line plus a non-zero exit code here, at the edge;
`memory-bank --debug COMMAND ...` shows the traceback instead.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.tree import Tree

from memory_bank.cli.agents import register as register_agent_commands
from memory_bank.cli.options import (
    DEBUG_ENV,
    AddressOption,
    BackendOption,
    ConfigOption,
    FollowLinksOption,
    JsonOption,
    LocalOption,
    RunnerOption,
    StoreOption,
    _err,
    _fail,
    _out,
    _reports_errors,
    _settings,
)
from memory_bank.ingest.runner_choice import choose_runner, estimated_tokens
from memory_bank.schemas import IngestSummary

if TYPE_CHECKING:
    from memory_bank.app.bank import MemoryBank
    from memory_bank.ingest.progress import ProgressSink

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # Markdown reflows the docstrings' wrapped lines into paragraphs.
    rich_markup_mode="markdown",
    help="A hierarchical memory for documents and conversations: ingest sources, ask and "
    "search them, browse the tree, serve it over HTTP, MCP and a chat endpoint.",
)


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            envvar=DEBUG_ENV,
            help="Show the full traceback of an error instead of one line.",
        ),
    ] = False,
) -> None:
    if debug:  # the commands read it where they report errors (and Ray workers inherit it)
        os.environ[DEBUG_ENV] = "1"


def _bank(store: Path, config: Path | None, backend: str | None = None):
    """The store's facade for queries and in-process changes."""
    from memory_bank.app.bank import MemoryBank

    return MemoryBank(store, config=_settings(config, backend))


@app.command()
@_reports_errors
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and directories to ingest.")],
    store: StoreOption,
    config: ConfigOption = None,
    address: AddressOption = None,
    local: LocalOption = False,
    runner: RunnerOption = "auto",
    backend: BackendOption = None,
    follow_links: FollowLinksOption = False,
    as_json: JsonOption = False,
) -> None:
    """Ingest sources into the store: chunk, memorize, embed, organize, write."""
    files = [str(path) for path in paths]
    _build(
        store,
        (config, backend),
        (address, "local" if local else runner, paths),
        as_json,
        "ingested into",
        lambda bank, progress: bank.add(files=files, progress=progress),
        follow_links=follow_links,
    )


@app.command()
@_reports_errors
def add(
    paths: Annotated[list[Path], typer.Argument(help="Files and directories to add.")],
    store: StoreOption,
    config: ConfigOption = None,
    address: AddressOption = None,
    local: LocalOption = False,
    runner: RunnerOption = "auto",
    backend: BackendOption = None,
    follow_links: FollowLinksOption = False,
    as_json: JsonOption = False,
) -> None:
    """Add sources to an existing store: new memories are placed into its tree (a new
    directory where they fit none), other paths stay; concurrent adds are serialized."""
    from memory_bank.store.layout import is_store

    if not is_store(store):
        _fail(f"no memory store at {store} (create it with `memory-bank ingest`)")
    files = [str(path) for path in paths]
    _build(
        store,
        (config, backend),
        (address, "local" if local else runner, paths),
        as_json,
        "added to",
        lambda bank, progress: bank.add(files=files, progress=progress),
        follow_links=follow_links,
    )


@app.command()
@_reports_errors
def remove(
    sources: Annotated[
        list[str],
        typer.Argument(help="Sources to remove: paths as ingested (files or directories) or ids."),
    ],
    store: StoreOption,
    config: ConfigOption = None,
    backend: BackendOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove documents from the store: their memories, files, vectors and index entries."""
    result = _bank(store, config, backend=backend).remove(sources)
    if as_json:
        print(result.model_dump_json())
        return
    table = Table(title=f"removed from {store}", show_header=False)
    table.add_row("documents", str(result.removed_documents))
    table.add_row("chunks", str(result.removed_chunks))
    table.add_row("directories", str(result.directories))
    table.add_row("READMEs regenerated", ", ".join(result.readmes_regenerated) or "none")
    _out.print(table)


@app.command()
@_reports_errors
def rebuild(
    store: StoreOption,
    config: ConfigOption = None,
    address: AddressOption = None,
    local: LocalOption = False,
    runner: RunnerOption = "auto",
    backend: BackendOption = None,
    as_json: JsonOption = False,
    reembed: Annotated[
        bool,
        typer.Option(
            "--reembed",
            help="Move a store made by another embedder to the configured one (every document "
            "is embedded again).",
        ),
    ] = False,
) -> None:
    """Plan the whole tree anew from the stored memories (e.g. on a schedule, after many adds)."""
    _build(
        store,
        (config, backend),
        (address, "local" if local else runner, None),
        as_json,
        "rebuilt",
        lambda bank, progress: bank.rebuild(progress=progress, reembed=reembed),
    )


def _build(
    store: Path,
    config: tuple[Path | None, str | None],
    where: tuple[str | None, str, list[Path] | None],
    as_json: bool,
    verb: str,
    work: Callable[[MemoryBank, ProgressSink], IngestSummary],
    follow_links: bool = False,
) -> None:
    """Run an ingest-like `work` with the per-stage display, then print its summary. `where`:
    the Ray address, the requested runner and the inputs (None: the stored documents)."""
    from memory_bank.app.bank import MemoryBank
    from memory_bank.cli.progress_display import IngestProgress

    config_file, backend = config
    address, requested, inputs = where
    if requested not in ("auto", "ray", "local"):
        _fail(f"--runner must be auto, ray or local, not {requested!r}")
    settings = _settings(config_file, backend)
    if address:
        settings.ray.address = address
    if follow_links:
        settings.sources.follow_links = True
    choice = choose_runner(
        requested,
        _work_tokens(store, inputs, settings.sources.follow_links),
        joins_cluster=bool(settings.ray.address or os.environ.get("RAY_ADDRESS")),
        in_process_below_tokens=settings.ray.in_process_below_tokens,
    )
    executor = None
    if choice.runner == "ray":
        from pipeline.executor import RayExecutor

        executor = RayExecutor
    bank = MemoryBank(store, config=settings, executor=executor)
    if not as_json:
        _err.print(
            f"[dim]runner: {choice.runner} ({choice.reason})[/]", highlight=False, soft_wrap=True
        )
    with IngestProgress(_err, enabled=not as_json) as progress:
        summary = work(bank, progress)
    summary = summary.model_copy(update={"runner": choice.runner, "runner_reason": choice.reason})
    _print_summary(summary, as_json, f"{verb} {summary.store}")


def _work_tokens(store: Path, inputs: list[Path] | None, follow_links: bool) -> int:
    """About how many tokens an ingest of `inputs` (None: a rebuild of `store`) handles."""
    from memory_bank.store.layout import is_store
    from memory_bank.text.inputs import discover

    if inputs is not None:
        return estimated_tokens(
            entry
            for entry in discover(inputs, follow_links=follow_links)
            if isinstance(entry, Path)
        )
    if not is_store(store):
        return 0
    from memory_bank.store.reader import StoreReader

    return sum(StoreReader(store).documents().column("token_count").to_pylist())


def _print_summary(summary: IngestSummary, as_json: bool, title: str) -> None:
    for line in summary.skipped:
        _err.print(f"[yellow]skipped[/] {line}", highlight=False, soft_wrap=True)
    if as_json:
        print(summary.model_dump_json())
        return
    table = Table(title=title, show_header=False)
    table.add_row("documents", str(summary.documents))
    if summary.unchanged_documents:
        table.add_row("unchanged documents", str(summary.unchanged_documents))
    if summary.rebuilt_documents:
        table.add_row("rebuilt documents", str(summary.rebuilt_documents))
    table.add_row("chunks", str(summary.chunks))
    table.add_row("directories", str(summary.directories))
    if summary.decoded:
        table.add_row("decoded from", ", ".join(summary.decoded))
    if summary.resumed_documents:
        table.add_row(
            "resumed",
            f"{summary.resumed_documents} documents, {summary.resumed_chunks} chunks "
            "(from the journal)",
        )
    if summary.placed:
        table.add_row("tree", "new memories placed; other paths kept")
    commit = summary.commit
    if commit is not None:
        if commit.duplicate_documents:
            table.add_row("added meanwhile by another writer", str(commit.duplicate_documents))
        if commit.new_directories:
            table.add_row("new directories", ", ".join(commit.new_directories))
        if commit.moved_memories and commit.reorganization is None:
            table.add_row("stored memories moved", f"{commit.moved_memories} (a directory split)")
        if commit.reorganization is not None:
            operation = commit.reorganization
            table.add_row(
                "re-planned",
                f"{operation.reason}: {len(operation.moved)} moved, "
                f"{len(operation.new_directories)} new and "
                f"{len(operation.deleted_directories)} deleted directories",
            )
        regenerated = commit.readmes_regenerated
        table.add_row(
            "READMEs regenerated",
            f"{len(regenerated)}: {', '.join(regenerated[:8])}{' ...' if len(regenerated) > 8 else ''}"
            if regenerated
            else ("none" if commit.written else "none (store unchanged)"),
        )
    for stage, seconds in summary.stage_seconds.items():
        table.add_row(f"{stage} (s)", f"{seconds:.2f}")
    table.add_row("total (s)", f"{summary.total_seconds:.2f}")
    _out.print(table)


@app.command()
@_reports_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOption,
    max_iterations: Annotated[
        int | None,
        typer.Option("--max-iterations", min=1, help="Default: retrieval.max_iterations."),
    ] = None,
    system_prompt: Annotated[
        str | None,
        typer.Option("--system-prompt", help="Extra instructions for an LLM navigation agent."),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            "--mode",
            help="navigate (the agent explores the tree) or research (plan -> search -> "
            "integrate -> reflect rounds, for multi-hop questions; --max-iterations counts "
            "rounds, default research.max_iterations).",
        ),
    ] = "navigate",
    show_trajectory: Annotated[
        bool, typer.Option("--trajectory", help="Also print each step taken.")
    ] = False,
    config: ConfigOption = None,
    backend: BackendOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer a question from the store, citing the memory files used."""
    if mode not in ("navigate", "research"):
        _fail(f"unknown mode {mode!r}; choose navigate or research")
    bank = _bank(store, config, backend=backend)
    if mode == "research":
        result = bank.research(question, max_iterations=max_iterations)
    else:
        result = bank.request(question, max_iterations=max_iterations, system_prompt=system_prompt)
    if as_json:
        print(result.model_dump_json())
        return
    _out.print(f"[bold]Q:[/] {result.question}", highlight=False)
    _out.print(f"[bold]A:[/] {result.answer}", highlight=False)
    _out.print(f"[dim]confidence {result.confidence:.2f}[/]")
    for source in result.sources:
        _out.print(f"  [cyan]- {source}[/]", highlight=False)
    for note in result.history:
        _out.print(
            f"  [dim]history: {note.subject} {note.attribute}: {note.superseded_value!r} "
            f"(recorded {note.recorded_at}, {note.superseded_source}) was superseded by "
            f"{note.current_value!r} on {note.superseded_at} ({note.current_source})[/]",
            highlight=False,
        )
    for warning in result.warnings:
        _err.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    if show_trajectory:
        _out.print(f"[dim]{result.trajectory}[/]", highlight=False)


@app.command()
@_reports_errors
def chat(
    store: StoreOption,
    conversation: Annotated[
        str, typer.Option("--conversation", help="Conversation id (kept beside the store).")
    ] = "chat",
    speaker: Annotated[str, typer.Option("--speaker", help="Your name in the turns.")] = "user",
    consolidate: Annotated[
        bool,
        typer.Option(
            "--consolidate/--no-consolidate",
            help="On leaving, add the evicted turns to the store (the semantic tier).",
        ),
    ] = True,
    config: ConfigOption = None,
) -> None:
    """An interactive conversation with live memory: working memory, evicted turns kept in
    full with a running summary, recall by meaning and time (type /help)."""
    from memory_bank.cli.chat import run_chat

    run_chat(_bank(store, config), conversation, speaker, consolidate, _out)


@app.command()
@_reports_errors
def search(
    query: Annotated[str, typer.Argument(help="Search text.")],
    store: StoreOption,
    top_k: Annotated[
        int | None, typer.Option("--top-k", min=1, help="Default: retrieval.top_k.")
    ] = None,
    mode: Annotated[str, typer.Option("--mode", help="hybrid | bm25 | vector | tree")] = "hybrid",
    within: Annotated[
        list[str] | None,
        typer.Option(
            "--within",
            help="Only these documents (source path, a folder holding them, or document id); "
            "repeatable.",
        ),
    ] = None,
    under: Annotated[
        str | None, typer.Option("--under", help="Only this store directory's subtree (/a/b).")
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rank memories for a query (no answer synthesis)."""
    if mode not in {"hybrid", "bm25", "vector", "tree"}:
        _fail(f"unknown mode {mode!r}; choose hybrid, bm25, vector or tree")
    hits = _bank(store, config).search(
        query, top_k=top_k, mode=mode, within=within or (), under=under
    )
    if as_json:
        print(json.dumps([hit.model_dump() for hit in hits]))
        return
    table = Table("score", "chunk", "source")
    for hit in hits:
        table.add_row(f"{hit.score:.3f}", hit.chunk_path, hit.source)
    _out.print(table)


@app.command()
@_reports_errors
def tree(store: StoreOption, as_json: JsonOption = False) -> None:
    """Show the store's directory tree."""
    root = _bank(store, None).tree()
    if as_json:
        print(root.model_dump_json())
        return
    view = Tree(f"[bold]{store}[/]")

    def add(node, branch) -> None:
        for child in node.children:
            sub = branch.add(f"[bold]{child.name}/[/] [dim]({len(child.chunk_indices) or ''})[/]")
            add(child, sub)

    add(root, view)
    _out.print(view)


@app.command()
@_reports_errors
def graph(
    store: StoreOption,
    node: Annotated[
        str | None, typer.Option("--node", help="One memory: neighbours, conflicts, history.")
    ] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the store's Query Graph: memories, edges, conflicts (current and superseded
    claims with their times), merges and sessions; or one memory with --node ID."""
    result = _bank(store, config).graph(node)
    if as_json:
        print(result.model_dump_json())
        return
    if node is not None:
        _print_node(result)
        return
    table = Table(title=f"Query Graph of {store}", show_header=False)
    table.add_row("memories (current)", str(result.nodes))
    table.add_row("stored memories", str(result.memory_nodes))
    table.add_row("session memories", str(result.session_nodes))
    table.add_row("merged or superseded", str(result.retired_nodes))
    table.add_row("edges", ", ".join(f"{k} {v}" for k, v in sorted(result.edges.items())) or "0")
    table.add_row("merge events", str(result.merge_events))
    table.add_row("sessions (open)", f"{result.sessions} ({result.open_sessions})")
    table.add_row("checkpoint", str(result.checkpoint))
    _out.print(table)
    if result.conflicts:
        conflicts = Table("status", "subject / attribute", "superseded", "current", "resolved")
        for c in result.conflicts:
            old, new = (c.old_value, c.new_value)
            superseded, current = (old, new) if c.current != c.older else (new, old)
            conflicts.add_row(
                c.status,
                f"{c.subject} / {c.attribute}",
                f"{superseded} ({c.superseded or c.older})",
                f"{current} ({c.current or '-'})",
                _when(c.resolved_at),
            )
        _out.print(conflicts)


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    from datetime import UTC, datetime

    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _print_node(detail) -> None:
    _out.print(f"[bold]{detail.id}[/] ({detail.kind}, {detail.status})", highlight=False)
    if detail.superseded_by:
        _out.print(f"  superseded by {detail.superseded_by}", highlight=False)
    _out.print(f"  context: {detail.context}", highlight=False)
    _out.print(f"  keywords: {', '.join(detail.keywords)}", highlight=False)
    _out.print(f"  summary: {detail.summary}", highlight=False)
    _out.print(f"  recorded: {_when(detail.timestamp)}  source: {detail.source}", highlight=False)
    for neighbour in detail.neighbours:
        relation = detail.relations.get(neighbour.id or "", "related")
        _out.print(f"  [cyan]{relation}[/] {neighbour.id}: {neighbour.context}", highlight=False)
    for c in detail.conflicts:
        _out.print(
            f"  [yellow]conflict[/] {c.status}: {c.description} (current: {c.current or '-'})",
            highlight=False,
        )
    for entry in detail.history:
        _out.print(f"  [dim]history {_when(entry.at)} {entry.event}: {entry.summary[:120]}[/]")
    for entry in detail.entries:
        _out.print(f"  [dim]entry {entry.entry_id}: {entry.text[:160]}[/]", highlight=False)


@app.command()
@_reports_errors
def verify(store: StoreOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Check every invariant of the store (tables, tree, files, indexes, meta); exit status 1
    and one line per violation when any is broken. Pass the --config the store was built with:
    its taxonomy bounds are part of the check."""
    report = _bank(store, config).verify()
    if as_json:
        print(report.model_dump_json())
    else:
        table = Table(title=f"verify {store}", show_header=False)
        table.add_row("checked", report.store)  # the version directory the store path named
        table.add_row("store_version", report.store_version or "-")
        for name, count in report.counts.items():
            table.add_row(name, str(count))
        _out.print(table)
        for note in report.notes:
            _out.print(f"[dim]note:[/] {note}", highlight=False)
        for problem in report.problems:
            _out.print(f"[bold red]problem:[/] {problem}", highlight=False)
        if report.ok:
            _out.print("[bold green]ok[/]: every check passed")
        else:
            _out.print(f"[bold red]{len(report.problems)} problem(s)[/]")
    if not report.ok:
        raise typer.Exit(code=1)


@app.command()
@_reports_errors
def serve(
    store: StoreOption,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind; off loopback an API key is required.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8000,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="MEMORY_BANK_API_KEY",
            show_envvar=True,
            help="One admin key, required on every path but /healthz (also on loopback); "
            "`memory-bank keys` makes keys with permissions and scopes instead. Prefer the "
            "environment variable: an option is visible to other users in the process list.",
        ),
    ] = None,
    config: ConfigOption = None,
    backend: BackendOption = None,
) -> None:
    """Serve the store over HTTP with Ray Serve: the JSON API (/query, /search, /tree, writes
    as jobs, ...), the MCP server at /mcp and the OpenAI-compatible /v1/chat/completions.

    SIGTERM or Ctrl-C stops it cleanly, with every Ray process it started."""
    from actors.serve_run import run_blocking

    run_blocking(store, host=host, port=port, config=_settings(config, backend), api_key=api_key)


@app.command("prepare-model")
@_reports_errors
def prepare_model(config: ConfigOption = None) -> None:
    """Export the packaged embedding model to ONNX (float32, and int8 when configured for
    passages or queries) into the cache now, instead of on first use (`make install` runs
    this)."""
    from memory_bank.index.embedding import onnx_precision
    from memory_bank.index.minilm_onnx import exported_model, onnx_cache_dir

    settings = _settings(config).embedding
    cache = onnx_cache_dir(settings.onnx_cache_dir)
    int8 = "int8" in (onnx_precision(settings), onnx_precision(settings, for_queries=True))
    for precision in ("float32", "int8") if int8 else ("float32",):
        _out.print(f"{precision}: {exported_model(precision, cache)}", highlight=False)


register_agent_commands(app)  # `mcp` and `keys`, after this module's own commands


def _quiet_libraries() -> None:
    """Third-party loggers and progress bars that would drown the CLI's own output."""
    import bm25s  # noqa: F401 - it sets its own logger to DEBUG on import; undo that once here

    for name in ("bm25s", "sentence_transformers", "transformers", "httpx", "filelock"):
        logging.getLogger(name).setLevel(logging.WARNING)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _quiet_libraries()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
