"""`python -m jobs.ingest PATH... --store DIR [--config FILE]`: the ingest job.

The same command runs locally and under `ray job submit --working-dir . -- python -m jobs.ingest
...`; inside a Ray job it joins the job's cluster. Prints the summary as one JSON line.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from memory_bank.errors import MemoryBankError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jobs.ingest", description=__doc__)
    parser.add_argument("paths", nargs="+", type=Path, help="files and directories to ingest")
    parser.add_argument("--store", required=True, type=Path, help="store directory")
    parser.add_argument("--config", type=Path, default=None, help="YAML config")
    parser.add_argument("--address", default=None, help="Ray address (default: RAY_ADDRESS/auto)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        from memory_bank.config import load_config
        from pipeline.ingest import RayIngest

        config = load_config(args.config)
        if args.address:
            config.ray.address = args.address
        summary = RayIngest(config).run(args.store, files=[str(p) for p in args.paths])
    except MemoryBankError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in summary.skipped:
        print(f"skipped {line}", file=sys.stderr)
    print(summary.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
