"""The `place` role: new memories -> leaves of an existing tree, or new directories (seed 000
§5.3, incremental add).

Offline: each new memory descends to the closest directory (`placement.place_memories`).

With a model: for each new memory the model is shown the few leaves it is closest to (by the
cosine to the leaf's mean vector) with their descriptions and a few titles each, and chooses one
of them or a new directory; a choice that names no offered leaf, or a tree that then fails
validation, is sent back with the problems, and a reply that stays wrong gives the offline
placement (counted).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import LLMError, TaxonomyError
from memory_bank.llm.seam import LLM, prompt
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.organize_role import clean_path
from memory_bank.taxonomy.placement import closest_leaves, place_chosen, place_memories
from memory_bank.taxonomy.roles import PlaceRequest, PlaceResult
from memory_bank.taxonomy.validate import validate_taxonomy

ROLE = "place"
TITLES_PER_LEAF = 3  # titles shown for each candidate leaf


class _Placement(BaseModel):
    id: int
    directory: str  # an offered leaf path, or a new directory's path
    description: str = ""  # for a new directory


class PlaceReply(BaseModel):
    placements: list[_Placement]


def place(request: PlaceRequest, llm: LLM | None) -> PlaceResult:
    """`request.tree` with the new memories placed (its tree None: plan the tree anew)."""
    if llm is None or request.tree.is_leaf() or not request.new_indices:
        return _place_offline(request)
    return _place_with_model(request, llm)


def _place_offline(request: PlaceRequest) -> PlaceResult:
    tree = place_memories(
        request.tree, request.items, request.vectors, request.new_indices, request.config
    )
    return PlaceResult(tree=tree)


def _place_with_model(request: PlaceRequest, llm: LLM) -> PlaceResult:
    config, tree = request.config, request.tree
    vectors = np.asarray(request.vectors)
    offered = closest_leaves(tree, vectors, request.new_indices, llm.config.place_candidates)
    nodes = {node.path: node for node in tree.iter_nodes()}
    items = request.items
    choices: dict[int, str] = {}
    descriptions: dict[str, str] = {}
    problems_seen: list[str] = []
    size = llm.config.place_batch
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
            reply = llm.complete(ROLE, prompt(__package__, ROLE), payload, PlaceReply, check=check)
        except LLMError:
            return _fallback(request, llm, problems_seen)
        choices.update(_choices(reply))
        descriptions.update(_descriptions(reply))
    try:
        placed = place_chosen(tree, items, vectors, choices, config, descriptions)
    except TaxonomyError as exc:
        placed, problems_seen = None, [*problems_seen, str(exc)]
    if placed is None or validate_taxonomy(placed, len(items), config):
        return _fallback(request, llm, problems_seen)
    return PlaceResult(tree=placed, fallbacks=problems_seen)


def _fallback(request: PlaceRequest, llm: LLM, problems: list[str]) -> PlaceResult:
    llm.ledger.count(ROLE, "fallbacks")
    result = _place_offline(request)
    return result.model_copy(update={"fallbacks": [*problems, "offline placement"]})


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
