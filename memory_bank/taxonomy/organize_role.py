"""The `organize` role: memories -> a directory tree rooted at "/" (seed 000 §5.1 step 4).

Offline: hierarchical clustering with names from the memories' terms (`planner`); a plan that
fails `validate_taxonomy` gives way to the flat fallback.

With a model: the model plans the tree from the memories' titles, summaries and keywords; a plan
that fails `validate_taxonomy` is sent back with the problems, up to `llm.organize_attempts`
plans, then the flat fallback (recorded). Above `taxonomy.coarse_threshold` memories no prompt
holds the whole store: the memories are split into the offline planner's top-level groups
(`planner.top_level_groups`), the model plans each group's subtree in its own request (through
`map_groups`, so on Ray the groups are planned by parallel tasks), each checked and re-prompted,
and a group whose plans stay invalid gets the offline plan of that group (recorded). The
subtrees are then grafted under one root.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import LLMError
from memory_bank.llm.seam import LLM, prompt
from memory_bank.schemas import DirectoryNode
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.planner import (
    assemble_tree,
    plan_group,
    plan_taxonomy,
    rebase,
    top_level_groups,
)
from memory_bank.taxonomy.roles import OrganizeRequest, OrganizeResult
from memory_bank.taxonomy.validate import flat_fallback, validate_taxonomy
from memory_bank.text.lexicon import sanitize_name

ROLE = "organize"


class _Leaf(BaseModel):
    path: str
    description: str = ""
    memories: list[int]


class _Parent(BaseModel):
    path: str
    description: str = ""


class OrganizeReply(BaseModel):
    leaves: list[_Leaf]
    parents: list[_Parent] = Field(default_factory=list)


def organize(
    request: OrganizeRequest, llm: LLM | None, map_groups: TaskMap = run_serially
) -> OrganizeResult:
    """The tree of `request`'s memories (see the module docstring); `map_groups` runs
    independent per-group planning (Ray passes a task map)."""
    if llm is not None:
        return _organize_with_model(request, llm, map_groups)
    tree = plan_taxonomy(request.items, request.vectors, request.config, map_groups)
    problems = validate_taxonomy(tree, len(request.items), request.config)
    if not problems:
        return OrganizeResult(tree=tree)
    indices = [item.index for item in request.items]
    return OrganizeResult(tree=flat_fallback(indices, request.config), fallbacks=problems)


def organize_payload(
    items: Sequence[TaxonomyItem], config: TaxonomyConfig, depth: int, single_top: bool = False
) -> dict:
    return {
        "bounds": {
            "max_depth": depth,
            "min_leaf": config.min_leaf,
            "target_leaf": config.target_leaf,
            "hard_max_leaf": config.hard_max_leaf,
            "single_top_directory": single_top,
        },
        "memories": [
            {
                "index": item.index,
                "title": item.title,
                "tldr": item.tldr,
                "keywords": list(item.keywords)[:6],
            }
            for item in items
        ],
    }


def plan_with_model(
    llm: LLM,
    items: Sequence[TaxonomyItem],
    config: TaxonomyConfig,
    attempts: int,
    single_top: bool = False,
) -> tuple[DirectoryNode | None, list[str]]:
    """The tree the model plans for `items` (rooted at "/", at most `max_depth` levels; with
    `single_top`, everything in one top directory), checked like any plan; (None, problems)
    when every reply failed."""
    indices = sorted(item.index for item in items)
    problems_seen: list[str] = []

    def check(reply: OrganizeReply) -> list[str]:
        try:
            tree = tree_from_leaves(reply)
        except ValueError as exc:
            problems = [str(exc)]
        else:
            problems = _subset_problems(tree, indices, config)
            if single_top and len(tree.children) != 1:
                problems.append(
                    f"expected one top directory holding every memory, got {len(tree.children)}"
                )
        problems_seen.extend(problems)
        return problems

    try:
        payload = organize_payload(items, config, config.max_depth, single_top)
        reply = llm.complete(
            ROLE, prompt(__package__, ROLE), payload, OrganizeReply, check=check, attempts=attempts
        )
    except LLMError as exc:
        return None, [*problems_seen, str(exc)]
    return tree_from_leaves(reply), problems_seen


def _organize_with_model(request: OrganizeRequest, llm: LLM, map_groups: TaskMap) -> OrganizeResult:
    config = request.config
    if len(request.items) > config.coarse_threshold and config.max_depth >= 2:
        return _organize_in_groups(llm, request, map_groups)
    tree, problems = plan_with_model(llm, request.items, config, llm.config.organize_attempts)
    if tree is None:
        llm.ledger.count(ROLE, "fallbacks")
        indices = [item.index for item in request.items]
        return OrganizeResult(
            tree=flat_fallback(indices, config), fallbacks=[*problems, "flat fallback"]
        )
    return OrganizeResult(tree=tree, fallbacks=problems)


def _organize_in_groups(llm: LLM, request: OrganizeRequest, map_groups: TaskMap) -> OrganizeResult:
    items, vectors, config = request.items, np.asarray(request.vectors), request.config
    # The offline planner's top-level split (documents kept whole). On Ray the LLM travels to a
    # task as its settings and the task's usage comes back with its result; in this process
    # the groups overlap like other requests (and their usage, taken and given back, stays).
    calls = [
        (llm, group_id, [items[row] for row in rows], vectors[rows], config)
        for group_id, rows in top_level_groups(items, vectors, config)
    ]
    if map_groups is run_serially:
        outcomes = llm.overlapped(lambda call: plan_group_with_model(*call), calls)
    else:
        outcomes = map_groups(plan_group_with_model, calls)
    fallbacks: list[str] = []
    for _, problems, usage in outcomes:
        fallbacks.extend(problems)
        llm.ledger.merge(usage)
    tree = assemble_tree([node for node, _, _ in outcomes], config)
    return OrganizeResult(tree=tree, fallbacks=fallbacks)


def plan_group_with_model(
    llm: LLM,
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
) -> tuple[DirectoryNode, list[str], dict[str, Any]]:
    """One coarse group's subtree, rooted at "/<name>", planned by the model (at most
    `max_depth - 1` levels below the group's directory, which the model names); the offline
    plan of the group when the model's plans stay invalid. Returns the subtree, the problems
    met and the usage recorded (taken from `llm`'s ledger: in a task, this call's)."""
    tree, problems = plan_with_model(
        llm, items, config, llm.config.organize_attempts, single_top=True
    )
    if tree is not None:
        node = tree.children[0]
    else:
        llm.ledger.count(ROLE, "fallbacks")
        node = plan_group(group_id, items, vectors, config).node
        problems = [*problems, f"group {group_id}: offline plan"]
    return rebase(node, node.path), problems, llm.ledger.take().model_dump(mode="json")


def _subset_problems(
    tree: DirectoryNode, indices: Sequence[int], config: TaxonomyConfig
) -> list[str]:
    """`validate_taxonomy` for a tree over some memories (not 0..n-1): indices renumbered."""
    number = {index: position for position, index in enumerate(indices)}
    unknown = sorted({i for leaf in tree.leaves() for i in leaf.chunk_indices if i not in number})
    if unknown:
        return [f"indices not in the input: {unknown[:10]}"]
    renumbered = tree.model_copy(deep=True)
    for node in renumbered.iter_nodes():
        node.chunk_indices = [number[i] for i in node.chunk_indices]
    return validate_taxonomy(renumbered, len(indices), config)


def tree_from_leaves(reply: OrganizeReply) -> DirectoryNode:
    """The tree a flat list of leaf paths describes (names made safe; ValueError on a path
    that is both a leaf and a parent)."""
    root = DirectoryNode(path="/", name="")
    nodes = {"/": root}
    descriptions = {clean_path(parent.path): parent.description for parent in reply.parents}
    for leaf in reply.leaves:
        path = clean_path(leaf.path)
        if path == "/":
            raise ValueError("a leaf cannot be the root")
        parent = root
        for depth, name in enumerate(path.strip("/").split("/"), start=1):
            current = "/" + "/".join(path.strip("/").split("/")[:depth])
            node = nodes.get(current)
            if node is None:
                node = DirectoryNode(
                    path=current, name=name, description=descriptions.get(current, "")
                )
                nodes[current] = node
                if parent.chunk_indices:
                    raise ValueError(f"{parent.path} is a leaf and also has subdirectories")
                parent.children.append(node)
            parent = node
        if parent.children:
            raise ValueError(f"{path} is a leaf and also has subdirectories")
        parent.description = leaf.description or parent.description
        parent.chunk_indices.extend(int(index) for index in leaf.memories)
    return root


def clean_path(path: str) -> str:
    names = [
        sanitize_name(part, fallback="topic") for part in path.strip().strip("/").split("/") if part
    ]
    return "/" + "/".join(names)
