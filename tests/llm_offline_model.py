"""A "model" for the loopback LLM server that answers every role with what the offline
implementation gives for the same input, so a build through the `openai` backend makes the
same, meaningful store over the real protocol (the benchmark's endpoint, `bench/llm.py`).

What the offline roles need beyond the role input (chunk sentence vectors, memory vectors and
texts) is taken from an offline store of the same sources when one is `learn`ed: then a reply
costs the server nothing but a lookup, as if the endpoint computed on hardware of its own, and
the latency a benchmark injects is the whole cost of a call. Anything not learned is computed
here (embedding with the given embedder), which is slower but gives the same answer.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from memory_bank.config import AppConfig
from memory_bank.index.embedding import Embedder
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.schemas import Chunk, DirectoryNode, MemorizedChunk
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import memories_from_table
from memory_bank.taxonomy import TaxonomyItem, plan_taxonomy
from memory_bank.taxonomy.readme import ReadmeFileEntry, compose_readme
from memory_bank.text.tokens import count_tokens
from tests import llm_roles
from tests.loopback_llm import LoopbackLLM

OPENING = 120  # characters of a chunk's text that identify where it begins


class OfflineModel:
    """Role handlers answering with the offline implementation (see the module docstring)."""

    def __init__(self, config: AppConfig, embedder: Embedder | None = None) -> None:
        self.config = config
        self.embedder = embedder
        self.memories: dict[str, dict[str, Any]] = {}  # chunk text -> the offline memory
        self.chunk_openings: set[str] = set()  # how the offline chunks begin
        # (title, tldr) -> what planning uses besides them: vector, memory text, source, keywords
        self.items: dict[tuple[str, str], tuple[np.ndarray, str, str, list[str]]] = {}

    def learn(self, store: Path) -> OfflineModel:
        """Remember the offline memories and vectors of an offline store."""
        reader = StoreReader(Path(store).resolve())
        texts = dict(
            zip(
                reader.chunks().column("chunk_id").to_pylist(),
                reader.chunks().column("text").to_pylist(),
                strict=True,
            )
        )
        self.chunk_openings.update(text[:OPENING] for text in texts.values())
        vectors = reader.memory_vectors()
        for memory in memories_from_table(reader.memories()):
            text = texts[str(memory.metadata["chunk_id"])]
            source = str(memory.metadata.get("source", ""))
            self._remember(text, memory, vectors[memory.index], source)
        return self

    def _remember(
        self, text: str, memory: MemorizedChunk, vector: np.ndarray, source: str
    ) -> dict[str, Any]:
        self.memories[text] = {
            "title": memory.title,
            "memory": memory.memory,
            "tldr": memory.tldr,
            "keywords": list(memory.keywords),
            "context": memory.context,
        }
        self.items[(memory.title, memory.tldr)] = (
            vector,
            memory.memory,
            source,
            list(memory.keywords),
        )
        return self.memories[text]

    # --- roles ----------------------------------------------------------------------------------

    def split(self, data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
        """The cuts the offline chunker made: the pieces an offline chunk begins with (learned);
        without a learned store, cuts as late as fit (`llm_roles.split`)."""
        if not self.chunk_openings:
            return llm_roles.split(data, _)
        return {
            "splits": [
                {
                    "section": section["section"],
                    "cuts": [
                        piece["id"]
                        for piece in section["pieces"][1:]
                        if self._opens_a_chunk(piece["text"][:OPENING])
                    ],
                }
                for section in data["sections"]
            ]
        }

    def _opens_a_chunk(self, prefix: str) -> bool:
        # A piece shorter than OPENING is the start of a longer chunk opening.
        return prefix in self.chunk_openings or any(
            opening.startswith(prefix) for opening in self.chunk_openings
        )

    def place(self, data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
        """The closest leaf (what the offline descent usually reaches)."""
        return llm_roles.place(data, _)

    def memorize(self, data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
        return {
            "memories": [
                {"id": chunk["id"], **self._memory(chunk["text"], chunk["source"])}
                for chunk in data["chunks"]
            ]
        }

    def organize(self, data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
        items, vectors = [], []
        for memory in data["memories"]:
            vector, text, source, keywords = self._item(memory["title"], memory["tldr"])
            items.append(
                TaxonomyItem(
                    index=memory["index"],
                    title=memory["title"],
                    tldr=memory["tldr"],
                    keywords=keywords or list(memory.get("keywords") or []),
                    text=text,
                    source=source,
                )
            )
            vectors.append(vector)
        tree = plan_taxonomy(items, np.stack(vectors), self.config.taxonomy)
        return leaves_reply(tree)

    def readme(self, data: dict[str, Any], _: dict[str, Any]) -> dict[str, Any]:
        summaries = []
        for directory in data["directories"]:
            path = directory["path"]
            node = DirectoryNode(
                path=path, name=path.rstrip("/").rsplit("/", 1)[-1], description=""
            )
            children = [
                DirectoryNode(
                    path=f"{path.rstrip('/')}/{child['name']}",
                    name=child["name"],
                    description=child.get("description", ""),
                    chunk_indices=list(range(int(child.get("memories", 0)))),
                )
                for child in directory["subdirectories"]
            ]
            files = [
                ReadmeFileEntry(name=file["name"], title=file["title"], tldr=file["summary"])
                for file in directory["files"]
            ]
            node.description = directory.get("description", "")
            text = compose_readme(node, children, files)
            summaries.append({"path": path, "summary": text.split("\n")[2]})
        return {"summaries": summaries}

    def register(self, llm: LoopbackLLM) -> LoopbackLLM:
        for role, handler in (
            ("split", self.split),
            ("memorize", self.memorize),
            ("organize", self.organize),
            ("place", self.place),
            ("readme", self.readme),
            ("navigate", llm_roles.navigate),
            ("answer", llm_roles.answer),
        ):
            llm.handle(role, handler)
        return llm

    # --- what the offline roles need beyond the role input --------------------------------------

    def _memory(self, text: str, source: str) -> dict[str, Any]:
        known = self.memories.get(text)
        if known is not None:
            return known
        if self.embedder is None:
            raise KeyError("a chunk this model has not learned, and no embedder to memorize it")
        chunk = Chunk(
            chunk_id=hashlib.sha256(text.encode()).hexdigest()[:12],
            document_id="loopback",
            source=source,
            position=0,
            text=text,
            token_count=count_tokens(text, self.config.chunking.encoding),
            start_char=0,
            end_char=len(text),
        )
        encoding = self.embedder.encode_chunks([text])[0]
        memory = memorize_offline(chunk, encoding, 0, self.config.memorize)
        return self._remember(text, memory, encoding.vector, source)

    def _item(self, title: str, tldr: str) -> tuple[np.ndarray, str, str, list[str]]:
        known = self.items.get((title, tldr))
        if known is not None:
            return known
        if self.embedder is None:
            raise KeyError(f"a memory this model has not learned: {title!r}")
        vector = self.embedder.encode([f"{title.replace('_', ' ')}. {tldr}"])[0]
        return vector, tldr, "", []


def leaves_reply(tree: DirectoryNode) -> dict[str, Any]:
    """A planned tree as the organize role's reply: leaf paths with their memories, and the
    descriptions of the directories above them."""
    leaves, parents = [], []
    for node in tree.iter_nodes():
        if node.path == "/":
            continue
        if node.children:
            parents.append({"path": node.path, "description": node.description})
        else:
            leaves.append(
                {
                    "path": node.path,
                    "description": node.description,
                    "memories": list(node.chunk_indices),
                }
            )
    return {"leaves": leaves, "parents": parents}
