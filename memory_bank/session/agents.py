"""The five agents of a session (seed 001 §3.2): classify, structure, analyze, integrate and
plan, as the session engine calls them (`SessionAgents`), asked of the session's roles
(`agent_roles`: offline, or with a model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memory_bank.config import MemorizeConfig
from memory_bank.graph.analysis import Integration, NodeView, Relationship
from memory_bank.graph.contradictions import Contradiction
from memory_bank.index.embedding import Embedder
from memory_bank.llm.seam import LLM
from memory_bank.session import agent_roles
from memory_bank.session.roles import (
    AnalyzeRequest,
    ClassifyRequest,
    ConflictClaim,
    IntegrateRequest,
    NeighbourInfo,
    NodeInfo,
    NodeToMerge,
    PlanRequest,
    PlanResult,
    RelationshipFound,
    StructureRequest,
)
from memory_bank.session.topics import ClusterDraft


class SessionAgents(Protocol):
    """The five agents of a session (seed 001 §3.2)."""

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]: ...

    def structure(self, cluster: ClusterDraft) -> str: ...

    def analyze(
        self,
        new: NodeView,
        candidates: Sequence[NodeView],
        judge: Sequence[str],
        task_goal: str | None = None,
    ) -> list[Relationship]: ...

    def integrate(
        self,
        nodes: Sequence[NodeView],
        neighbours: dict[str, tuple[str, list[str]]],
        trigger: str,
        validation: str | None,
        contradictions: Sequence[Contradiction],
    ) -> Integration: ...

    def plan(self, request: PlanRequest) -> PlanResult: ...


class RoleAgents:
    """The five agents through the session's roles (`agent_roles`), offline or with a model."""

    def __init__(
        self,
        llm: LLM | None,
        embedder: Embedder,
        config: MemorizeConfig | None = None,
        window_tokens: int | None = None,
        window_ratio: float = 0.9,
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.config = config or MemorizeConfig()
        self.window_tokens = window_tokens
        self.window_ratio = window_ratio

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]:
        result = agent_roles.classify(
            ClassifyRequest(
                context=context,
                task_goal=task_goal,
                window_tokens=self.window_tokens,
                window_ratio=self.window_ratio,
                encoder=self.embedder,
                config=self.config,
            ),
            self.llm,
        )
        return [
            ClusterDraft(c.cluster_id, c.context, c.content, list(c.keywords))
            for c in result.clusters
            if c.content.strip()
        ]

    def structure(self, cluster: ClusterDraft) -> str:
        request = StructureRequest(
            content=cluster.content,
            context=cluster.context,
            keywords=cluster.keywords,
            encoder=self.embedder,
            config=self.config,
        )
        return agent_roles.structure(request, self.llm).summary or cluster.content

    def analyze(
        self,
        new: NodeView,
        candidates: Sequence[NodeView],
        judge: Sequence[str],
        task_goal: str | None = None,
    ) -> list[Relationship]:
        request = AnalyzeRequest(
            new_node=_info(new, with_id=False),
            candidates=[_info(c) for c in candidates],
            judge=list(judge),  # type: ignore[arg-type]
            views=[new, *candidates],
            task_goal=task_goal,
            encoder=self.embedder,
        )
        known = {c.id for c in candidates}
        return [
            relationship_of(found)
            for found in agent_roles.analyze(request, self.llm).relationships
            if found.existing_node_id in known
        ]

    def integrate(
        self,
        nodes: Sequence[NodeView],
        neighbours: dict[str, tuple[str, list[str]]],
        trigger: str,
        validation: str | None,
        contradictions: Sequence[Contradiction],
    ) -> Integration:
        members = [
            NodeToMerge(
                id=node.id,
                summary=node.summary,
                context=node.context,
                keywords=list(node.keywords),
                timestamp=node.timestamp,
                neighbours=[
                    NeighbourInfo(id=i, context=c, keywords=list(k))
                    for i, (c, k) in neighbours.items()
                ]
                if position == 0
                else [],
            )
            for position, node in enumerate(nodes)
        ]
        request = IntegrateRequest(
            nodes=members,
            trigger=trigger,  # type: ignore[arg-type]
            validation_result=validation,
            conflicts=[
                ConflictClaim(
                    subject=c.subject,
                    attribute=c.attribute,
                    old_value=c.old_value,
                    new_value=c.new_value,
                    old_sentence=c.old_sentence,
                    new_sentence=c.new_sentence,
                )
                for c in contradictions
            ],
            views=list(nodes),
        )
        result = agent_roles.integrate(request, self.llm)
        ids = {node.id for node in nodes}
        return Integration(
            summary=result.summary,
            context=result.context,
            keywords=list(result.keywords),
            neighbour_updates={
                i: (u.context, list(u.keywords))
                for i, u in result.neighbour_updates.items()
                if i in neighbours
            },
            description=result.interaction_tree_description,
            current=result.current_node_id if result.current_node_id in ids else None,
        )

    def plan(self, request: PlanRequest) -> PlanResult:
        return agent_roles.plan(request, self.llm)


def _info(view: NodeView, with_id: bool = True) -> NodeInfo:
    return NodeInfo(
        id=view.id if with_id else None,
        summary=view.summary,
        context=view.context,
        keywords=list(view.keywords),
        timestamp=view.timestamp,
    )


def relationship_of(found: RelationshipFound) -> Relationship:
    contradictions = []
    if found.relationship == "conflict" and found.old_value and found.new_value:
        contradictions.append(
            Contradiction(
                old_sentence=found.old_sentence or "",
                new_sentence=found.new_sentence or "",
                subject=found.subject or "",
                attribute=found.attribute or "",
                old_value=found.old_value,
                new_value=found.new_value,
                kind="",
            )
        )
    return Relationship(
        existing_node_id=found.existing_node_id,
        relationship=found.relationship,
        confidence=found.confidence,
        reasoning=found.conflict_description or found.reasoning,
        contradictions=contradictions,
        merge_strategy=found.merge_strategy,
        context_update_new=found.context_update_new,
        context_update_existing=found.context_update_existing,
        keywords_update_new=found.keywords_update_new,
        keywords_update_existing=found.keywords_update_existing,
    )
