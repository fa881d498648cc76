"""The taxonomy roles through an OpenAI-compatible endpoint: organize and place.

organize: the model plans the tree from the memories' titles, summaries and keywords; a plan
that fails `validate_taxonomy` is sent back with the problems, up to `organize_attempts` plans,
then the flat fallback (recorded). Above `taxonomy.coarse_threshold` memories no prompt holds the
whole store: the memories are split into coarse groups by the offline clustering (as the offline
planner does), the model plans each group's subtree in its own request (through `map_groups`,
so on Ray the groups are planned by parallel tasks), each checked and re-prompted, and a group
whose plans stay invalid gets the offline plan of that group (recorded). The subtrees are then
grafted under one root.

place: for each new memory the model is shown the few leaves it is closest to (by the cosine to
the leaf's mean vector) with their descriptions and a few titles each, and chooses one of them or
a new directory; a choice that names no offered leaf, or a tree that then fails validation, is
sent back with the problems, and a reply that stays wrong gives the offline placement (counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import LLMError, TaxonomyError
from memory_bank.llm.roles import OrganizeRequest, OrganizeResult, PlaceRequest, PlaceResult
from memory_bank.schemas import DirectoryNode
from memory_bank.store.files import sanitize_name
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import (
    TaxonomyItem,
    assemble_tree,
    assign_coarse,
    fit_coarse,
    flat_fallback,
    merge_small_groups,
    plan_group,
    sample_rows,
    validate_taxonomy,
)
from memory_bank.taxonomy.placement import closest_leaves, place_chosen
from memory_bank.taxonomy.planner import rebase

Ask = Callable[
    ..., Any
]  # the backend's structured call: ask(role, payload, model, check, attempts)
TITLES_PER_LEAF = 3  # titles shown for each candidate leaf


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


class _Placement(BaseModel):
    id: int
    directory: str  # an offered leaf path, or a new directory's path
    description: str = ""  # for a new directory


class PlaceReply(BaseModel):
    placements: list[_Placement]


# --- organize -----------------------------------------------------------------------------------


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
    ask: Ask,
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
        reply = ask("organize", payload, OrganizeReply, check, attempts)
    except LLMError as exc:
        return None, [*problems_seen, str(exc)]
    return tree_from_leaves(reply), problems_seen


def organize_with_model(
    backend: Any, request: OrganizeRequest, map_groups: TaskMap
) -> OrganizeResult:
    """The organize role of `backend` (an `OpenAIBackend`); see the module docstring."""
    config = request.config
    attempts = backend.config.organize_attempts
    if len(request.items) > config.coarse_threshold and config.max_depth >= 2:
        return _organize_in_groups(backend, request, map_groups)
    tree, problems = plan_with_model(backend.ask, request.items, config, attempts)
    if tree is None:
        backend.ledger.count("organize", "fallbacks")
        indices = [item.index for item in request.items]
        return OrganizeResult(
            tree=flat_fallback(indices, config), fallbacks=[*problems, "flat fallback"]
        )
    return OrganizeResult(tree=tree, fallbacks=problems)


def _organize_in_groups(
    backend: Any, request: OrganizeRequest, map_groups: TaskMap
) -> OrganizeResult:
    items, vectors, config = request.items, np.asarray(request.vectors), request.config
    model = fit_coarse(vectors[sample_rows(len(items), config)], len(items), config)
    labels = assign_coarse(model, vectors)
    merged = merge_small_groups(
        model, np.bincount(labels, minlength=model.size), len(items), config
    )
    if merged.size != model.size:
        labels = assign_coarse(merged, vectors)
    order = np.argsort(labels, kind="stable")
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    # Each group gets a backend of its own (its ledger comes back with the result): on Ray it
    # travels to a task as its settings; in this process the groups overlap like other requests.
    calls = [
        (backend.fresh(), int(labels[rows[0]]), [items[row] for row in rows], vectors[rows], config)
        for rows in np.split(order, boundaries)
    ]
    if map_groups is run_serially:
        outcomes = backend.overlapped(lambda call: plan_group_with_model(*call), calls)
    else:
        outcomes = map_groups(plan_group_with_model, calls)
    fallbacks: list[str] = []
    for _, problems, usage in outcomes:
        fallbacks.extend(problems)
        backend.ledger.merge(usage)
    tree = assemble_tree([node for node, _, _ in outcomes], config)
    return OrganizeResult(tree=tree, fallbacks=fallbacks)


def plan_group_with_model(
    backend: Any,
    group_id: int,
    items: Sequence[TaxonomyItem],
    vectors: np.ndarray,
    config: TaxonomyConfig,
) -> tuple[DirectoryNode, list[str], dict[str, Any]]:
    """One coarse group's subtree, rooted at "/<name>", planned by the model (at most
    `max_depth - 1` levels below the group's directory, which the model names); the offline
    plan of the group when the model's plans stay invalid. Returns the subtree, the problems
    met and the usage of this call (`backend` is the group's own)."""
    tree, problems = plan_with_model(
        backend.ask, items, config, backend.config.organize_attempts, single_top=True
    )
    if tree is not None:
        node = tree.children[0]
    else:
        backend.ledger.count("organize", "fallbacks")
        node = plan_group(group_id, items, vectors, config).node
        problems = [*problems, f"group {group_id}: offline plan"]
    return rebase(node, node.path), problems, backend.ledger.take().model_dump(mode="json")


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


# --- place --------------------------------------------------------------------------------------


def place_with_model(backend: Any, request: PlaceRequest) -> PlaceResult:
    """The place role of `backend` (an `OpenAIBackend`); see the module docstring."""
    config, tree = request.config, request.tree
    if tree.is_leaf() or not request.new_indices:
        return backend.offline.place(request)
    vectors = np.asarray(request.vectors)
    offered = closest_leaves(tree, vectors, request.new_indices, backend.config.place_candidates)
    nodes = {node.path: node for node in tree.iter_nodes()}
    items = request.items
    choices: dict[int, str] = {}
    descriptions: dict[str, str] = {}
    problems_seen: list[str] = []
    size = backend.config.place_batch
    for start in range(0, len(request.new_indices), size):
        batch = [int(i) for i in request.new_indices[start : start + size]]
        payload = {
            "max_depth": config.max_depth,
            "existing_top_directories": [child.name for child in tree.children],
            "memories": [
                {
                    "id": index,
                    "title": items[index].title,
                    "tldr": items[index].tldr,
                    "keywords": list(items[index].keywords)[:6],
                    "candidates": [
                        {
                            "directory": path,
                            "description": nodes[path].description,
                            "similarity": round(cosine, 3),
                            "titles": [
                                items[i].title for i in nodes[path].chunk_indices[:TITLES_PER_LEAF]
                            ],
                        }
                        for path, cosine in offered[index]
                    ],
                }
                for index in batch
            ],
        }

        def check(reply: PlaceReply, batch: list[int] = batch) -> list[str]:
            problems = _placement_problems(reply, batch, offered, nodes, config)
            if not problems:
                chosen = {**choices, **_choices(reply)}
                placed = place_chosen(
                    tree, items, vectors, chosen, config, {**descriptions, **_descriptions(reply)}
                )
                if placed is None:
                    problems = ["a new directory cannot be made there (its parent holds memories)"]
                else:
                    problems = validate_taxonomy(placed, len(items), config)
            problems_seen.extend(problems)
            return problems

        try:
            reply = backend.ask("place", payload, PlaceReply, check)
        except LLMError:
            backend.ledger.count("place", "fallbacks")
            result = backend.offline.place(request)
            return result.model_copy(update={"fallbacks": [*problems_seen, "offline placement"]})
        choices.update(_choices(reply))
        descriptions.update(_descriptions(reply))
    try:
        placed = place_chosen(tree, items, vectors, choices, config, descriptions)
    except TaxonomyError as exc:
        placed, problems_seen = None, [*problems_seen, str(exc)]
    if placed is None or validate_taxonomy(placed, len(items), config):
        backend.ledger.count("place", "fallbacks")
        result = backend.offline.place(request)
        return result.model_copy(update={"fallbacks": [*problems_seen, "offline placement"]})
    return PlaceResult(tree=placed, fallbacks=problems_seen)


def _choices(reply: PlaceReply) -> dict[int, str]:
    return {placement.id: clean_path(placement.directory) for placement in reply.placements}


def _descriptions(reply: PlaceReply) -> dict[str, str]:
    return {
        clean_path(placement.directory): placement.description
        for placement in reply.placements
        if placement.description
    }


def _placement_problems(
    reply: PlaceReply,
    batch: list[int],
    offered: dict[int, list[tuple[str, float]]],
    nodes: dict[str, DirectoryNode],
    config: TaxonomyConfig,
) -> list[str]:
    got = sorted(placement.id for placement in reply.placements)
    if got != sorted(batch):
        return [f"expected one placement per memory id {sorted(batch)}, got {got}"]
    problems = []
    for placement in reply.placements:
        path = clean_path(placement.directory)
        candidates = [candidate for candidate, _ in offered[placement.id]]
        if path in nodes and path not in candidates:
            problems.append(
                f"memory {placement.id}: {path} is not one of its candidates {candidates}"
            )
        elif path not in nodes:
            parent = path.rsplit("/", 1)[0] or "/"
            if path.count("/") > config.max_depth:
                problems.append(f"memory {placement.id}: {path} is deeper than {config.max_depth}")
            elif parent not in nodes or nodes[parent].chunk_indices:
                problems.append(
                    f"memory {placement.id}: a new directory {path} needs an existing parent "
                    "directory without memories of its own (the root, or a parent directory)"
                )
    return problems
