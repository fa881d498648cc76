"""Evaluate retrieval on one dataset, or on all development datasets (`make eval`).

    python bench/evaluate.py DATASET_DIR --format hotpotqa --out .eval [jobs.evaluate options]
    python bench/evaluate.py --all-dev --out .eval [--eval-dir DIR] [--reuse-stores]

One dataset: the arguments go to `python -m jobs.evaluate` unchanged (see its --help).
--all-dev runs, one after the other, the development splits in `../shared/eval` beside the repo:
HotpotQA (all 100 questions over the 994-paragraph pool), FairytaleQA val (every story, the
first --fairytaleqa-limit questions taken round-robin over the stories) and QMSum val (the first
--qmsum-meetings meetings), then prints every table again. Each store is rebuilt unless
--reuse-stores is given (for query-side changes only: a reused store does not see changes to
chunking or memorizing).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from jobs.evaluate import EVAL_MODES  # noqa: E402
from jobs.evaluate import main as evaluate_main  # noqa: E402
from memory_bank.evaluation.dataset_files import dataset_name, development_eval_dir  # noqa: E402

DEFAULT_EVAL_DIR = development_eval_dir(REPO)  # $MEMORY_BANK_EVAL_DIR or ../shared/eval
FAIRYTALEQA_LIMIT = 300  # of 1,025 questions: every story is covered, the run stays in minutes
QMSUM_MEETINGS = 8


def dev_runs(
    eval_dir: Path, fairytaleqa_limit: int, qmsum_meetings: int
) -> list[tuple[str, list[str]]]:
    """(dataset name, jobs.evaluate arguments) of each development dataset."""
    runs = [
        (eval_dir / "hotpotqa", "hotpotqa", []),
        (eval_dir / "fairytaleqa" / "val", "fairytaleqa", ["--limit", str(fairytaleqa_limit)]),
        (eval_dir / "qmsum" / "val", "qmsum", ["--max-groups", str(qmsum_meetings)]),
    ]
    return [
        (dataset_name(dataset_format, folder), [str(folder), "--format", dataset_format, *extra])
        for folder, dataset_format, extra in runs
    ]


def run_all_dev(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/evaluate.py --all-dev", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--all-dev", action="store_true")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument(
        "--eval-dir", type=Path, default=DEFAULT_EVAL_DIR, help="default: %(default)s"
    )
    parser.add_argument("--config", type=Path, default=None)
    parser.add_argument("--modes", default=",".join(EVAL_MODES))
    parser.add_argument("--runner", choices=("local", "ray"), default="local")
    parser.add_argument("--fairytaleqa-limit", type=int, default=FAIRYTALEQA_LIMIT)
    parser.add_argument("--qmsum-meetings", type=int, default=QMSUM_MEETINGS)
    parser.add_argument(
        "--reuse-stores", action="store_true", help="reuse each dataset's store from an earlier run"
    )
    args = parser.parse_args(argv)
    if not (args.eval_dir / "README.md").is_file():
        print(
            f"error: no development datasets at {args.eval_dir} (expected ../shared/eval beside the "
            "repository); pass --eval-dir",
            file=sys.stderr,
        )
        return 2

    shared = ["--out", str(args.out), "--modes", args.modes, "--runner", args.runner]
    if args.config is not None:
        shared += ["--config", str(args.config)]
    failures = []
    names = []
    for name, dataset_args in dev_runs(args.eval_dir, args.fairytaleqa_limit, args.qmsum_meetings):
        store = args.out / name / "store"
        reuse = ["--store", str(store)] if args.reuse_stores and store.is_dir() else []
        print(f"\n=== {name} ===", flush=True)
        if evaluate_main([*dataset_args, *shared, *reuse]) != 0:
            failures.append(name)
        else:
            names.append(name)

    print("\n=== all development datasets ===")
    for name in names:
        print((args.out / f"{name}.table.txt").read_text(encoding="utf-8"))
    if failures:
        print(f"failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if "--all-dev" in arguments:
        return run_all_dev(arguments)
    return evaluate_main(arguments)


if __name__ == "__main__":
    sys.exit(main())
