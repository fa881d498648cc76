"""LLM calls, tokens and wall time of an ingest through the `openai` backend, next to the offline
build of the same corpus.

    python bench/llm.py [--latency 0.3] [--runner local|ray|both] [--passages 100]
                        [--corpus sample|hotpotqa|stories|all] [--set llm.max_concurrency=8 ...]

For each corpus (data/sample: two dozen documents of 600-1,400 words; the first `--passages`
HotpotQA dev passages as text files; `bench/data/short_stories`: a dozen short stories of about
850 words, written for this benchmark, most a little longer than one chunk, so that the split
role has a section to cut in nearly every document) and runner, it times:

- `offline`: a full build with the offline backend (the default), into a fresh store;
- `openai full build`: the same sources with `--backend openai` against a loopback
  OpenAI-compatible server on 127.0.0.1 that waits `--latency` seconds per request and answers
  every role with the offline implementation's result (`tests/llm_offline_model.py`), through
  the real `openai` client; a fresh response cache;
- `re-ingest`: the same sources again into that store (unchanged: no request expected);
- `rebuild`: the whole tree planned anew from the stored memories (replies from the cache);
- `fresh store, warm cache`: the full build again into a new store with the cache of the first
  (the content-addressed cache answers every request).

`same paths` is the share of memories whose file path equals the offline store's: the loopback
model answers like the offline roles, so a build through the protocol should give the same store.

`first/chunk` counts first attempts only (requests less the re-prompts after an invalid reply),
and `by role` splits them by role. The endpoint's own compute is not on this machine's CPUs:
the loopback model looks its answers up in the offline store of the same sources (built in the
`offline` row), so the injected latency is the whole cost of a call, as with a remote endpoint.
The embedding model is loaded once, before any timing (in-process runner); on Ray every build
starts its own actors. Targets: <= 0.3 first-attempt requests per chunk for a full build, on
short documents as on long ones, 0 for a re-ingest, and with 300 ms per call the full build
within 2x the offline build's wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from memory_bank.config import AppConfig  # noqa: E402
from memory_bank.evaluation.dataset_files import (  # noqa: E402
    development_eval_dir,
    read_json,
    single_file,
    slugify,
    unique_name,
    write_text,
)
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.ingest.executor import LocalExecutor  # noqa: E402
from memory_bank.ingest.runner import IngestRunner  # noqa: E402
from memory_bank.llm import open_llm  # noqa: E402
from memory_bank.llm.ledger import LedgerSummary  # noqa: E402
from memory_bank.schemas import IngestSummary  # noqa: E402
from tests.llm_offline_model import OfflineModel  # noqa: E402
from tests.loopback_llm import serve_loopback  # noqa: E402

OUT = REPO / "bench" / "out" / "llm"
SAMPLE = REPO / "data" / "sample"
STORIES = REPO / "bench" / "data" / "short_stories"
TARGET_CALLS_PER_CHUNK = 0.3
TARGET_WALL_RATIO = 2.0


@dataclass
class Row:
    corpus: str
    runner: str
    run: str
    chunks: int
    calls: int
    cached: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    offline_seconds: float | None = None
    fallbacks: int = 0
    repairs: int = 0
    first_by_role: dict[str, int] = field(default_factory=dict)  # first-attempt requests
    same_paths: float | None = None  # share of memories at the offline store's path

    @property
    def first_attempts(self) -> int:
        return self.calls - self.repairs


def hotpot_passages(count: int) -> Path:
    """The first `count` passages of the HotpotQA dev corpus as text files (cached)."""
    target = OUT / f"hotpotqa_{count}"
    if target.is_dir() and len(list(target.glob("*.txt"))) == count:
        return target
    dataset = development_eval_dir(REPO) / "hotpotqa"
    corpus = read_json(single_file(dataset, "*_corpus.json"))
    shutil.rmtree(target, ignore_errors=True)
    taken: set[str] = set()
    for title, sentences in list(corpus.items())[:count]:
        name = unique_name(slugify(title), ".txt", taken)
        write_text(target / name, f"{title}\n\n{''.join(sentences).strip()}\n")
    return target


def settings(overrides: list[str]) -> dict:
    """`--set a.b=value` pairs as a nested dict (values parsed as JSON when they parse)."""
    nested: dict = {}
    for item in overrides:
        key, _, raw = item.partition("=")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        *parents, leaf = key.split(".")
        place = nested
        for parent in parents:
            place = place.setdefault(parent, {})
        place[leaf] = value
    return nested


def merged(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out.get(key, {}), value) if isinstance(value, dict) else value
    return out


class Runners:
    """Makes ingest runners for one runner kind; Ray is started once for all of them."""

    def __init__(self, kind: str, embedder: Embedder | None) -> None:
        self.kind = kind
        self.embedder = embedder
        self._ray_started = False

    def runner(self, config: AppConfig) -> IngestRunner:
        if self.kind == "local":
            return IngestRunner(config, LocalExecutor(config, self.embedder), open_llm(config.llm))
        from actors.runtime import ensure_ray
        from pipeline.executor import ray_runner

        if not self._ray_started:
            self._ray_started = ensure_ray(config.ray, config.llm) or True
        return ray_runner(config)

    def close(self) -> None:
        if self.kind == "ray" and self._ray_started:
            import ray

            ray.shutdown()


def usage(summary: IngestSummary) -> LedgerSummary:
    return LedgerSummary.model_validate(summary.llm or {})


def row(corpus: str, runner: str, run: str, chunks: int, summary: IngestSummary, seconds: float):
    ledger = usage(summary)
    roles = ledger.roles.values()
    return Row(
        corpus=corpus,
        runner=runner,
        run=run,
        chunks=chunks,
        calls=ledger.calls,
        cached=sum(u.cached for u in roles),
        prompt_tokens=sum(u.prompt_tokens for u in roles),
        completion_tokens=sum(u.completion_tokens for u in roles),
        seconds=seconds,
        fallbacks=sum(u.fallbacks for u in roles),
        repairs=sum(u.repairs for u in roles),
        first_by_role={
            role: u.calls - u.repairs for role, u in ledger.roles.items() if u.calls - u.repairs
        },
    )


def memory_paths(store: Path) -> dict[str, str]:
    from memory_bank.store.reader import StoreReader

    table = StoreReader(store.resolve()).memories()
    return dict(
        zip(table.column("chunk_id").to_pylist(), table.column("path").to_pylist(), strict=True)
    )


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def bench_corpus(
    name: str, sources: Path, runners: Runners, latency: float, base: dict, work: Path
) -> list[Row]:
    offline_config = AppConfig.model_validate(base)
    offline_store = work / f"{name}-{runners.kind}-offline"
    summary, offline_seconds = timed(runners.runner(offline_config).run, offline_store, [sources])
    chunks = summary.chunks
    rows = [row(name, runners.kind, "offline", chunks, summary, offline_seconds)]
    model = OfflineModel(offline_config, runners.embedder).learn(offline_store)
    with serve_loopback() as llm:
        model.register(llm)
        llm.latency_seconds = latency
        llm_settings = {
            "backend": "openai",
            "base_url": llm.base_url,
            "model": "loopback-offline",
            "cache_dir": str(work / f"{name}-{runners.kind}-cache"),
        }
        config = AppConfig.model_validate(merged(base, {"llm": llm_settings}))
        store = work / f"{name}-{runners.kind}-openai"
        runs = [
            ("openai full build", store, False),
            ("re-ingest", store, False),
            ("rebuild", store, True),
            ("fresh store, warm cache", work / f"{name}-{runners.kind}-openai-2", False),
        ]
        for run, target, replan in runs:
            summary, seconds = timed(
                runners.runner(config).run, target, [sources] if not replan else [], replan=replan
            )
            result = row(name, runners.kind, run, chunks, summary, seconds)
            result.offline_seconds = offline_seconds
            offline_paths, paths = memory_paths(offline_store), memory_paths(target)
            result.same_paths = sum(
                paths.get(chunk_id) == path for chunk_id, path in offline_paths.items()
            ) / max(len(offline_paths), 1)
            rows.append(result)
    return rows


def print_table(rows: list[Row], latency: float) -> None:
    header = (
        f"{'corpus':<10} {'runner':<6} {'run':<24} {'chunks':>6} {'calls':>6} {'cached':>6} "
        f"{'first/chunk':>11} {'prompt tok/chunk':>16} {'compl. tok/chunk':>16} "
        f"{'wall s':>7} {'ms/chunk':>8} {'vs offline':>10} {'same paths':>10}  by role"
    )
    print(f"\nLoopback endpoint: {latency * 1000:.0f} ms per request\n")
    print(header)
    print("-" * len(header))
    for r in rows:
        per = max(r.chunks, 1)
        ratio = f"{r.seconds / r.offline_seconds:.2f}x" if r.offline_seconds else ""
        same = f"{r.same_paths:.0%}" if r.same_paths is not None else ""
        by_role = ", ".join(f"{role} {n}" for role, n in sorted(r.first_by_role.items()))
        print(
            f"{r.corpus:<10} {r.runner:<6} {r.run:<24} {r.chunks:>6} {r.calls:>6} {r.cached:>6} "
            f"{r.first_attempts / per:>11.3f} {r.prompt_tokens / per:>16.0f} "
            f"{r.completion_tokens / per:>16.0f} {r.seconds:>7.1f} "
            f"{1000 * r.seconds / per:>8.0f} {ratio:>10} {same:>10}  {by_role}"
        )
    print()
    for r in rows:
        if r.run == "openai full build":
            calls_ok = r.first_attempts / max(r.chunks, 1) <= TARGET_CALLS_PER_CHUNK
            wall_ok = r.offline_seconds and r.seconds <= TARGET_WALL_RATIO * r.offline_seconds
            print(
                f"{r.corpus}/{r.runner}: first-attempt requests/chunk "
                f"{'ok' if calls_ok else 'MISSED'} "
                f"(<= {TARGET_CALLS_PER_CHUNK}), wall {'ok' if wall_ok else 'MISSED'} "
                f"(<= {TARGET_WALL_RATIO}x offline), fallbacks {r.fallbacks}, repairs {r.repairs}"
            )
        if r.run == "re-ingest":
            print(f"{r.corpus}/{r.runner}: re-ingest calls {r.calls} (target 0)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--runner", choices=["local", "ray", "both"], default="local")
    parser.add_argument("--corpus", choices=["sample", "hotpotqa", "stories", "all"], default="all")
    parser.add_argument("--passages", type=int, default=100)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    corpora = []
    if args.corpus in ("sample", "all"):
        corpora.append(("sample", SAMPLE))
    if args.corpus in ("hotpotqa", "all"):
        corpora.append((f"hotpot{args.passages}", hotpot_passages(args.passages)))
    if args.corpus in ("stories", "all"):
        corpora.append(("stories", STORIES))
    base = settings(args.set)
    kinds = ["local", "ray"] if args.runner == "both" else [args.runner]
    embedder = None
    if "local" in kinds:
        embedder = Embedder(AppConfig.model_validate(base).embedding)
        embedder.encode(["warm up"])  # the model loads before any timing
    rows: list[Row] = []
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=OUT) as scratch:
        for kind in kinds:
            runners = Runners(kind, embedder if kind == "local" else None)
            try:
                for name, sources in corpora:
                    rows.extend(
                        bench_corpus(name, sources, runners, args.latency, base, Path(scratch))
                    )
            finally:
                with contextlib.suppress(Exception):
                    runners.close()
    print_table(rows, args.latency)


if __name__ == "__main__":
    main()
