"""The README stage of a commit: every directory's README, composed anew only where its inputs
changed (and so in its ancestors, whose summaries are drawn from their subtrees)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memory_bank.config import TaxonomyConfig
from memory_bank.ingest.commit_change import Change
from memory_bank.ingest.commit_tree import TreePlan
from memory_bank.ingest.stages import compose_readmes, subtree_summaries
from memory_bank.ingest.tree_changes import readme_file_entry, readme_signatures
from memory_bank.llm.ledger import add_usage, take_usage
from memory_bank.llm.seam import LLM
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import readme_role
from memory_bank.taxonomy.readme import README_FORMAT
from memory_bank.taxonomy.roles import ReadmeRequest


@dataclass(frozen=True)
class ReadmeSet:
    """The READMEs of the new version."""

    texts: dict[str, str]  # tree path -> README text, every directory
    stale: list[str]  # directories whose README was composed anew, in tree order


def stale_directories(change: Change, plan: TreePlan) -> list[str]:
    """Directories of the planned tree whose README inputs differ from those of the version
    the change builds on (all of them when it wrote its READMEs in another format, or there is
    none)."""
    before = change.before
    new = readme_signatures(plan.tree, change.parts.memories, plan.chunk_paths)
    if before is None or before.meta.get("readme_format") != README_FORMAT:
        return list(new)
    old = readme_signatures(before.tree, before.parts.memories, before.chunk_paths or {})
    return [
        path
        for path, signature in new.items()
        if old.get(path) != signature or not before.readmes.get(path)
    ]


def readme_stage(
    change: Change,
    plan: TreePlan,
    config: TaxonomyConfig,
    llm: LLM | None,
    map_calls: TaskMap = run_serially,
    stored_words: Mapping[str, Sequence[str]] | None = None,
) -> ReadmeSet:
    """Every directory's README: `before`'s text where its inputs did not change, else the
    readme role, asking `llm`. Above `coarse_threshold` memories the work goes out by
    `map_calls` per top-level subtree: reading its memories' words, and composing its
    READMEs (all of them for a tree composed anew, else its stale ones). `stored_words`:
    chunk id -> index words of the memories already stored (`store.memory_words`)."""
    before, parts, tree = change.before, change.parts, plan.tree
    stale = stale_directories(change, plan)
    directories = {node.path: node for node in tree.iter_nodes()}
    if before is None or len(stale) == len(directories):
        texts = compose_readmes(
            tree,
            parts.memories,
            plan.chunk_paths,
            config,
            llm,
            map_calls,
            vectors=parts.memory_vectors,
        )
        return ReadmeSet(texts=texts, stale=stale)
    large = len(parts.memories) > config.coarse_threshold
    fan_out = map_calls if large else run_serially
    by_index = {memory.index: memory for memory in parts.memories}
    stored = stored_words or {}
    known = {
        memory.index: stored[chunk_id]
        for memory in parts.memories
        if (chunk_id := str(memory.metadata.get("chunk_id"))) in stored
    }
    subtrees = subtree_summaries(
        tree, parts.memories, parts.memory_vectors, plan.chunk_paths, fan_out, known, set(stale)
    )
    texts = {path: before.readmes[path] for path in directories if path not in stale}
    groups: dict[str, list[ReadmeRequest]] = {}
    for path in stale:
        groups.setdefault(_top_level(path), []).append(
            ReadmeRequest(
                node=directories[path],
                child_dirs=list(directories[path].children),
                files=[
                    readme_file_entry(by_index[i], plan.chunk_paths[i])
                    for i in directories[path].chunk_indices
                ],
                subtree=subtrees[path],
            )
        )
    # The stale READMEs of each top-level subtree are one call (a Ray task under Ray).
    for requests, (composed, usage) in zip(
        groups.values(),
        fan_out(readmes_and_usage, [(requests, llm) for requests in groups.values()]),
        strict=True,
    ):
        add_usage(llm, usage)
        texts.update(zip((request.node.path for request in requests), composed, strict=True))
    return ReadmeSet(texts=texts, stale=stale)


def readmes_and_usage(
    requests: list[ReadmeRequest], llm: LLM | None
) -> tuple[list[str], dict[str, Any]]:
    """The readme role's texts for `requests` and the LLM usage they recorded (in a Ray task
    the LLM is a copy whose ledger would be lost; here taking and adding it back is a no-op)."""
    return readme_role.readmes(requests, llm), take_usage(llm).model_dump(mode="json")


def _top_level(path: str) -> str:
    """The top-level directory a tree path is in ("/" for the root)."""
    return "/" + path.strip("/").split("/", 1)[0] if path.strip("/") else "/"
