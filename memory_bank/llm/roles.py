"""The role contract: what each LLM role takes and gives, whichever backend fills it.

A role is one typed call with pydantic models in and out. The pipeline and the query side call
roles only through an `LLMBackend`, so the embedded `offline` backend (`offline.py`: local
embeddings and classical algorithms) and an OpenAI-compatible one are interchangeable.

Requests may carry what only the offline implementations use (chunk encodings, memory vectors);
an LLM backend reads the text fields and ignores them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, InstanceOf

from memory_bank.config import MemorizeConfig, ResearchConfig, RetrievalConfig, TaxonomyConfig
from memory_bank.index.embedding import ChunkEncoding, TextEncoder
from memory_bank.schemas import ChatResult, Chunk, DirectoryNode, MemorizedChunk
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.readme import ReadmeFileEntry


class RoleModel(BaseModel):
    """Base of role requests and results: strict fields; numpy arrays allowed."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class MemorizeRequest(RoleModel):
    """Chunks to turn into memories; memory indices start at `first_index`, in chunk order."""

    chunks: list[Chunk]
    first_index: int = Field(ge=0)
    config: MemorizeConfig = MemorizeConfig()
    # One per chunk, from the embedding stage: the offline memories are extracts chosen by
    # their sentence vectors.
    encodings: list[InstanceOf[ChunkEncoding]] | None = None


class MemorizeResult(RoleModel):
    memories: list[MemorizedChunk]


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
    items: list[
        InstanceOf[TaxonomyItem]
    ]  # every memory of the store after the add, row i = memory index i
    vectors: np.ndarray
    new_indices: list[int]
    config: TaxonomyConfig = TaxonomyConfig()


class PlaceResult(RoleModel):
    tree: DirectoryNode | None  # None: the tree cannot take them; plan it anew


class ReadmeRequest(RoleModel):
    """One directory's README (seed 000 §3.2): its node, subdirectories and memory files."""

    node: DirectoryNode
    child_dirs: list[DirectoryNode]
    files: list[InstanceOf[ReadmeFileEntry]]


class ReadmeResult(RoleModel):
    text: str


class Navigator(Protocol):
    """Answers questions about one opened store (seed 000 §6)."""

    def request(
        self, question: str, max_iterations: int | None = None, system_prompt: str | None = None
    ) -> ChatResult:
        """`system_prompt` adds instructions for a model; the offline agent has none to add."""


class Researcher(Protocol):
    """Answers multi-hop questions by iterative research over one opened store (seed 003)."""

    def research(self, question: str, max_iterations: int | None = None) -> ChatResult:
        """At most `max_iterations` rounds of plan -> search -> integrate -> reflect."""


class LLMBackend(Protocol):
    """Every role, filled by one backend (see the module docstring)."""

    name: str

    def memorize(self, request: MemorizeRequest) -> MemorizeResult: ...

    def organize(
        self, request: OrganizeRequest, map_groups: TaskMap = run_serially
    ) -> OrganizeResult:
        """`map_groups` runs independent per-group planning calls (Ray passes a task map)."""

    def place(self, request: PlaceRequest) -> PlaceResult: ...

    def readme(self, request: ReadmeRequest) -> ReadmeResult: ...

    def readmes(self, requests: Sequence[ReadmeRequest]) -> list[ReadmeResult]:
        """Several directories' READMEs, in request order (a backend may batch or overlap
        the calls)."""

    def navigator(
        self, tools: Any, search: Any, embedder: TextEncoder | None, config: RetrievalConfig
    ) -> Navigator:
        """The navigation agent over one store's tools (`query.tools.StoreTools`) and search
        (`index.hybrid.HybridSearch`)."""

    def researcher(
        self, search: Any, config: ResearchConfig, retrieval: RetrievalConfig
    ) -> Researcher:
        """The research loop over one store's search (`index.hybrid.HybridSearch`)."""


def readme_requests(
    node: DirectoryNode, files_by_directory: dict[str, Sequence[ReadmeFileEntry]]
) -> list[ReadmeRequest]:
    """One request per directory of `node`'s subtree, parents before children."""
    return [
        ReadmeRequest(
            node=directory,
            child_dirs=list(directory.children),
            files=list(files_by_directory.get(directory.path, [])),
        )
        for directory in node.iter_nodes()
    ]
