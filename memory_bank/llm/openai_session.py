"""The session roles through an OpenAI-compatible endpoint: classify, structure, analyze,
integrate and plan (prompts in `prompts/`). Each asks the build model for the role's result
model; a reply that stays unusable after the client's repairs falls back to the offline role,
counted as a fallback. The offline-only fields of a request (the embedding model, the nodes'
vectors) are never sent.
"""

from __future__ import annotations

from typing import Any

from memory_bank.errors import LLMError
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

_OFFLINE_FIELDS = {"encoder", "config", "views", "goal_coverage", "missing_terms"}


def _payload(request: Any) -> dict[str, Any]:
    return request.model_dump(
        mode="json", exclude=_OFFLINE_FIELDS & set(type(request).model_fields)
    )


def classify(backend: Any, request: ClassifyRequest) -> ClassifyResult:
    def check(reply: ClassifyResult) -> list[str]:
        return (
            ["no cluster has content"] if not any(c.content.strip() for c in reply.clusters) else []
        )

    return _ask(backend, "classify", request, ClassifyResult, check, backend.offline.classify)


def structure(backend: Any, request: StructureRequest) -> StructureResult:
    def check(reply: StructureResult) -> list[str]:
        return ["the summary is empty"] if not reply.summary.strip() else []

    return _ask(backend, "structure", request, StructureResult, check, backend.offline.structure)


def analyze(backend: Any, request: AnalyzeRequest) -> AnalyzeResult:
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

    return _ask(backend, "analyze", request, AnalyzeResult, check, backend.offline.analyze)


def integrate(backend: Any, request: IntegrateRequest) -> IntegrateResult:
    ids = {node.id for node in request.nodes}

    def check(reply: IntegrateResult) -> list[str]:
        problems = ["the summary is empty"] if not reply.summary.strip() else []
        if request.trigger == "conflict" and reply.current_node_id not in ids:
            problems.append(f"current_node_id must be one of {sorted(ids)}")
        return problems

    return _ask(backend, "integrate", request, IntegrateResult, check, backend.offline.integrate)


def plan(backend: Any, request: PlanRequest) -> PlanResult:
    def check(reply: PlanResult) -> list[str]:
        if request.conflict is not None and not reply.pending_tasks:
            return ["a conflict needs a cross-validation task pending"]
        return []

    return _ask(backend, "plan", request, PlanResult, check, backend.offline.plan)


def _ask(backend: Any, role: str, request: Any, result: type, check: Any, fallback: Any) -> Any:
    try:
        return backend.ask(role, _payload(request), result, check)
    except LLMError:
        backend.ledger.count(role, "fallbacks")
        return fallback(request)
