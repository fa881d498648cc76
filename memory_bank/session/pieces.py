"""The heavy, graph-free part of an intercept: a context cut into bounded pieces
(`context_pieces`), each classified into clusters, structured and embedded (`draft_piece`),
ready to become session nodes under the graph lock (`session_nodes`).

Drafting reads nothing of the graph, so the pieces of one context are drafted independently
and wherever the caller's `PieceDrafter` runs them: one after the other in this process (the
default), or on Ray tasks (the store's graph actor), outside the process that serves the
sessions' reads.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memory_bank.graph.batch import context_text
from memory_bank.graph.graph import compose_embedding
from memory_bank.graph.model import GraphNode
from memory_bank.index.embedding import Embedder
from memory_bank.session.agents import SessionAgents
from memory_bank.session.topics import ClusterDraft
from memory_bank.text.sentences import split_sentences

# Draft every piece of a context for one task goal; drafts in the order of the pieces.
PieceDrafter = Callable[[Sequence[str], str], list["PieceDraft"]]


@dataclass(frozen=True)
class ClusterNodeDraft:
    """One cluster of a piece, with what its session node and its analysis need embedded."""

    cluster: ClusterDraft
    summary: str
    summary_vector: np.ndarray
    context_vector: np.ndarray
    sentence_vectors: dict[str, np.ndarray]  # the sentences of the node's text (its view)

    @property
    def text(self) -> str:
        """What the node's view reads: its content, else its summary."""
        return self.cluster.content or self.summary


@dataclass(frozen=True)
class PieceDraft:
    clusters: list[ClusterNodeDraft]


def draft_piece(
    agents: SessionAgents, embedder: Embedder, piece: str, task_goal: str
) -> PieceDraft:
    """`piece` classified into clusters, each structured (its summary) and embedded."""
    drafts = agents.classify(piece, task_goal)
    if not drafts:
        return PieceDraft([])
    summaries = [agents.structure(draft) for draft in drafts]
    summary_vectors = embedder.encode(summaries)
    context_vectors = embedder.encode([context_text(d.context, d.keywords) for d in drafts])
    texts = [draft.content or summary for draft, summary in zip(drafts, summaries, strict=True)]
    sentences = [list(dict.fromkeys(split_sentences(text))) for text in texts]
    every_sentence = [s for group in sentences for s in group]
    vectors = iter(embedder.encode(every_sentence) if every_sentence else [])
    return PieceDraft(
        [
            ClusterNodeDraft(
                cluster=draft,
                summary=summary,
                summary_vector=summary_vector,
                context_vector=context_vector,
                sentence_vectors={sentence: next(vectors) for sentence in group},
            )
            for draft, summary, summary_vector, context_vector, group in zip(
                drafts, summaries, summary_vectors, context_vectors, sentences, strict=True
            )
        ]
    )


def draft_serially(agents: Callable[[], SessionAgents], embedder: Callable[[], Embedder]):
    """The in-process `PieceDrafter` over this process's agents and embedder (made on first
    use)."""

    def draft(pieces: Sequence[str], task_goal: str) -> list[PieceDraft]:
        return [draft_piece(agents(), embedder(), piece, task_goal) for piece in pieces]

    return draft


def session_nodes(draft: PieceDraft, session_id: str) -> list[GraphNode]:
    """The session nodes of a drafted piece (ids and timestamps by code), in cluster order."""
    now = time.time()
    return [
        GraphNode(
            id="n-" + uuid.uuid4().hex[:16],
            kind="session",
            summary=cluster.summary,
            context=cluster.cluster.context,
            keywords=list(cluster.cluster.keywords),
            timestamp=now + position * 1e-6,
            embedding=compose_embedding(cluster.summary_vector, cluster.context_vector),
            summary_vector=cluster.summary_vector,
            content=cluster.cluster.content,
            source=f"session:{session_id}",
            session_id=session_id,
        )
        for position, cluster in enumerate(draft.clusters)
    ]


def context_pieces(context: str, max_chars: int) -> list[str]:
    """`context` in consecutive pieces of at most `max_chars`, cut between paragraphs (else
    between lines, else anywhere); blank pieces are dropped."""
    pieces: list[str] = []
    rest = context
    while len(rest) > max_chars:
        window = rest[:max_chars]
        cut = window.rfind("\n\n")
        if cut <= 0:
            cut = window.rfind("\n")
        if cut <= 0:
            cut = max_chars
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)
    return [piece for piece in pieces if piece.strip()]
