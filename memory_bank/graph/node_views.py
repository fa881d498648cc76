"""`NodeViews`: what the analysis of a new node reads of the nodes it is compared with."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from memory_bank.graph.analysis import NodeView
from memory_bank.graph.graph import QueryGraph
from memory_bank.graph.memory_source import MemorySource
from memory_bank.text.sentences import split_sentences


class SentenceVectors:
    """Sentence vectors of session nodes by node id, each kept with the text it was made from;
    beyond `capacity` nodes the least recently used are dropped (embedded again if needed)."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[str, dict[str, np.ndarray]]] = OrderedDict()

    def get(self, node_id: str, text: str) -> dict[str, np.ndarray] | None:
        entry = self._entries.get(node_id)
        if entry is None or entry[0] != text:
            return None
        self._entries.move_to_end(node_id)
        return entry[1]

    def put(self, node_id: str, text: str, vectors: dict[str, np.ndarray]) -> None:
        self._entries[node_id] = (text, vectors)
        self._entries.move_to_end(node_id)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)


class NodeViews:
    """A memory node is read as its stored chunk (text, document title, sentence vectors); a
    session node as its own content, whose sentences are embedded once per `SentenceVectors`
    (by default one per `NodeViews`; a caller that makes many, such as the sessions of a
    graph, shares one)."""

    def __init__(
        self,
        graph: QueryGraph,
        memories: MemorySource,
        encode: Callable[[list[str]], np.ndarray],
        sentences: SentenceVectors | None = None,
    ) -> None:
        self.graph = graph
        self.memories = memories
        self.encode = encode
        self.sentences = sentences if sentences is not None else SentenceVectors()

    def view(self, node_id: str) -> NodeView:
        node = self.graph.nodes[node_id]
        if node.kind == "memory":
            text = self.memories.text(node_id) or node.summary
            sentences = self.memories.sentence_vectors([node_id]).get(node_id, {})
            title = self.memories.title(node_id)
            known = self.memories.known_facts(node_id)
        else:
            text = node.content or node.summary  # a summary is an extract of its content
            sentences = self._session_sentences(node_id, text)
            title = None
            known = {}
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
            known_facts=known,
            document=node.id.rsplit("-", 1)[0] if node.kind == "memory" else "",
        )

    def remember(self, node_id: str, text: str, sentence_vectors: dict[str, np.ndarray]) -> None:
        """A session node's sentence vectors for `text`, embedded elsewhere."""
        self.sentences.put(node_id, text, sentence_vectors)

    def _session_sentences(self, node_id: str, text: str) -> dict[str, np.ndarray]:
        cached = self.sentences.get(node_id, text)
        if cached is None:
            sentences = list(dict.fromkeys(split_sentences(text)))
            vectors = self.encode(sentences) if sentences else []
            cached = dict(zip(sentences, vectors, strict=True))
            self.sentences.put(node_id, text, cached)
        return cached
