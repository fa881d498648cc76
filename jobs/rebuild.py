"""`python -m jobs.rebuild --store DIR [--config FILE]`: the rebuild job.

Plans the whole tree anew from the stored memories and vectors (incremental adds only place new
memories into the existing tree) and rewrites the store in one swap; documents are memorized
again only when the store was made with another memory recipe. Meant for a schedule, e.g.
`ray job submit --working-dir . -- python -m jobs.rebuild --store /data/mem` nightly. Prints the
summary as one JSON line.
"""

from __future__ import annotations

import argparse
import sys

from jobs.ingest import add_store_arguments, run_job
from memory_bank.errors import StoreError
from memory_bank.store.layout import is_store


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m jobs.rebuild", description=__doc__)
    add_store_arguments(parser)
    parser.add_argument(
        "--reembed",
        action="store_true",
        help="move a store made by another embedder to the configured one (embeds every "
        "document again)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def rebuild(runner):
        if not is_store(args.store):
            raise StoreError(f"no memory store at {args.store} to rebuild")
        return runner.run(args.store, replan=True, reembed=args.reembed)

    return run_job(args, rebuild)


if __name__ == "__main__":
    sys.exit(main())
