"""A driver for the actor node-loss test, run as a Ray job on the local cluster.

`python -m tests.cluster.actor_driver pin STORE NODE_RESOURCE` builds a one-document store,
starts its writer and graph actors on the node holding NODE_RESOURCE (and, should that node
die, on any other) and records a session step through the graph actor; it prints what was
acknowledged, as JSON.

`python -m tests.cluster.actor_driver check STORE SESSION_ID MEMORY_ID` finds both actors by
name again, reads the session and the memory back, and commits one more document through the
writer; it prints what it found, as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import ray

from actors.graph import GraphActor, RemoteKeeper, graph_actor
from actors.runtime import ensure_ray
from actors.store_actors import store_actor_options, store_path
from actors.writer import StoreWriter
from memory_bank.config import AppConfig
from memory_bank.ingest.runner import local_runner
from memory_bank.store.reader import StoreReader
from pipeline.executor import ray_runner

NOTES = {
    "pin": "# Lighthouse log\n\nThe keeper of the Halden light logged a storm on 3 March 1874.\n",
    "check": "# Harbour log\n\nThe Halden harbour master closed the pier on 4 March 1874.\n",
}


def pin(store: Path, resource: str) -> dict:
    config = AppConfig()
    # The first document committed in this driver (no Ray Data: quicker); from here on the
    # store's commits go through the writer actor, its graph steps through the graph actor.
    built = local_runner(config).run(store, files=[str(_note(store, "pin"))])
    [node_id] = [n["NodeID"] for n in ray.nodes() if n["Alive"] and resource in n["Resources"]]
    # On that node, or on any other when it is gone (soft node affinity is not kept for
    # actors that need no CPU; a label selector with a fallback is).
    where = {
        "label_selector": {"ray.io/node-id": node_id},
        "fallback_strategy": [{"label_selector": {"ray.io/node-id": f"!{node_id}"}}],
    }
    path = store_path(store)
    writer = ray.remote(StoreWriter).options(**store_actor_options("writer", store), **where)
    ray.get(writer.remote(path).__ray_ready__.remote())
    ray.remote(GraphActor).options(**store_actor_options("graph", store), **where).remote(
        path, config.model_dump(mode="json")
    )
    keeper = RemoteKeeper(graph_actor(store, config))
    doc = keeper.open_session("When did the Halden light log a storm?")
    step = keeper.intercept(doc.doc_id, "The Halden keeper's log names a storm on 3 March 1874.")
    return {
        "node_id": node_id,
        "store_version": built.commit.store_version,
        "session_id": doc.doc_id,
        "insight_doc": step.insight_doc.model_dump(mode="json"),
        "new_node": step.new_nodes[0].id,
        "graph_nodes": keeper.summary().nodes,
    }


def check(store: Path, session_id: str, new_node: str) -> dict:
    config = AppConfig()
    keeper = RemoteKeeper(graph_actor(store, config))  # by name: the restarted actor
    doc = _retry(lambda: keeper.insight_doc(session_id))
    node = _retry(lambda: keeper.node(new_node))
    before = StoreReader(store).store_version
    committed = ray_runner(config).run(store, files=[str(_note(store, "check"))])
    return {
        "insight_doc": doc.model_dump(mode="json"),
        "node_summary": node.summary,
        "graph_nodes": _retry(keeper.summary).nodes,
        "version_before": before,
        "committed_documents": committed.commit.documents,
        "sources": len(StoreReader(store).meta["source_files"]),
    }


def _note(store: Path, kind: str) -> Path:
    path = store.parent / f"{kind}_note.md"
    path.write_text(NOTES[kind], encoding="utf-8")
    return path


def _retry(call, seconds: float = 120.0):
    """Call until the restarted actor answers (calls during its restart fail)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return call()
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def main(argv: list[str]) -> int:
    ensure_ray(AppConfig().ray)
    command, store, *rest = argv
    result = pin(Path(store), *rest) if command == "pin" else check(Path(store), *rest)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
