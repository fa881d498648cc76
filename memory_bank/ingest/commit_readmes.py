"""The README stage of a commit: every directory's README, composed anew only where its inputs
changed (and so in its ancestors, whose summaries are drawn from their subtrees)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_bank.config import TaxonomyConfig
from memory_bank.ingest.commit_change import Change
from memory_bank.ingest.commit_tree import TreePlan
from memory_bank.ingest.stages import compose_readmes, subtree_summaries
from memory_bank.ingest.tree_changes import readme_file_entry, readme_signatures
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
) -> ReadmeSet:
    """Every directory's README: `before`'s text where its inputs did not change, else the
    readme role, asking `llm` (a whole tree composed anew fans its subtrees out by
    `map_calls`)."""
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
    by_index = {memory.index: memory for memory in parts.memories}
    subtrees = subtree_summaries(tree, parts.memories, parts.memory_vectors, plan.chunk_paths)
    texts = {path: before.readmes[path] for path in directories if path not in stale}
    requests = [
        ReadmeRequest(
            node=directories[path],
            child_dirs=list(directories[path].children),
            files=[
                readme_file_entry(by_index[i], plan.chunk_paths[i])
                for i in directories[path].chunk_indices
            ],
            subtree=subtrees[path],
        )
        for path in stale
    ]
    for path, text in zip(stale, readme_role.readmes(requests, llm), strict=True):
        texts[path] = text
    return ReadmeSet(texts=texts, stale=stale)
