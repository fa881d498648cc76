"""What scoring needs from an ingested store: which corpus source each hit's text comes from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from memory_bank.errors import StoreError
from memory_bank.evaluation.metrics import Passage
from memory_bank.schemas import SearchHit
from memory_bank.store.reader import StoreReader


class StoreIndex:
    """Chunk file -> document, each chunk's sentences, and each directory's memories with their
    TL;DRs (what README summaries quote)."""

    def __init__(self, store: Path, source_of_document: dict[str, str]) -> None:
        reader = StoreReader(store)
        memories = reader.memories()
        self.source_of_document = source_of_document
        self._chunk_of_path = dict(
            zip(
                memories.column("path").to_pylist(),
                zip(
                    memories.column("document_id").to_pylist(),
                    memories.column("chunk_id").to_pylist(),
                    strict=True,
                ),
                strict=True,
            )
        )
        sentences = reader.sentences().sort_by(
            [("chunk_id", "ascending"), ("sentence", "ascending")]
        )
        self._sentences: dict[str, list[str]] = defaultdict(list)
        for chunk_id, text in zip(
            sentences.column("chunk_id").to_pylist(),
            sentences.column("text").to_pylist(),
            strict=True,
        ):
            self._sentences[chunk_id].append(text)
        if not set(source_of_document) & {document for document, _ in self._chunk_of_path.values()}:
            raise StoreError(f"the store {store} holds none of the corpus documents")
        self._tldrs: list[str] = [
            " ".join(text.split()) for text in memories.column("tldr").to_pylist()
        ]
        self._documents: list[str] = memories.column("document_id").to_pylist()
        self._subtree: dict[str, list[int]] = {}
        for node in reader.tree().iter_nodes():
            self._subtree[node.path] = [i for part in node.iter_nodes() for i in part.chunk_indices]

    def source_of_hit(self, document_id: str) -> str | None:
        return self.source_of_document.get(document_id)

    def answer_passages(self, answer: str, cited_paths: Sequence[str]) -> list[Passage]:
        """One passage per cited chunk file: the answer sentences it quotes, else the whole answer."""
        if not cited_paths:
            return [Passage(None, answer)]
        passages: list[Passage] = []
        for path in cited_paths:
            document_id, chunk_id = self._chunk_of_path.get(path, (None, None))
            quoted = [
                sentence for sentence in self._sentences.get(chunk_id, []) if sentence in answer
            ]
            source = self.source_of_document.get(document_id) if document_id else None
            passages.append(Passage(source, " ".join(quoted) if quoted else answer))
        return passages

    def hit_passages(self, hits: Sequence[SearchHit]) -> list[Passage]:
        """The passages of search hits in rank order: a chunk hit is one passage of its source;
        a README hit is split into the memory TL;DRs its text quotes (each of its memory's
        source) and the text between them (no source)."""
        passages: list[Passage] = []
        for hit in hits:
            if hit.kind == "chunk":
                passages.append(Passage(self.source_of_hit(hit.document_id), hit.text))
            else:
                passages.extend(self.readme_passages(hit.chunk_id, hit.text))
        return passages

    def readme_passages(self, directory: str, text: str) -> list[Passage]:
        """`text` (a README of `directory`, or part of one) cut at the TL;DRs of its subtree's
        memories that it quotes."""
        flat = " ".join(text.split())
        found: list[tuple[int, int, int]] = []  # (start, end, memory index)
        for index in self._subtree.get(directory, []):
            tldr = self._tldrs[index]
            start = flat.find(tldr) if len(tldr.split()) >= 3 else -1
            if start >= 0:
                found.append((start, start + len(tldr), index))
        found.sort()
        passages: list[Passage] = []
        position = 0
        for start, end, index in found:
            if start < position:  # overlapping quotes: the first one counts
                continue
            if flat[position:start].strip():
                passages.append(Passage(None, flat[position:start].strip()))
            source = self.source_of_hit(self._documents[index])
            passages.append(Passage(source, flat[start:end], quoted=True))
            position = end
        if flat[position:].strip():
            passages.append(Passage(None, flat[position:].strip()))
        return passages
