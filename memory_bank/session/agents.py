"""The offline classification and structure agents of the session mode (seed 001 §3.2.1-3.2.2).

- classify: a context is cut at paragraph boundaries into parts of at most `window_ratio` of
  the window (when a window is given), and each part's paragraphs are grouped by topic: a
  paragraph joins the most similar cluster so far when its cosine to that cluster's centroid
  reaches CLUSTER_COSINE, else it opens a new cluster. A cluster keeps its paragraphs' text
  (its content), a one-sentence context (the extractive TL;DR) and key terms.
- structure: the extractive memory of the cluster's content (`memorize_offline`: MMR over
  sentence vectors keeping numbers and names), 30-50% of a long content, short content whole.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from memory_bank.config import MemorizeConfig
from memory_bank.errors import LLMError
from memory_bank.graph.analysis import (
    Integration,
    NodeView,
    Relationship,
    analyze_offline,
    integrate_offline,
)
from memory_bank.graph.contradictions import Contradiction
from memory_bank.index.embedding import Embedder
from memory_bank.llm.session_roles import (
    AnalyzeRequest,
    AnalyzeResult,
    ClassifyRequest,
    ClassifyResult,
    Cluster,
    ConflictClaim,
    IntegrateRequest,
    IntegrateResult,
    NeighbourInfo,
    NeighbourUpdate,
    NodeInfo,
    NodeToMerge,
    RelationshipFound,
    StructureRequest,
    StructureResult,
)
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.memorize.keyterms import extract_keywords
from memory_bank.schemas import Chunk
from memory_bank.session.models import PlanRequest, PlanResult
from memory_bank.session.planning import plan_offline
from memory_bank.text.sentences import split_sentences
from memory_bank.text.tokens import count_tokens

CLUSTER_COSINE = 0.45
MAX_PARAGRAPH_TOKENS = 400  # a longer paragraph is cut into sentence groups first
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclass
class ClusterDraft:
    cluster_id: str
    context: str
    content: str
    keywords: list[str]


def split_for_window(text: str, window_tokens: int | None, ratio: float) -> list[str]:
    """Seed 002 §6.5: parts of at most ratio * window tokens, cut at paragraph boundaries."""
    if window_tokens is None or count_tokens(text) <= window_tokens:
        return [text]
    budget = max(int(window_tokens * ratio), 1)
    parts: list[str] = []
    current: list[str] = []
    used = 0
    for paragraph in _paragraphs(text):
        size = count_tokens(paragraph)
        if current and used + size > budget:
            parts.append("\n\n".join(current))
            current, used = [], 0
        current.append(paragraph)
        used += size
    if current:
        parts.append("\n\n".join(current))
    return parts


def classify_offline(
    context: str,
    embedder: Embedder,
    window_tokens: int | None = None,
    window_ratio: float = 0.9,
    config: MemorizeConfig | None = None,
) -> list[ClusterDraft]:
    """Topic clusters of `context` (see the module docstring); [] for blank text."""
    clusters: list[ClusterDraft] = []
    for part in split_for_window(context, window_tokens, window_ratio):
        paragraphs = _paragraphs(part)
        if not paragraphs:
            continue
        vectors = embedder.encode(paragraphs)
        groups: list[list[int]] = []
        centroids: list[np.ndarray] = []
        for position, vector in enumerate(vectors):
            scores = [float(vector @ c / max(np.linalg.norm(c), 1e-9)) for c in centroids]
            best = int(np.argmax(scores)) if scores else -1
            if best >= 0 and scores[best] >= CLUSTER_COSINE:
                groups[best].append(position)
                centroids[best] = centroids[best] + vector
            else:
                groups.append([position])
                centroids.append(vector.copy())
        for group in groups:
            content = "\n\n".join(paragraphs[i] for i in group)
            draft = _describe(content, embedder, config or MemorizeConfig())
            clusters.append(draft)
    return clusters


def structure_offline(
    content: str, embedder: Embedder, config: MemorizeConfig | None = None
) -> str:
    """The structured summary of one cluster: its extractive memory."""
    return _memorize(content, embedder, config or MemorizeConfig()).memory


def _describe(content: str, embedder: Embedder, config: MemorizeConfig) -> ClusterDraft:
    memory = _memorize(content, embedder, config)
    keywords = memory.keywords or extract_keywords(content, None, config.max_keywords)
    return ClusterDraft(
        cluster_id="k-" + hashlib.sha256(content.encode("utf-8")).hexdigest()[:12],
        context=memory.tldr,
        content=content,
        keywords=list(keywords),
    )


def _memorize(content: str, embedder: Embedder, config: MemorizeConfig):
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]
    chunk = Chunk(
        chunk_id=f"{digest}-00000",
        document_id=digest,
        source="<session>",
        position=0,
        text=content,
        token_count=count_tokens(content),
        start_char=0,
        end_char=len(content),
    )
    encoding = embedder.encode_chunks([content])[0]
    return memorize_offline(chunk, encoding, 0, config)


def _paragraphs(text: str) -> list[str]:
    """Paragraphs of `text`; an overlong one is cut into groups of whole sentences."""
    found: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if count_tokens(paragraph) <= MAX_PARAGRAPH_TOKENS:
            found.append(paragraph)
            continue
        group: list[str] = []
        used = 0
        for sentence in split_sentences(paragraph):
            size = count_tokens(sentence)
            if group and used + size > MAX_PARAGRAPH_TOKENS:
                found.append(" ".join(group))
                group, used = [], 0
            group.append(sentence)
            used += size
        if group:
            found.append(" ".join(group))
    return found


class SessionAgents(Protocol):
    """The five agents of a session (seed 001 §3.2), whichever backend fills them."""

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]: ...

    def structure(self, cluster: ClusterDraft) -> str: ...

    def analyze(
        self, new: NodeView, candidates: Sequence[NodeView], judge: Sequence[str]
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


class OfflineAgents:
    """The agents without a model: the classical implementations of this package."""

    def __init__(
        self,
        embedder: Embedder,
        config: MemorizeConfig | None = None,
        window_tokens: int | None = None,
        window_ratio: float = 0.9,
    ) -> None:
        self.embedder = embedder
        self.config = config or MemorizeConfig()
        self.window_tokens = window_tokens
        self.window_ratio = window_ratio

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]:
        return classify_offline(
            context, self.embedder, self.window_tokens, self.window_ratio, self.config
        )

    def structure(self, cluster: ClusterDraft) -> str:
        return structure_offline(cluster.content, self.embedder, self.config)

    def analyze(
        self, new: NodeView, candidates: Sequence[NodeView], judge: Sequence[str]
    ) -> list[Relationship]:
        return analyze_offline(new, candidates, judge)

    def integrate(
        self,
        nodes: Sequence[NodeView],
        neighbours: dict[str, tuple[str, list[str]]],
        trigger: str,
        validation: str | None,
        contradictions: Sequence[Contradiction],
    ) -> Integration:
        return integrate_offline(nodes, neighbours, trigger, validation, contradictions)

    def plan(self, request: PlanRequest) -> PlanResult:
        return plan_offline(request)


# --- the offline roles (what `llm.offline.OfflineBackend` answers) --------------------------


def classify_role(request: ClassifyRequest) -> ClassifyResult:
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


def structure_role(request: StructureRequest) -> StructureResult:
    if request.encoder is None:
        raise LLMError("the offline structure role needs the embedding model (request.encoder)")
    return StructureResult(
        summary=structure_offline(request.content, request.encoder, request.config)
    )


def analyze_role(request: AnalyzeRequest) -> AnalyzeResult:
    if not request.views or len(request.views) != len(request.candidates) + 1:
        raise LLMError("the offline analyze role needs the nodes' views (new node first)")
    found = analyze_offline(request.views[0], request.views[1:], request.judge)
    return AnalyzeResult(relationships=[relationship_found(r) for r in found])


def integrate_role(request: IntegrateRequest) -> IntegrateResult:
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


class BackendAgents:
    """The five agents through an LLM backend's session roles (offline or OpenAI-compatible)."""

    def __init__(
        self,
        backend: Any,
        embedder: Embedder,
        config: MemorizeConfig | None = None,
        window_tokens: int | None = None,
        window_ratio: float = 0.9,
    ) -> None:
        self.backend = backend
        self.embedder = embedder
        self.config = config or MemorizeConfig()
        self.window_tokens = window_tokens
        self.window_ratio = window_ratio

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]:
        result = self.backend.classify(
            ClassifyRequest(
                context=context,
                task_goal=task_goal,
                window_tokens=self.window_tokens,
                window_ratio=self.window_ratio,
                encoder=self.embedder,
                config=self.config,
            )
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
        return self.backend.structure(request).summary or cluster.content

    def analyze(
        self, new: NodeView, candidates: Sequence[NodeView], judge: Sequence[str]
    ) -> list[Relationship]:
        request = AnalyzeRequest(
            new_node=_info(new, with_id=False),
            candidates=[_info(c) for c in candidates],
            judge=list(judge),  # type: ignore[arg-type]
            views=[new, *candidates],
        )
        known = {c.id for c in candidates}
        return [
            relationship_of(found)
            for found in self.backend.analyze(request).relationships
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
        result = self.backend.integrate(request)
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
        return self.backend.plan(request)


def _info(view: NodeView, with_id: bool = True) -> NodeInfo:
    return NodeInfo(
        id=view.id if with_id else None,
        summary=view.summary,
        context=view.context,
        keywords=list(view.keywords),
        timestamp=view.timestamp,
    )
