"""What the taxonomy's roles take and give: organize (memories -> a directory tree,
`organize_role`), place (new memories -> the leaves of an existing tree, or new directories,
`place_role`) and readme (a directory's README, `readme_role`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import Field, InstanceOf

from memory_bank.config import TaxonomyConfig
from memory_bank.llm.seam import RoleModel
from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.readme import NO_SUMMARY, ReadmeFileEntry, SubtreeSummary


class OrganizeRequest(RoleModel):
    """Memories to organize into a directory tree rooted at "/" (seed 000 §5.1 step 4)."""

    items: list[InstanceOf[TaxonomyItem]]
    vectors: np.ndarray  # row i = items[i]
    config: TaxonomyConfig = TaxonomyConfig()


class OrganizeResult(RoleModel):
    tree: DirectoryNode
    # Plans that failed validation and were replaced (by a re-prompt or the flat fallback).
    fallbacks: list[str] = Field(default_factory=list)


class PlaceRequest(RoleModel):
    """New memories to put into an existing tree (seed 000 §5.3, incremental add)."""

    tree: DirectoryNode
    # every memory of the store after the add, row i = memory index i
    items: list[InstanceOf[TaxonomyItem]]
    vectors: np.ndarray
    new_indices: list[int]
    config: TaxonomyConfig = TaxonomyConfig()


class PlaceResult(RoleModel):
    tree: DirectoryNode | None  # None: the tree cannot take them; plan it anew
    # Placements that failed validation and were replaced (by a re-prompt or the offline one).
    fallbacks: list[str] = Field(default_factory=list)


class ReadmeRequest(RoleModel):
    """One directory's README (seed 000 §3.2): its node, subdirectories and memory files, and
    what to say of its whole subtree (`readme.SubtreeSummary`), empty when the caller gives
    none."""

    node: DirectoryNode
    child_dirs: list[DirectoryNode]
    files: list[InstanceOf[ReadmeFileEntry]]
    subtree: InstanceOf[SubtreeSummary] = NO_SUMMARY


def readme_requests(
    node: DirectoryNode,
    files_by_directory: Mapping[str, Sequence[ReadmeFileEntry]],
    subtrees: Mapping[str, SubtreeSummary] | None = None,
) -> list[ReadmeRequest]:
    """One request per directory of `node`'s subtree, parents before children."""
    subtrees = subtrees or {}
    return [
        ReadmeRequest(
            node=directory,
            child_dirs=list(directory.children),
            files=list(files_by_directory.get(directory.path, [])),
            subtree=subtrees.get(directory.path, NO_SUMMARY),
        )
        for directory in node.iter_nodes()
    ]
