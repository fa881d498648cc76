"""`python -m jobs.ingest PATH... --store DIR [--config FILE]`: the ingest job.

The same command runs locally and under `ray job submit --working-dir . -- python -m jobs.ingest
...`; inside a Ray job it joins the job's cluster. Prints the summary as one JSON line.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memory_bank.errors import MemoryBankError

if TYPE_CHECKING:
    from memory_bank.ingest.runner import IngestRunner
    from memory_bank.schemas import IngestSummary


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jobs.ingest", description=__doc__)
    parser.add_argument("paths", nargs="+", type=Path, help="files and directories to ingest")
    add_store_arguments(parser)
    return parser.parse_args(argv)


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """--store, --config and --address, shared by the jobs that write a store."""
    parser.add_argument("--store", required=True, type=Path, help="store directory")
    parser.add_argument("--config", type=Path, default=None, help="YAML config")
    parser.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS/auto)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return run_job(args, lambda runner: runner.run(args.store, files=[str(p) for p in args.paths]))


def run_job(args: argparse.Namespace, work: Callable[[IngestRunner], IngestSummary]) -> int:
    """Run `work` with a Ray runner built from `--config`/`--address`; print the summary as
    one JSON line, or an error and exit status 1."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        from memory_bank.config import load_config
        from pipeline.executor import ray_runner

        config = load_config(args.config)
        if args.address:
            config.ray.address = args.address
        summary = work(ray_runner(config))
    except (MemoryBankError, OSError) as exc:
        from memory_bank.store.disk import error_line

        print(f"error: {error_line(exc)}", file=sys.stderr)
        return 1
    for line in summary.skipped:
        print(f"skipped {line}", file=sys.stderr)
    print(summary.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
