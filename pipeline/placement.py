"""Where a Ray job's work ran, from Ray's state API: its tasks and actors grouped by ingest stage
and by node.

    python -m pipeline.placement SUBMISSION_ID [--address http://HEAD:8265] [--json]

Run it with the cluster's client environment (RAY_AUTH_MODE=token and the token, as for `ray
job submit`). Nodes are named by their `node_<name>` custom resource where they carry one (the
local cluster of `pipeline/local_cluster.py` does), else by the first 8 characters of their id.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

# Ray's names for the work of each stage (functions, Ray Data operators, actor methods).
STAGE_TASKS: dict[str, tuple[str, ...]] = {
    "read": ("_read_files_task",),
    "chunk": ("MapBatches(chunk_batch)",),
    "embed": ("MapWorker(MapBatches(EmbedChunks)).submit",),
    "memorize": ("MapBatches(memorize_batch)",),
    "plan": ("plan_group", "plan_group_with_model"),
    "readme": ("_subtree_readmes_and_usage",),
    "graph": ("analyze_tasks", "_encode_texts"),
    "commit": ("StoreWriter.commit",),
}
STAGE_OF = {name: stage for stage, names in STAGE_TASKS.items() for name in names}
NODE_RESOURCE_PREFIX = "node_"


def node_names(nodes: list[Any]) -> dict[str, str]:
    """Ray node id -> a readable name (its `node_<name>` resource, else a short id)."""
    names = {}
    for node in nodes:
        custom = sorted(
            key.removeprefix(NODE_RESOURCE_PREFIX)
            for key in (node.resources_total or {})
            if key.startswith(NODE_RESOURCE_PREFIX)
        )
        names[node.node_id] = custom[0] if custom else node.node_id[:8]
    return names


def job_placement(address: str, submission_id: str) -> dict[str, Any]:
    """The job's tasks per stage and node: `{"job_id", "stages": {stage: {node: tasks}},
    "actors": {class: [node, ...]}}`, counting only tasks that finished."""
    from ray.job_submission import JobSubmissionClient
    from ray.util.state import list_actors, list_nodes, list_tasks

    job_id = JobSubmissionClient(address).get_job_info(submission_id).job_id
    if job_id is None:
        raise RuntimeError(f"job {submission_id} has not started a driver")
    names = node_names(list_nodes(address=address, limit=10_000, detail=True))
    tasks = list_tasks(
        address=address,
        filters=[("job_id", "=", job_id)],
        detail=True,
        limit=10_000,
        raise_on_missing_output=False,
    )
    counts: Counter[tuple[str, str]] = Counter(
        (STAGE_OF[task.name], names.get(task.node_id, "?"))
        for task in tasks
        if task.name in STAGE_OF and task.state == "FINISHED" and task.node_id
    )
    stages: dict[str, dict[str, int]] = {}
    for (stage, node), count in sorted(counts.items()):
        stages.setdefault(stage, {})[node] = count
    actors: dict[str, list[str]] = {}
    for actor in list_actors(
        address=address, filters=[("job_id", "=", job_id)], limit=10_000, detail=True
    ):
        actors.setdefault(actor.class_name, []).append(names.get(actor.node_id, "?"))
    ordered = {stage: stages[stage] for stage in STAGE_TASKS if stage in stages}
    return {"job_id": job_id, "stages": ordered, "actors": actors}


def format_table(placement: dict[str, Any]) -> str:
    """Stages as rows, nodes as columns: how many tasks of each stage ran on each node."""
    nodes = sorted({node for row in placement["stages"].values() for node in row})
    header = ["stage", *nodes, "nodes"]
    rows = [
        [stage, *(str(row.get(node, 0)) for node in nodes), str(len(row))]
        for stage, row in placement["stages"].items()
    ]
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.placement", description=__doc__)
    parser.add_argument("submission_id")
    parser.add_argument(
        "--address",
        default=os.environ.get("RAY_API_SERVER_ADDRESS", "http://127.0.0.1:8265"),
        help="the dashboard (default: RAY_API_SERVER_ADDRESS or http://127.0.0.1:8265)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args(argv)
    placement = job_placement(args.address, args.submission_id)
    if args.json:
        print(json.dumps(placement))
    else:
        print(f"job {args.submission_id} ({placement['job_id']}): finished tasks per node")
        print(format_table(placement))
        for name, where in sorted(placement["actors"].items()):
            print(f"actor {name}: {', '.join(where)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
