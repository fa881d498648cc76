"""The roles of the session mode: classify, structure, analyze, integrate and plan (typed in
`roles.py`, prompts in `prompts/`).

Offline each is a classical implementation: topic clusters and extractive summaries
(`topics`), contradiction rules, near-duplicates and similarity (`graph.analysis`), the Insight
Doc's planning (`planning`). With a model each asks the build model for the role's reply; a
reply that stays unusable after the client's repairs falls back to the offline role, counted as
a fallback. The offline-only fields of a request (the embedding model, the nodes' vectors) are
never sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from memory_bank.errors import LLMError
from memory_bank.graph.analysis import Integration, Relationship, analyze_offline, integrate_offline
from memory_bank.graph.contradictions import Contradiction
from memory_bank.llm.seam import LLM, prompt
from memory_bank.session.goal_conflicts import goal_conflicts
from memory_bank.session.planning import plan_offline
from memory_bank.session.roles import (
    AnalyzeRequest,
    AnalyzeResult,
    ClassifyRequest,
    ClassifyResult,
    Cluster,
    ConflictClaim,
    IntegrateRequest,
    IntegrateResult,
    NeighbourUpdate,
    PlanRequest,
    PlanResult,
    RelationshipFound,
    StructureRequest,
    StructureResult,
)
from memory_bank.session.topics import classify_offline, structure_offline

R = TypeVar("R", bound=BaseModel)
_OFFLINE_FIELDS = {"encoder", "config", "views", "goal_coverage", "missing_terms"}


def _payload(request: Any) -> dict[str, Any]:
    return request.model_dump(
        mode="json", exclude=_OFFLINE_FIELDS & set(type(request).model_fields)
    )


def classify(request: ClassifyRequest, llm: LLM | None) -> ClassifyResult:
    def check(reply: ClassifyResult) -> list[str]:
        return (
            ["no cluster has content"] if not any(c.content.strip() for c in reply.clusters) else []
        )

    return _ask(llm, "classify", request, ClassifyResult, check, _classify_offline)


def structure(request: StructureRequest, llm: LLM | None) -> StructureResult:
    def check(reply: StructureResult) -> list[str]:
        return ["the summary is empty"] if not reply.summary.strip() else []

    return _ask(llm, "structure", request, StructureResult, check, _structure_offline)


def analyze(request: AnalyzeRequest, llm: LLM | None) -> AnalyzeResult:
    known = {c.id for c in request.candidates}
    allowed = set(request.judge) | {"unrelated"}

    def check(reply: AnalyzeResult) -> list[str]:
        problems = [
            f"{r.existing_node_id!r} is not a candidate id"
            for r in reply.relationships
            if r.existing_node_id not in known
        ]
        problems += [
            f"{r.relationship!r} was not asked for (judge: {request.judge})"
            for r in reply.relationships
            if r.relationship not in allowed
        ]
        return problems

    return _ask(llm, "analyze", request, AnalyzeResult, check, _analyze_offline)


def integrate(request: IntegrateRequest, llm: LLM | None) -> IntegrateResult:
    ids = {node.id for node in request.nodes}

    def check(reply: IntegrateResult) -> list[str]:
        problems = ["the summary is empty"] if not reply.summary.strip() else []
        if request.trigger == "conflict" and reply.current_node_id not in ids:
            problems.append(f"current_node_id must be one of {sorted(ids)}")
        return problems

    return _ask(llm, "integrate", request, IntegrateResult, check, _integrate_offline)


def plan(request: PlanRequest, llm: LLM | None) -> PlanResult:
    def check(reply: PlanResult) -> list[str]:
        if request.conflict is not None and not reply.pending_tasks:
            return ["a conflict needs a cross-validation task pending"]
        return []

    return _ask(llm, "plan", request, PlanResult, check, plan_offline)


def _ask(
    llm: LLM | None,
    role: str,
    request: Any,
    reply: type[R],
    check: Callable[[R], list[str]],
    offline: Callable[[Any], R],
) -> R:
    """The model's reply to `request` for `role`, else (offline, or its replies stay
    unusable) the offline role's."""
    if llm is None:
        return offline(request)
    try:
        return llm.complete(role, prompt(__package__, role), _payload(request), reply, check=check)
    except LLMError:
        llm.ledger.count(role, "fallbacks")
        return offline(request)


# --- offline: the classical implementations, as roles ---


def _classify_offline(request: ClassifyRequest) -> ClassifyResult:
    if request.encoder is None:
        raise LLMError("the offline classify role needs the embedding model (request.encoder)")
    drafts = classify_offline(
        request.context,
        request.encoder,
        request.window_tokens,
        request.window_ratio,
        request.config,
    )
    clusters = [
        Cluster(cluster_id=d.cluster_id, context=d.context, content=d.content, keywords=d.keywords)
        for d in drafts
    ]
    return ClassifyResult(should_cluster=len(clusters) > 1, clusters=clusters)


def _structure_offline(request: StructureRequest) -> StructureResult:
    if request.encoder is None:
        raise LLMError("the offline structure role needs the embedding model (request.encoder)")
    return StructureResult(
        summary=structure_offline(request.content, request.encoder, request.config)
    )


def _analyze_offline(request: AnalyzeRequest) -> AnalyzeResult:
    if not request.views or len(request.views) != len(request.candidates) + 1:
        raise LLMError("the offline analyze role needs the nodes' views (new node first)")
    # The session's contexts come from sources none of which is known to replace another: two
    # that differ in one span are a conflict to cross-validate.
    new, candidates = request.views[0], request.views[1:]
    found = analyze_offline(new, candidates, request.judge, one_span=True)
    if "conflict" in request.judge and request.task_goal and request.encoder is not None:
        # The goal names the attribute: what the rules let pass may conflict for it, and where
        # both contexts answer it, their answers say which values conflict (the rules compare
        # sentences without the goal and may pair another attribute's).
        by_goal = goal_conflicts(request.task_goal, new, candidates, request.encoder.encode)
        if by_goal:
            merged = {r.existing_node_id for r in by_goal}
            found = [r for r in found if r.existing_node_id not in merged] + by_goal
    return AnalyzeResult(relationships=[relationship_found(r) for r in found])


def _integrate_offline(request: IntegrateRequest) -> IntegrateResult:
    if not request.views or len(request.views) != len(request.nodes):
        raise LLMError("the offline integrate role needs the nodes' views")
    neighbours = {
        n.id: (n.context, list(n.keywords)) for node in request.nodes for n in node.neighbours
    }
    contradictions = [contradiction_of(c) for c in request.conflicts]
    result = integrate_offline(
        request.views, neighbours, request.trigger, request.validation_result, contradictions
    )
    return integration_result(result)


def relationship_found(relationship: Relationship) -> RelationshipFound:
    first = relationship.contradictions[0] if relationship.contradictions else None
    return RelationshipFound(
        existing_node_id=relationship.existing_node_id,
        relationship=relationship.relationship,  # type: ignore[arg-type]
        confidence=min(max(relationship.confidence, 0.0), 1.0),
        reasoning=relationship.reasoning,
        conflict_description=relationship.conflict_description,
        merge_strategy=relationship.merge_strategy,
        context_update_new=relationship.context_update_new,
        context_update_existing=relationship.context_update_existing,
        keywords_update_new=relationship.keywords_update_new,
        keywords_update_existing=relationship.keywords_update_existing,
        subject=first.subject if first else None,
        attribute=first.attribute if first else None,
        old_value=first.old_value if first else None,
        new_value=first.new_value if first else None,
        old_sentence=first.old_sentence if first else None,
        new_sentence=first.new_sentence if first else None,
    )


def contradiction_of(claim: ConflictClaim) -> Contradiction:
    return Contradiction(
        old_sentence=claim.old_sentence,
        new_sentence=claim.new_sentence,
        subject=claim.subject,
        attribute=claim.attribute,
        old_value=claim.old_value,
        new_value=claim.new_value,
        kind="",
    )


def integration_result(integration: Integration) -> IntegrateResult:
    return IntegrateResult(
        summary=integration.summary,
        context=integration.context,
        keywords=integration.keywords,
        neighbour_updates={
            node_id: NeighbourUpdate(context=context, keywords=keywords)
            for node_id, (context, keywords) in integration.neighbour_updates.items()
        },
        interaction_tree_description=integration.description,
        current_node_id=integration.current,
    )
