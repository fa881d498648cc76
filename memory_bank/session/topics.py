"""The session's offline classification and structure (seed 001 §3.2.1-3.2.2).

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
from dataclasses import dataclass

import numpy as np

from memory_bank.config import MemorizeConfig
from memory_bank.index.embedding import Embedder
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.memorize.keyterms import extract_keywords
from memory_bank.schemas import Chunk
from memory_bank.text.lexicon import MARKDOWN_HEADER
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
    """Paragraphs of `text`; an overlong one is cut into groups of whole sentences. A heading
    states nothing of its own: it goes with the paragraph under it, which it names."""
    found: list[str] = []
    heading = ""
    for paragraph in _PARAGRAPH_BREAK.split(text):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if MARKDOWN_HEADER.fullmatch(paragraph):
            heading = f"{heading}{paragraph}\n\n"
            continue
        paragraph, heading = heading + paragraph, ""
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
    if heading:
        found.append(heading.strip())  # a heading with nothing under it
    return found
