"""The graph step of a full build on its own: how many sentence pairs the contradiction rules
compare, the verdicts, the CPU seconds of the step and of its analysis calls, and the bytes each
call ships to its task.

    python bench/graph_step.py [--tokens 100000] [--out bench/out/graph_step] [--rebuild]

Builds once (kept under `--out`) the base store of `bench/lifecycle.py --tokens N --parts a`
(the same corpus and held-out documents), then runs the graph step of a full build of it again
on an empty graph: every stored memory added, in the order a build adds them, in this process
(the in-process runner's serial map). CPU seconds are `time.process_time` (steadier than wall
time on a shared machine; run under `flock /tmp/bench.lock`, the load average is printed).

Bytes per call: the pickled arguments of each analysis call, as a Ray task would be sent them;
an argument object that several calls share is put in the object store once per step
(`actors.runtime.map_on_tasks`) and counted once, apart.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench.corpus import OUT, build_corpus  # noqa: E402
from bench.lifecycle import load_average, split_corpus  # noqa: E402
from memory_bank.config import load_config  # noqa: E402
from memory_bank.graph import contradictions  # noqa: E402
from memory_bank.graph.batch import GraphCommit  # noqa: E402
from memory_bank.graph.storage import GraphStorage  # noqa: E402
from memory_bank.index.embedding import Embedder  # noqa: E402
from memory_bank.ingest.graph_step import IngestGraphStep, memory_inputs  # noqa: E402
from memory_bank.ingest.runner import local_runner  # noqa: E402
from memory_bank.store.layout import looks_like_store  # noqa: E402
from memory_bank.store.reader import StoreReader  # noqa: E402
from memory_bank.store.snapshot import load_parts  # noqa: E402
from memory_bank.text.inputs import discover_files  # noqa: E402

GROUP_SHARE = 0.01  # bench/lifecycle.py's default: its base store


class MeasuringMap:
    """The serial map, timing each call's CPU and sizing what it would ship."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.bytes: list[int] = []
        self.shared_bytes = 0
        self.verdicts: list[str] = []  # every relationship found, one line each

    def __call__(self, function, calls: list[tuple[Any, ...]]) -> list:
        uses = Counter(id(argument) for arguments in calls for argument in arguments)
        shared = {id(a): a for arguments in calls for a in arguments if uses[id(a)] > 1}
        self.shared_bytes += sum(_size(argument) for argument in shared.values())
        # Sized before any call runs: the serial map hands every call the same objects, and a
        # call leaves what it read of a view (its facts) on it.
        for arguments in calls:
            self.bytes.append(_size(tuple(a for a in arguments if id(a) not in shared)))
        results = []
        for arguments in calls:
            started = time.process_time()
            results.append(function(*arguments))
            self.verdicts.extend(
                f"{task.new.id} {r.relationship} {r.existing_node_id} {r.conflict_description or ''}"
                for task, found in zip(arguments[0], results[-1], strict=True)
                for r in found
            )
            self.cpu.append(time.process_time() - started)
        return results


def _size(value: object) -> int:
    return len(pickle.dumps(value, protocol=5))


def base_store(tokens: int, out: Path, rebuild: bool, config, embedder) -> Path:
    store = out / "store"
    if looks_like_store(store) and not rebuild:
        return store
    corpus = build_corpus(tokens)
    _, _, base_files = split_corpus(discover_files([corpus.directory]), GROUP_SHARE)
    print(f"building the base store of {len(base_files)} files at {store} ...", flush=True)
    local_runner(config, embedder).run(store, files=[str(path) for path in base_files])
    return store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None, help="default bench/out/graph_step_N")
    parser.add_argument("--rebuild", action="store_true", help="build the base store again")
    parser.add_argument("--verdicts", type=Path, help="write every verdict to this file")
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "local.yaml")
    args = parser.parse_args()
    out = (args.out or OUT / f"graph_step_{args.tokens}").resolve()
    config = load_config(args.config)
    embedder = Embedder(config.embedding)
    store = base_store(args.tokens, out, args.rebuild, config, embedder)
    parts = load_parts(StoreReader(store.resolve()))
    added = memory_inputs(parts, time.time())
    print(f"{len(added)} memories, {len(parts.sentences):,} sentences; load {load_average()}")

    compared = 0
    rule = contradictions.find_contradiction

    def counted(*arguments, **keywords):
        nonlocal compared
        compared += 1
        return rule(*arguments, **keywords)

    contradictions.find_contradiction = counted
    measuring = MeasuringMap()
    embedder.encode(["warm up"])
    with tempfile.TemporaryDirectory() as empty:
        step = IngestGraphStep(GraphStorage(Path(empty) / "store"), config, embedder.encode)
        step.map_calls = measuring
        started = time.process_time()
        _, outcome = step.prepare_commit(
            GraphCommit(added=added, removed=[], chunk_ids_after={m.chunk_id for m in added})
        )
        step_cpu = time.process_time() - started
    contradictions.find_contradiction = rule

    calls = len(measuring.cpu)
    if args.verdicts:
        args.verdicts.write_text("\n".join(sorted(measuring.verdicts)) + "\n")
    print(f"\nLoad average (1/5/15 min) at the end: {load_average()}\n")
    rows = [
        ("sentence pairs compared", f"{compared:,}"),
        ("memory pairs kept", f"{outcome.pairs}"),
        ("related", f"{outcome.related}"),
        ("merges", f"{outcome.merges}"),
        ("conflicts", f"{len(outcome.conflicts)}"),
        ("graph step CPU s", f"{step_cpu:.1f}"),
        (f"analysis CPU s ({calls} calls)", f"{sum(measuring.cpu):.1f}"),
        ("MB per call (mean / max)", _megabytes(measuring.bytes)),
        ("MB shared, once per step", f"{measuring.shared_bytes / 1e6:.1f}"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


def _megabytes(sizes: list[int]) -> str:
    if not sizes:
        return "-"
    return f"{sum(sizes) / len(sizes) / 1e6:.1f} / {max(sizes) / 1e6:.1f}"


if __name__ == "__main__":
    main()
