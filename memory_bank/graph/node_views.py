"""`NodeViews`: what the analysis of a new node reads of the nodes it is compared with."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from memory_bank.graph.analysis import NodeView
from memory_bank.graph.graph import QueryGraph
from memory_bank.graph.memory_source import MemorySource
from memory_bank.text.sentences import split_sentences


class NodeViews:
    """A memory node is read as its stored chunk (text, document title, sentence vectors); a
    session node as its own content, whose sentences are embedded once per `NodeViews`."""

    def __init__(
        self,
        graph: QueryGraph,
        memories: MemorySource,
        encode: Callable[[list[str]], np.ndarray],
    ) -> None:
        self.graph = graph
        self.memories = memories
        self.encode = encode
        self._sentence_cache: dict[str, dict[str, np.ndarray]] = {}

    def view(self, node_id: str) -> NodeView:
        node = self.graph.nodes[node_id]
        if node.kind == "memory":
            text = self.memories.text(node_id) or node.summary
            sentences = self.memories.sentence_vectors([node_id]).get(node_id, {})
            title = self.memories.title(node_id)
        else:
            text = node.content or node.summary  # a summary is an extract of its content
            sentences = self._session_sentences(node_id, text)
            title = None
        return NodeView(
            id=node.id,
            summary=node.summary,
            context=node.context,
            keywords=list(node.keywords),
            timestamp=node.timestamp,
            vector=node.embedding,
            text=text,
            title=title,
            sentence_vectors=sentences,
            document=node.id.rsplit("-", 1)[0] if node.kind == "memory" else "",
        )

    def remember(self, node_id: str, sentence_vectors: dict[str, np.ndarray]) -> None:
        """A session node's sentence vectors, embedded elsewhere (before the node was made)."""
        self._sentence_cache[node_id] = sentence_vectors

    def _session_sentences(self, node_id: str, text: str) -> dict[str, np.ndarray]:
        cached = self._sentence_cache.get(node_id)
        if cached is None:
            sentences = list(dict.fromkeys(split_sentences(text)))
            vectors = self.encode(sentences) if sentences else []
            cached = self._sentence_cache[node_id] = dict(zip(sentences, vectors, strict=True))
        return cached
