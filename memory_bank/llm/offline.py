"""The embedded `offline` backend: every role without a network or a language model.

split: the chunker's own cuts (`text.chunking`; the ingest does not even ask); memorize:
extractive memories (MMR over sentence vectors, `memorize.extractive`); organize:
hierarchical clustering with terms-based names (`taxonomy`); place: descent to the closest
directory (`taxonomy.placement`); readme: the extractive summary of the subtree
(`taxonomy.summary`) and the children (`taxonomy.readme`); navigate: retrieval-guided tree
descent (`query.navigation`); answer: the extractive answer (`query.answering`); research: names
read in retrieved text as bridges, residual terms and coverage tests (`research.agent`). The
session roles: classify (paragraph clusters by embedding), structure (the extractive memory),
analyze and integrate (`graph.analysis`: contradiction rules, near-duplicates, similarity), plan
(`session.planning`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_bank.config import ResearchConfig, RetrievalConfig
from memory_bank.errors import LLMError
from memory_bank.index.embedding import TextEncoder
from memory_bank.llm.roles import (
    AnswerRequest,
    AnswerResult,
    MemorizeRequest,
    MemorizeResult,
    Navigator,
    OrganizeRequest,
    OrganizeResult,
    PlaceRequest,
    PlaceResult,
    ReadmeRequest,
    ReadmeResult,
    Researcher,
    SplitRequest,
    SplitResult,
)
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
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import flat_fallback, plan_taxonomy, validate_taxonomy
from memory_bank.taxonomy.placement import place_memories
from memory_bank.taxonomy.readme import compose_readme


class OfflineBackend:
    name = "offline"

    def split(self, request: SplitRequest) -> SplitResult:
        return SplitResult(cuts=[list(section.own_cuts) for section in request.sections])

    def memorize(self, request: MemorizeRequest) -> MemorizeResult:
        if request.encodings is None or len(request.encodings) != len(request.chunks):
            raise LLMError("the offline memorize role needs one chunk encoding per chunk")
        memories = [
            memorize_offline(chunk, encoding, request.first_index + offset, request.config)
            for offset, (chunk, encoding) in enumerate(
                zip(request.chunks, request.encodings, strict=True)
            )
        ]
        return MemorizeResult(memories=memories)

    def organize(
        self, request: OrganizeRequest, map_groups: TaskMap = run_serially
    ) -> OrganizeResult:
        tree = plan_taxonomy(request.items, request.vectors, request.config, map_groups)
        problems = validate_taxonomy(tree, len(request.items), request.config)
        if not problems:
            return OrganizeResult(tree=tree)
        indices = [item.index for item in request.items]
        return OrganizeResult(tree=flat_fallback(indices, request.config), fallbacks=problems)

    def place(self, request: PlaceRequest) -> PlaceResult:
        tree = place_memories(
            request.tree, request.items, request.vectors, request.new_indices, request.config
        )
        return PlaceResult(tree=tree)

    def readme(self, request: ReadmeRequest) -> ReadmeResult:
        text = compose_readme(
            request.node,
            request.child_dirs,
            request.files,
            subtree=request.subtree,
        )
        return ReadmeResult(text=text)

    def readmes(self, requests: Sequence[ReadmeRequest]) -> list[ReadmeResult]:
        return [self.readme(request) for request in requests]

    def answer(self, request: AnswerRequest) -> AnswerResult:
        from memory_bank.query.answering import extractive_answer

        return extractive_answer(request)

    # --- the session roles (memory_bank.session: the agents of the Memory Bank) ------------

    def classify(self, request: ClassifyRequest) -> ClassifyResult:
        from memory_bank.session.agents import classify_role

        return classify_role(request)

    def structure(self, request: StructureRequest) -> StructureResult:
        from memory_bank.session.agents import structure_role

        return structure_role(request)

    def analyze(self, request: AnalyzeRequest) -> AnalyzeResult:
        from memory_bank.session.agents import analyze_role

        return analyze_role(request)

    def integrate(self, request: IntegrateRequest) -> IntegrateResult:
        from memory_bank.session.agents import integrate_role

        return integrate_role(request)

    def plan(self, request: PlanRequest) -> PlanResult:
        from memory_bank.session.planning import plan_offline

        return plan_offline(request)

    def navigator(
        self, tools: Any, search: Any, embedder: TextEncoder | None, config: RetrievalConfig
    ) -> Navigator:
        from memory_bank.query.navigation import NavigationAgent

        return NavigationAgent(tools, search, embedder, config)

    def researcher(
        self, search: Any, config: ResearchConfig, retrieval: RetrievalConfig
    ) -> Researcher:
        from memory_bank.research.agent import ResearchAgent

        return ResearchAgent(search, config, retrieval)
