"""The role contract: what each LLM role takes and gives, whichever backend fills it.

A role is one typed call with pydantic models in and out. The pipeline and the query side call
roles only through an `LLMBackend`, so the embedded `offline` backend (`offline.py`: local
embeddings and classical algorithms) and an OpenAI-compatible one are interchangeable.

Roles of the backend (both backends fill every one):
- split: where an overlong section is cut into chunks (seed 000 §5.2);
- memorize: chunks -> memories (title, memory, tldr, keywords, context);
- organize: memories -> a directory tree (seed 000 §5.1 step 4, validated per §14);
- place: new memories -> leaves of an existing tree, or new directories (§5.3);
- readme / readmes: a directory's README (§3.2);
- navigator: the agent answering questions over one store (§6);
- answer: an answer from the evidence an agent gathered, with its sources and a confidence.

The session and research roles (classify, structure, analyze, integrate, plan, research) are
defined as typed requests and results in `session_roles.py` and `research_roles.py`; issues 12
(session mode) and 13 (research loop) add them to the backends.

Requests may carry what only the offline implementations use (chunk encodings, memory vectors);
an LLM backend reads the text fields and ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np
from pydantic import Field, InstanceOf

from memory_bank.config import MemorizeConfig, ResearchConfig, RetrievalConfig, TaxonomyConfig
from memory_bank.index.embedding import ChunkEncoding, TextEncoder
from memory_bank.llm.role_model import RoleModel
from memory_bank.llm.session_roles import (
    AnalyzeRequest,
    AnalyzeResult,
    ClassifyRequest,
    ClassifyResult,
    IntegrateRequest,
    IntegrateResult,
    PlanRequest,
    PlanResult,
    StructureRequest,
    StructureResult,
)
from memory_bank.schemas import ChatResult, Chunk, DirectoryNode, HistoryNote, MemorizedChunk
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.readme import NO_SUMMARY, ReadmeFileEntry, SubtreeSummary


class SplitSection(RoleModel):
    """A section longer than a chunk: its text as pieces between the boundaries a chunk may end
    at (paragraphs, sentences), with their token counts. A cut is the number of the piece it
    starts (1 .. len(pieces) - 1); `own_cuts` are the cuts the chunker makes by itself."""

    pieces: list[str]
    tokens: list[int]
    own_cuts: list[int]


class SplitRequest(RoleModel):
    """The overlong sections of one document (seed 000 §5.2: split points chosen for semantic
    completeness, topic boundaries, never mid-sentence)."""

    source: str
    sections: list[SplitSection]
    min_tokens: int = Field(ge=1)
    max_tokens: int = Field(ge=2)


class SplitResult(RoleModel):
    cuts: list[list[int]]  # per section, ascending piece numbers


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
    # Placements that failed validation and were replaced (by a re-prompt or the offline one).
    fallbacks: list[str] = Field(default_factory=list)


class ReadmeRequest(RoleModel):
    """One directory's README (seed 000 §3.2): its node, subdirectories and memory files, and
    what to say of its whole subtree (`taxonomy.readme.SubtreeSummary`), empty when the caller
    gives none."""

    node: DirectoryNode
    child_dirs: list[DirectoryNode]
    files: list[InstanceOf[ReadmeFileEntry]]
    subtree: InstanceOf[SubtreeSummary] = NO_SUMMARY


class ReadmeResult(RoleModel):
    text: str


class AnswerEvidence(RoleModel):
    """One memory file an agent read. The sentence texts and vectors (the chunk's own, from
    `.bank/sentences.parquet`) and the memory vector serve the offline, extractive answer."""

    path: str  # store-relative memory file
    text: str  # the memory text read
    chunk_id: str | None = None
    index: int | None = None  # memory index (orders equal scores, as the store does)
    vector: np.ndarray | None = None
    sentences: list[str] | None = None
    sentence_vectors: np.ndarray | None = None


class ClaimHistory(RoleModel):
    """What the Query Graph knows of a claim in the evidence (issue 12): `superseded` -- a
    later claim replaced it (the answer must not state it; `current_*` is what replaced it);
    `current` -- it replaced an earlier claim (the answer may state it, with the history);
    `bridge` -- a replaced claim about something the evidence names (`about`), in a memory not
    read: where the answer quotes a sentence naming it, `current_sentence` joins the answer."""

    kind: Literal["superseded", "current", "bridge"]
    chunk: int  # the evidence's `index` (or position) whose text states the claim
    sentence: str  # the claim's sentence in that evidence
    old_value: str
    new_value: str
    current_sentence: str = ""
    current_path: str | None = None  # the evidence path of the current claim, when a file
    current_chunk: int | None = None
    current_vector: np.ndarray | None = None  # offline: the current sentence's embedding
    note: HistoryNote
    about: list[str] = Field(default_factory=list)  # a bridge: name keys of what it is about


class AnswerRequest(RoleModel):
    """Answer synthesis from the evidence an agent gathered (seed 000 §6.1: also the forced
    answer after max_iterations). `claims`: the superseded and current claims of the evidence
    (from the Query Graph), so the answer states what is current."""

    question: str
    evidence: list[AnswerEvidence]
    query_vector: np.ndarray | None = None  # offline: the question's embedding
    system_prompt: str | None = None
    claims: list[ClaimHistory] = Field(default_factory=list)


class AnswerResult(RoleModel):
    answer: str
    sources: list[str]  # evidence paths the answer rests on, most important first
    confidence: float = Field(ge=0.0, le=1.0)
    found: bool = True  # False: the evidence does not answer the question
    notes: str = ""
    history: list[HistoryNote] = Field(default_factory=list)  # what the answer's claims replaced


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

    def split(self, request: SplitRequest) -> SplitResult:
        """The offline backend returns the chunker's own cuts (and the ingest does not ask)."""

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

    def answer(self, request: AnswerRequest) -> AnswerResult: ...

    # The session roles (session_roles.py; issue 12).
    def classify(self, request: ClassifyRequest) -> ClassifyResult: ...

    def structure(self, request: StructureRequest) -> StructureResult: ...

    def analyze(self, request: AnalyzeRequest) -> AnalyzeResult: ...

    def integrate(self, request: IntegrateRequest) -> IntegrateResult: ...

    def plan(self, request: PlanRequest) -> PlanResult: ...

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
