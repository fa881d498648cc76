"""What the roles of the session mode take and give (the Agentic Memory Bank, seeds 001 and
002). The roles (`agent_roles`) are asked by the session's agents (`agents.RoleAgents`):
offline the classical implementations of `memory_bank.session` and `memory_bank.graph`, with a
model the model's replies, falling back to the offline role when they stay unusable.

Requests carry what only the offline implementations use (marked "offline"): the embedding
model, the nodes' texts and vectors; a model is sent the other fields.

- classify (seed 001 §3.2.1, 002 §7.1): a long context -> topic clusters, each with a one-line
  context, its own raw text and keywords; a context longer than the model's window is cut at
  paragraph boundaries into parts of `window_ratio` of the window, classified one by one.
- structure (001 §3.2.2, 002 §7.2): one cluster -> a structured summary (30-50% of its length,
  keeping evidence and logic); the node id, timestamp and embedding are added by code.
- analyze (001 §3.2.3, 002 §7.3): a new Query Graph node against candidate nodes -> one
  relationship per candidate, in two independent calls: first `["conflict", "merge"]`, then,
  only if neither was found, `["related"]` (priority conflict > merge > related).
- integrate (001 §3.2.4, 002 §7.4): nodes to merge (with their neighbours) and why (merge, or
  conflict plus the cross-validation result) -> the merged node, updated context/keywords for
  every inherited neighbour, and the description of the merge for the Interaction Tree.
- plan (001 §3.2.5, 002 §7.5): the Insight Doc, new nodes and any conflict -> the updated
  Insight Doc, with at most one pending task (incremental planning; a conflict puts a
  cross-validation task first; no pending task means the task is done).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from memory_bank.config import MemorizeConfig
from memory_bank.llm.seam import RoleModel

Relationship = Literal["conflict", "merge", "related", "unrelated"]
TaskType = Literal["normal", "cross_validate"]


class ClassifyRequest(RoleModel):
    context: str  # the long context to split by topic
    task_goal: str | None = None  # the user's question or task, to guide the split
    window_tokens: int | None = Field(None, ge=1)  # the model's window; None: no cutting
    window_ratio: float = Field(0.9, gt=0.0, le=1.0)  # share of the window one part may fill
    encoder: Any = None  # offline: the embedding model (paragraph vectors, extractive contexts)
    config: MemorizeConfig = MemorizeConfig()  # offline: the extractive summary's settings


class Cluster(RoleModel):
    cluster_id: str
    context: str  # one sentence naming the topic
    content: str  # the cluster's raw text, taken from the input
    keywords: list[str] = Field(default_factory=list)


class ClassifyResult(RoleModel):
    should_cluster: bool
    clusters: list[Cluster]


class StructureRequest(RoleModel):
    content: str
    context: str  # for reference
    keywords: list[str] = Field(default_factory=list)  # for reference
    encoder: Any = None  # offline: the embedding model
    config: MemorizeConfig = MemorizeConfig()  # offline


class StructureResult(RoleModel):
    summary: str  # structured (points, hierarchy), 30-50% of the content's length


class NodeInfo(RoleModel):
    """A Query Graph node as the agents see it (never its embedding)."""

    id: str | None = None  # None for the new node
    summary: str
    context: str
    keywords: list[str] = Field(default_factory=list)
    timestamp: float | None = None


class AnalyzeRequest(RoleModel):
    new_node: NodeInfo
    candidates: list[NodeInfo]
    # Which relationships this call judges: ["conflict", "merge"] first, ["related"] second.
    judge: list[Literal["conflict", "merge", "related"]]
    # offline: the nodes as `graph.analysis.NodeView`s (texts, vectors), the new one first
    views: list[Any] | None = None
    task_goal: str | None = None  # the session's question: it names the attribute in doubt
    encoder: Any = None  # offline: the embedding model (the goal and masked sentences)


class RelationshipFound(RoleModel):
    existing_node_id: str
    relationship: Relationship
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str
    conflict_description: str | None = None  # conflict
    # conflict: what differs, so the claim that is history can be told from the current one
    subject: str | None = None
    attribute: str | None = None
    old_value: str | None = None  # the earlier node's value (by timestamp)
    new_value: str | None = None
    old_sentence: str | None = None
    new_sentence: str | None = None
    merge_strategy: str | None = None  # merge
    context_update_new: str | None = None  # related: both nodes' context and keywords
    context_update_existing: str | None = None
    keywords_update_new: list[str] | None = None
    keywords_update_existing: list[str] | None = None


class AnalyzeResult(RoleModel):
    relationships: list[RelationshipFound]


class NeighbourInfo(RoleModel):
    id: str
    context: str
    keywords: list[str] = Field(default_factory=list)


class NodeToMerge(NodeInfo):
    neighbours: list[NeighbourInfo] = Field(default_factory=list)


class ConflictClaim(RoleModel):
    """One contradiction a conflict is about (the earlier and the later claim)."""

    subject: str = ""
    attribute: str = ""
    old_value: str = ""
    new_value: str = ""
    old_sentence: str = ""
    new_sentence: str = ""


class IntegrateRequest(RoleModel):
    nodes: list[NodeToMerge] = Field(min_length=2)
    trigger: Literal["merge", "conflict"]
    validation_result: str | None = None  # a conflict's cross-validation outcome
    conflicts: list[ConflictClaim] = Field(default_factory=list)  # a conflict's claims
    views: list[Any] | None = None  # offline: the nodes as `graph.analysis.NodeView`s


class NeighbourUpdate(RoleModel):
    context: str
    keywords: list[str] = Field(default_factory=list)


class IntegrateResult(RoleModel):
    summary: str
    context: str
    keywords: list[str] = Field(default_factory=list)
    neighbour_updates: dict[str, NeighbourUpdate] = Field(default_factory=dict)  # by node id
    interaction_tree_description: str
    current_node_id: str | None = None  # a conflict: the node whose claims the validation holds


class CompletedTask(RoleModel):
    type: TaskType
    description: str
    status: Literal["success", "failure"]
    context: str  # 1-2 sentences: what was found or concluded


class InsightDoc(RoleModel):
    doc_id: str
    task_goal: str
    completed_tasks: list[CompletedTask] = Field(default_factory=list)
    pending_tasks: list[str] = Field(default_factory=list, max_length=1)


class ConflictNotice(RoleModel):
    conflicting_node_ids: list[str]
    conflict_description: str


class PlanRequest(RoleModel):
    insight_doc: InsightDoc
    new_nodes: list[NodeInfo] = Field(default_factory=list)
    conflict: ConflictNotice | None = None
    intercepted: bool = False  # a task was just carried out (else: planning the first step)
    resolved_conflict: bool = False  # ... and it settled a conflict
    # offline: how much of the goal's content the memory retrieved for it holds, what it lacks
    goal_coverage: float = 0.0
    missing_terms: list[str] = Field(default_factory=list)


class PlanResult(RoleModel):
    task_goal: str
    completed_tasks: list[CompletedTask]
    pending_tasks: list[str] = Field(max_length=1)  # empty: the task is done
