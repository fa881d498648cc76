"""A store's life after its first build: small adds, concurrent adders, a killed ingest resumed.

    python bench/lifecycle.py [--tokens 1000000] [--parts abc] [--out bench/out/lifecycle]
                              [--runner local|ray] [--set store.journal_tokens=5000 ...]

Uses bench/ingest.py's corpus (at least `--tokens` cl100k tokens of real text, cached under
bench/out/corpus_<tokens>/). With a fixed seed it holds out 1% of the documents for (a) and
4 groups of `--group-share` of the documents each for (b); the base store is built from the rest.

(a) Adds the 1% to the base store, warm (the `IngestRunner` that built it, model loaded) and
    cold (`memory-bank add FILES --store DIR --local --json`, on a copy), and compares each to
    the build time (target <= 0.05); then `memory-bank verify --store DIR --json` if it exists.
(b) Four `memory-bank add --local` processes at once on one copy of the base store, and the same
    four one after another on another copy: wall times, their ratio (target <= 1.1), and the
    documents missing from the final stores (target 0).
(c) Ingests the whole corpus in a `python -c` subprocess, SIGKILLs it once about half of the
    corpus' chunks are in the ingest journal, runs the same ingest again in-process and compares
    it with a clean build: documents resumed, work redone (target <= 10%), time, chunk ids.
    Work redone = chunks the killed run had journaled that the resumed run did not take back.
On a small corpus lower `store.journal_tokens` (`--set`), so that the journal can stop near half.
Everything under `--out` is deleted first (only if this script made it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402

from bench.corpus import OUT, SEED, Corpus, build_corpus  # noqa: E402
from bench.ingest import BUSY_LOAD, with_overrides  # noqa: E402
from memory_bank.config import AppConfig, load_config  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.ingest.journal import IngestJournal  # noqa: E402
from memory_bank.ingest.runner import IngestRunner, local_runner  # noqa: E402
from memory_bank.ingest.work import memory_recipe  # noqa: E402
from memory_bank.schemas import IngestSummary  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402
from memory_bank.text.inputs import discover_files  # noqa: E402
from memory_bank.text.sources import load_file  # noqa: E402
from memory_bank.text.tokens import count_tokens  # noqa: E402

CLI = Path(sys.executable).parent / "memory-bank"
MARKER = ".lifecycle-bench"  # marks an --out directory this script may delete
ADD_SHARE, ADDERS = 0.01, 4
KILL_AT = 0.5  # share of the corpus' chunks journaled before the SIGKILL
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_KILLABLE_INGEST = """
import sys
from pathlib import Path
from memory_bank.config import AppConfig
from memory_bank.ingest.runner import local_runner
config = AppConfig.model_validate_json(Path(sys.argv[1]).read_text())
local_runner(config).run(Path(sys.argv[2]), sys.argv[3:])
"""

Row = tuple[str, str, str, str, str]  # part, measurement, value, target, note
rows: list[Row] = []
problems: list[str] = []


def row(part: str, measurement: str, value: str, target: str = "", note: str = "") -> None:
    rows.append((part, measurement, value, target, note))


@dataclass
class Took:
    """Wall seconds; CPU seconds of this process and its finished children (steadier than wall
    time when other work competes for the cores)."""

    wall: float
    cpu: float

    def __str__(self) -> str:
        return f"{self.wall:.1f} s"


ZERO = Took(0.0, 0.0)


def clocks(since: Took = ZERO) -> Took:
    """The clocks now, or the time taken since `since` (an earlier `clocks()`)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() + children.ru_utime + children.ru_stime
    return Took(time.perf_counter() - since.wall, cpu - since.cpu)


def ratio_row(part: str, measurement: str, took: Took, base: Took, limit: float = 0) -> None:
    ratio = took.wall / base.wall
    note = f"CPU {took.cpu:.1f} / {base.cpu:.1f} s = {took.cpu / base.cpu:.3f}"
    if limit:
        note = f"{'meets' if ratio <= limit else 'MISSES'}; {note}"
    row(part, measurement, f"{ratio:.3f}", f"<= {limit:g}" if limit else "", note)


def load_average() -> str:
    return "/".join(f"{load:.2f}" for load in os.getloadavg())


# --- workspace and helpers ----------------------------------------------------------------------


def fresh_out(out: Path) -> None:
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).is_file():
            raise SystemExit(f"{out} exists and was not made by this script; choose another --out")
        shutil.rmtree(out)
    (out / "logs").mkdir(parents=True)
    (out / MARKER).touch()


def split_corpus(
    files: list[Path], group_share: float
) -> tuple[list[Path], list[list[Path]], list[Path]]:
    """The documents held out for (a) and for (b)'s adders (seeded), and the base store's rest."""
    order = [files[i] for i in np.random.default_rng(SEED).permutation(len(files))]
    n_add, n_group = (max(1, round(share * len(files))) for share in (ADD_SHARE, group_share))
    add_files = order[:n_add]
    groups = [order[n_add + g * n_group : n_add + (g + 1) * n_group] for g in range(ADDERS)]
    held = {*add_files, *(path for group in groups for path in group)}
    return add_files, groups, [path for path in files if path not in held]


def tokens_of(files: list[Path]) -> int:
    return sum(count_tokens(load_file(path).text) for path in files)


def copy_store(store: Path, dest: Path) -> Path:
    """A copy of the store's live version, laid out as a store is (its path a link into
    .NAME.versions/), so that the next commit links its files as it would in the original."""
    live = store.resolve()
    versions = dest.parent / f".{dest.name}.versions"
    versions.mkdir(parents=True, exist_ok=True)
    shutil.copytree(live, versions / live.name)
    os.symlink(os.path.relpath(versions / live.name, dest.parent), dest)
    return dest


def timed_run(runner: IngestRunner, store: Path, files: list) -> tuple[Took, IngestSummary]:
    started = clocks()
    summary = runner.run(store, files=files)
    return clocks(started), summary


def finish_cli(process: subprocess.Popen, log: Path, what: str) -> dict | None:
    """Wait for a CLI subprocess; its JSON summary, or None (recorded as a problem)."""
    process.wait()
    err = log.with_suffix(".err").read_text(errors="replace").strip()
    if err:
        problems.append(f"{what}: exit {process.returncode}, stderr: {err[-600:]}")
    if process.returncode != 0:
        return None
    out = log.with_suffix(".out").read_text().splitlines()
    return next((json.loads(line) for line in reversed(out) if line.startswith("{")), None)


def add(files: list[Path], store: Path, args, log: str) -> subprocess.Popen:
    """Start `memory-bank add FILES --store STORE --local --json` with the bench's settings."""
    command = [str(CLI), "add", *map(str, files), "--store", str(store), "--local", "--json"]
    command += ["--config", str(args.config_file)]
    path = args.out / "logs" / log
    with path.with_suffix(".out").open("w") as out, path.with_suffix(".err").open("w") as err:
        return subprocess.Popen(command, stdout=out, stderr=err, env=ENV)


def memory_paths(store: Path) -> dict[str, str]:
    table = StoreReader(store).memories().select(["chunk_id", "path"]).to_pydict()
    return dict(zip(table["chunk_id"], table["path"], strict=True))


def moved(before: dict[str, str], store: Path) -> int:
    """How many of the memories in `before` have another file path in `store` now."""
    after = memory_paths(store)
    return sum(after.get(chunk_id) != path for chunk_id, path in before.items())


def add_note(summary: dict, moved_memories: int) -> str:
    commit = summary.get("commit") or {}
    note = (
        f"READMEs regenerated {len(commit.get('readmes_regenerated', []))} of "
        f"{summary['directories'] + 1}, placed={summary['placed']}, "
        f"{summary['documents']} docs, {summary['chunks']} chunks, "
        f"{moved_memories} stored memories moved"
    )
    if commit.get("reorganization"):
        note += f", re-planned: {commit['reorganization']['reason']}"
    return note


def verify(store: Path, label: str, out: Path) -> None:
    if subprocess.run([str(CLI), "verify", "--help"], capture_output=True, env=ENV).returncode:
        row("a", f"verify {label}", "skipped", "ok", "`memory-bank verify` is not available")
        return
    command = [str(CLI), "verify", "--store", str(store), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=ENV)
    (out / "logs" / f"verify_{label}.json").write_text(done.stdout + done.stderr)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {}
    ok = done.returncode == 0 and report.get("ok") is True
    counts = ", ".join(f"{value} {key}" for key, value in report.get("counts", {}).items())
    note = counts if ok else f"exit {done.returncode}: {report.get('problems')}"
    row("a", f"verify {label}", "ok" if ok else "FAILED", "ok", note[:120])
    if not ok:
        problems.append(f"verify {label}: exit {done.returncode}: {done.stdout + done.stderr}")


# --- the three measurements ---------------------------------------------------------------------


def part_a(base: Path, add_files: list[Path], runner: IngestRunner, build: Took, args) -> None:
    cold_store = copy_store(base, args.out / "stores" / "a_cold")
    before = memory_paths(base)
    warm_took, warm = timed_run(runner, base, [str(p) for p in add_files])
    note = add_note(warm.model_dump(), moved(before, base))
    row("a", "add 1%, warm, in-process", str(warm_took), "", note)
    ratio_row("a", "  / full build", warm_took, build, 0.05)
    written_row(base)
    stages = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in warm.stage_seconds.items())
    row("a", "  of which the ingest itself", f"{warm.total_seconds:.1f} s", "", stages)
    started = clocks()
    process = add(add_files, cold_store, args, "a_cold_add")
    cold = finish_cli(process, args.out / "logs" / "a_cold_add", "(a) cold add")
    cold_took = clocks(started)
    if cold is None:
        row("a", "add 1%, cold, `memory-bank add`", "FAILED", "", "see the problems below")
        return
    note = add_note(cold, moved(before, cold_store))
    row("a", "add 1%, cold, `memory-bank add`", str(cold_took), "", note)
    ratio_row("a", "  / full build", cold_took, build, 0.05)
    written_row(cold_store)
    stages = ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in cold["stage_seconds"].items())
    row("a", "  of which the ingest itself", f"{cold['total_seconds']:.1f} s", "", stages)
    verify(base, "warm", args.out)
    verify(cold_store, "cold", args.out)


def written_row(store: Path) -> None:
    """Bytes of the live version that no other version shares (what the add wrote), against
    the version's bytes. Files it kept are hard links of the previous version's."""
    files = [p for p in store.resolve().rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    written = sum(p.stat().st_size for p in files if p.stat().st_nlink == 1)
    biggest = sorted(
        (
            (p.stat().st_size, p.relative_to(store.resolve()))
            for p in files
            if p.stat().st_nlink == 1
        ),
        reverse=True,
    )[:3]
    note = f"{written / 1e6:.1f} of {total / 1e6:.1f} MB; largest: " + ", ".join(
        f"{path} {size / 1e6:.1f} MB" for size, path in biggest
    )
    row("a", "  bytes written / store", f"{written / total:.3f}", "<= 0.05", note)


def part_b(copies: list[Path], groups: list[list[Path]], base_files: list[Path], args) -> None:
    concurrent, sequential = copies
    before = memory_paths(concurrent)
    logs = [f"b_concurrent_{n}" for n in range(ADDERS)]
    started = clocks()
    running = [add(group, concurrent, args, log) for group, log in zip(groups, logs, strict=True)]
    together = [
        finish_cli(process, args.out / "logs" / log, f"(b) concurrent adder {log[-1]}")
        for process, log in zip(running, logs, strict=True)
    ]
    concurrent_took = clocks(started)
    apart = []
    started = clocks()
    for number, group in enumerate(groups):
        log = f"b_sequential_{number}"
        process = add(group, sequential, args, log)
        apart.append(finish_cli(process, args.out / "logs" / log, f"(b) sequential adder {number}"))
    sequential_took = clocks(started)
    added = [path for group in groups for path in group]
    note = f"{len(added)} docs ({tokens_of(added):,} tokens) in {ADDERS} groups"
    row("b", f"{ADDERS} adders at once", str(concurrent_took), "", note)
    row("b", f"{ADDERS} adders one after another", str(sequential_took))
    ratio_row("b", "  at once / one after another", concurrent_took, sequential_took, 1.1)
    expected = {str(path) for path in [*base_files, *added]}
    for label, store, summaries in zip(
        ["at once", "one after another"], copies, [together, apart], strict=True
    ):
        reader = StoreReader(store)
        in_meta = set(reader.meta["source_files"])
        in_table = set(reader.documents().column("source").to_pylist())
        lost = (expected - in_meta) | (expected - in_table)
        done = [summary for summary in summaries if summary]
        note = (
            f"meta {len(expected - in_meta)}, documents table {len(expected - in_table)}; "
            f"{sum(summary['placed'] for summary in done)}/{ADDERS} placed, "
            f"{ADDERS - len(done)} failed, {len((in_meta | in_table) - expected)} unexpected, "
            f"{moved(before, store)} stored memories moved"
        )
        for summary in done:
            if (summary.get("commit") or {}).get("reorganization"):
                note += f"; re-planned: {summary['commit']['reorganization']['reason']}"
        row("b", f"  lost documents, {label}", str(len(lost)), "0", note)
        if lost:
            problems.append(f"(b) {label}: lost {sorted(lost)[:5]}")


def journal_chunks(journal: IngestJournal, seen: dict[Path, int]) -> int:
    """Rows (= chunks) in the journal's batch files; `seen` caches each file's count."""
    for path in set(journal.batches()) - seen.keys():
        seen[path] = pq.read_metadata(path).num_rows  # written atomically: complete or absent
    return sum(seen.values())


def part_c(corpus: Corpus, config: AppConfig, embedder: Embedder, args) -> None:
    stores, sources = args.out / "stores", [str(corpus.directory)]
    clean_took, clean = timed_run(local_runner(config, embedder), stores / "c_clean", sources)
    total = clean.chunks
    note = f"{clean.documents} docs, {total} chunks; journal every {config.store.journal_tokens:,} tokens"
    row("c", "clean full build, in-process", str(clean_took), "", note)
    store = stores / "c_resumed"
    journal = IngestJournal(store, memory_recipe(config))
    command = [sys.executable, "-c", _KILLABLE_INGEST, str(args.config_json), str(store), *sources]
    seen: dict[Path, int] = {}
    with (args.out / "logs" / "c_killed.log").open("w") as log:
        started = clocks()
        ingest = subprocess.Popen(command, env=ENV, stdout=log, stderr=log)
        while ingest.poll() is None and journal_chunks(journal, seen) < KILL_AT * total:
            time.sleep(0.05)
        ingest.send_signal(signal.SIGKILL)
        killed_at = time.time()
        ingest.wait()
    killed = clocks(started)
    if ingest.returncode != -signal.SIGKILL:
        problems.append(f"(c) the ingest ended (exit {ingest.returncode}) before the SIGKILL")
        row("c", "killed ingest", "NOT KILLED", "", "see logs/c_killed.log")
        return
    batches = journal.batches()
    per_document: Counter = Counter()
    for path in batches:
        per_document.update(pq.read_table(path, columns=["document_id"]).column(0).to_pylist())
    at_kill = sum(per_document.values())
    since_save = killed_at - max(path.stat().st_mtime for path in batches)
    note = (
        f"{at_kill}/{total} chunks ({at_kill / total:.0%}) of {len(per_document)} docs journaled "
        f"in {len(batches)} batches; killed {since_save:.2f} s after the last journal write"
    )
    row("c", "SIGKILL after", str(killed), "", note)
    if store.exists():
        problems.append(f"(c) {store} exists after the kill, before any commit")
    resumed, summary = timed_run(local_runner(config, embedder), store, sources)
    note = f"of {summary.documents} docs; journal batches left after the commit: {len(journal.batches())}"
    row("c", "resumed documents", str(summary.resumed_documents), str(len(per_document)), note)
    # The resumed run processes every chunk the journal does not hand back; the ones the killed
    # run had journaled among them are done twice. (So is the batch in flight at the kill, begun
    # up to `since_save` seconds before it; the journal cannot show that one.)
    resumed_chunks = round(at_kill * summary.resumed_documents / max(1, len(per_document)))
    if summary.resumed_documents != len(per_document):
        problems.append(
            f"(c) {len(per_document)} docs journaled, {summary.resumed_documents} resumed"
        )
    redone, processed = at_kill - resumed_chunks, total - resumed_chunks
    text, verdict = f"{redone}/{total} ({redone / total:.1%})", redone <= 0.10 * total
    row("c", "chunks processed again", text, "<= 10%", "meets" if verdict else "MISSES")
    row("c", "resumed run, in-process", str(resumed), "", f"processed {processed} chunks")
    ratio_row("c", "  / clean build", resumed, clean_took)
    both = Took(killed.wall + resumed.wall, killed.cpu + resumed.cpu)
    ratio_row("c", "(killed + resumed) / clean build", both, clean_took)
    ids = StoreReader(store).chunks().column("chunk_id").to_pylist()
    clean_ids = StoreReader(stores / "c_clean").chunks().column("chunk_id").to_pylist()
    same = "yes" if ids == clean_ids else "same set" if sorted(ids) == sorted(clean_ids) else "NO"
    note = f"{len(ids)} vs {len(clean_ids)} chunks, {len(set(ids) ^ set(clean_ids))} differ"
    row("c", "chunk ids equal a clean build's", same, "yes", note)


# --- main ---------------------------------------------------------------------------------------


def print_table() -> None:
    table = [("part", "measurement", "value", "target", "note"), *rows]
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    for number, line in enumerate(table):
        cells = [
            cell.ljust(w) if i < 2 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line[:4], widths, strict=True))
        ]
        print("  ".join([*cells, line[4]]).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths) + "  ----")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=1_000_000, help="corpus size (cl100k tokens)")
    parser.add_argument("--parts", default="abc", help="which measurements to run, e.g. ac")
    parser.add_argument("--out", type=Path, default=OUT / "lifecycle")
    parser.add_argument(
        "--runner", choices=["local", "ray"], default="local", help="(a)'s build and warm add"
    )
    parser.add_argument("--group-share", type=float, default=0.01, help="documents per (b) adder")
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "local.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    args = parser.parse_args()
    config = with_overrides(load_config(args.config), args.overrides)
    args.out = args.out.resolve()
    fresh_out(args.out)
    args.config_file = args.out / "config.yaml"  # the subprocesses get the very same settings
    args.config_file.write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    args.config_json = args.out / "config.json"
    args.config_json.write_text(config.model_dump_json())

    corpus = build_corpus(args.tokens)
    files = discover_files([corpus.directory])
    add_files, groups, base_files = split_corpus(files, args.group_share)
    n_group = len(groups[0])
    print(
        f"Corpus {corpus.directory}: {len(files)} files, {corpus.tokens:,} tokens. Base store: "
        f"{len(base_files)} files; held out (seed {SEED}): {len(add_files)} for (a) "
        f"({tokens_of(add_files):,} tokens), {ADDERS} x {n_group} for (b)."
    )
    overrides = ", ".join(args.overrides) or "no overrides"
    print(
        f"{os.cpu_count()} cores, load {load_average()}; {args.config} + {overrides}.",
        flush=True,
    )
    load_before = os.getloadavg()[0]

    embedder = Embedder(config.embedding)
    if "a" in args.parts or "b" in args.parts:
        stores = args.out / "stores"
        base = stores / "base"
        if args.runner == "ray":
            from actors.runtime import ensure_ray
            from pipeline.executor import ray_runner

            started_ray = ensure_ray(config.ray)
            runner = ray_runner(config)
        else:
            started_ray, runner = False, local_runner(config, embedder)
        build, built = timed_run(runner, base, [str(path) for path in base_files])
        note = f"{built.documents} docs, {built.chunks} chunks, {built.directories} dirs"
        row("a", f"full build ({args.runner})", str(build), "", f"{note}; CPU {build.cpu:.1f} s")
        if "b" in args.parts:  # copied before (a)'s warm add changes the base store
            copies = [
                copy_store(base, stores / f"b_{kind}") for kind in ("concurrent", "sequential")
            ]
        if "a" in args.parts:
            part_a(base, add_files, runner, build, args)
        if started_ray:
            import ray

            ray.shutdown()
        if "b" in args.parts:
            part_b(copies, groups, base_files, args)
    if "c" in args.parts:
        part_c(corpus, config, embedder, args)
    print(f"\nLoad average (1/5/15 min) at the end: {load_average()}.")
    if max(load_before, os.getloadavg()[0]) > BUSY_LOAD:
        print(f"WARNING: other work competed for the {os.cpu_count()} cores; timings are noisy.")
    print()
    print_table()
    for number, problem in enumerate(problems):
        print(("\nProblems:\n" if number == 0 else "") + f"- {problem}")


if __name__ == "__main__":
    main()
