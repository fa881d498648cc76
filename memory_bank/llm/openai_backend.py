"""The `openai` backend: every role through an OpenAI-compatible endpoint (`client.py`).

memorize: several chunks per request; the model writes title, memory, tldr, keywords and
context, the chunk's metadata (ids, offsets, source) comes from the pipeline as in the offline
role. A batch whose replies stay invalid after the repairs keeps the offline (extractive)
memories, counted as fallbacks. organize: the model plans the tree from the memories' titles and
summaries; a plan that fails `validate_taxonomy` is sent back with the problems, up to
`organize_attempts` plans, then the flat fallback (recorded in `OrganizeResult.fallbacks`).
Stores above `taxonomy.coarse_threshold` memories are planned by the offline clustering (a
whole large store does not fit one prompt). place: the offline placement (closest leaf, or a
new directory). readme: the model writes the opening paragraphs of several directories per request; the
listing stays generated, so every file and subdirectory is always listed. Independent requests
(memorize and README batches) overlap, up to `max_concurrency` in flight. navigate: a tool-calling agent (`agent.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from memory_bank.config import LLMConfig, ResearchConfig, RetrievalConfig
from memory_bank.errors import LLMError
from memory_bank.index.embedding import TextEncoder
from memory_bank.llm.ledger import Ledger
from memory_bank.llm.offline import OfflineBackend
from memory_bank.llm.roles import (
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
)
from memory_bank.schemas import DirectoryNode, MemorizedChunk
from memory_bank.store.files import sanitize_name
from memory_bank.tasks import TaskMap, run_serially
from memory_bank.taxonomy import flat_fallback, validate_taxonomy
from memory_bank.taxonomy.planner import memory_count


def prompt(name: str) -> str:
    """The instructions of a role, from `llm/prompts/<name>.md`."""
    return resources.files("memory_bank.llm").joinpath(f"prompts/{name}.md").read_text("utf-8")


class _Memory(BaseModel):
    id: int
    title: str
    memory: str
    tldr: str
    keywords: list[str] = Field(default_factory=list)
    context: str = ""


class _MemorizeReply(BaseModel):
    memories: list[_Memory]


class _Leaf(BaseModel):
    path: str
    description: str = ""
    memories: list[int]


class _Parent(BaseModel):
    path: str
    description: str = ""


class _OrganizeReply(BaseModel):
    leaves: list[_Leaf]
    parents: list[_Parent] = Field(default_factory=list)


class _Summary(BaseModel):
    path: str
    summary: str


class _ReadmeReply(BaseModel):
    summaries: list[_Summary]


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.offline = OfflineBackend()
        self.ledger = Ledger(config)
        self._client = None
        self._client_lock = threading.Lock()

    @property
    def client(self):
        from memory_bank.llm.client import ChatClient

        with self._client_lock:
            if self._client is None:
                self._client = ChatClient(self.config, self.ledger)
            return self._client

    @property
    def build_model(self) -> tuple[str, float]:
        config = self.config
        temperature = config.build_temperature
        return config.build_model or config.model, (
            config.temperature if temperature is None else temperature
        )

    @property
    def chat_model(self) -> tuple[str, float]:
        config = self.config
        temperature = config.chat_temperature
        return config.chat_model or config.model, (
            config.temperature if temperature is None else temperature
        )

    # --- memorize -----------------------------------------------------------------------------

    def memorize(self, request: MemorizeRequest) -> MemorizeResult:
        # The offline memories carry the metadata and are the fallback of a failed batch.
        base = self.offline.memorize(request).memories
        size = self.config.memorize_batch
        batches = [
            (base[start : start + size], request.chunks[start : start + size])
            for start in range(0, len(base), size)
        ]
        done = self._overlapped(lambda batch: self._memorize_batch(*batch), batches)
        return MemorizeResult(memories=[memory for batch in done for memory in batch])

    def _overlapped(self, function: Any, items: list[Any]) -> list[Any]:
        """`function` over `items` with up to `max_concurrency` requests in flight (the
        endpoint's latency overlaps; the client's own limit still holds); results in order."""
        if len(items) <= 1:
            return [function(item) for item in items]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(self.config.max_concurrency, len(items))) as pool:
            return list(pool.map(function, items))

    def _memorize_batch(
        self, base: list[MemorizedChunk], chunks: list[Any]
    ) -> list[MemorizedChunk]:
        ids = list(range(len(base)))
        payload = {
            "chunks": [
                {"id": i, "source": chunk.source, "text": chunk.text}
                for i, chunk in zip(ids, chunks, strict=True)
            ]
        }

        def check(reply: _MemorizeReply) -> list[str]:
            got = [memory.id for memory in reply.memories]
            return (
                [] if sorted(got) == ids else [f"expected one memory per chunk id {ids}, got {got}"]
            )

        model, temperature = self.build_model
        try:
            reply = self.client.structured(
                "memorize", prompt("memorize"), payload, _MemorizeReply, model, temperature, check
            )
        except LLMError:
            self.ledger.count("memorize", "fallbacks")
            return base
        written = {memory.id: memory for memory in reply.memories}
        return [
            memory.model_copy(
                update={
                    "title": sanitize_name(written[i].title, fallback=memory.title),
                    "memory": written[i].memory.strip() or memory.memory,
                    "tldr": written[i].tldr.strip() or memory.tldr,
                    "keywords": [k.strip() for k in written[i].keywords if k.strip()][:8]
                    or memory.keywords,
                    "context": written[i].context.strip() or memory.context,
                }
            )
            for i, memory in zip(ids, base, strict=True)
        ]

    # --- organize -----------------------------------------------------------------------------

    def organize(
        self, request: OrganizeRequest, map_groups: TaskMap = run_serially
    ) -> OrganizeResult:
        config = request.config
        if len(request.items) > config.coarse_threshold:
            return self.offline.organize(request, map_groups)
        indices = [item.index for item in request.items]
        payload = {
            "bounds": {
                "max_depth": config.max_depth,
                "min_leaf": config.min_leaf,
                "target_leaf": config.target_leaf,
                "hard_max_leaf": config.hard_max_leaf,
            },
            "memories": [
                {
                    "index": item.index,
                    "title": item.title,
                    "tldr": item.tldr,
                    "keywords": list(item.keywords)[:6],
                }
                for item in request.items
            ],
        }
        problems_seen: list[str] = []

        def check(reply: _OrganizeReply) -> list[str]:
            try:
                tree = tree_from_leaves(reply)
            except ValueError as exc:
                problems = [str(exc)]
            else:
                problems = validate_taxonomy(tree, len(indices), config)
            problems_seen.extend(problems)
            return problems

        model, temperature = self.build_model
        try:
            reply = self.client.structured(
                "organize",
                prompt("organize"),
                payload,
                _OrganizeReply,
                model,
                temperature,
                check,
                attempts=self.config.organize_attempts,
            )
        except LLMError as exc:
            self.ledger.count("organize", "fallbacks")
            fallbacks = [*problems_seen, f"flat fallback: {exc}"]
            return OrganizeResult(tree=flat_fallback(indices, config), fallbacks=fallbacks)
        return OrganizeResult(tree=tree_from_leaves(reply), fallbacks=problems_seen)

    def place(self, request: PlaceRequest) -> PlaceResult:
        return self.offline.place(request)

    # --- readme -------------------------------------------------------------------------------

    def readme(self, request: ReadmeRequest) -> ReadmeResult:
        return self.readmes([request])[0]

    def readmes(self, requests: Sequence[ReadmeRequest]) -> list[ReadmeResult]:
        """`readme_batch` directories per request, the requests overlapped; the model writes
        each opening paragraph, the listing stays generated (every file and subdirectory is
        always listed). A batch that fails keeps the offline text."""
        size = self.config.readme_batch
        batches = [list(requests[start : start + size]) for start in range(0, len(requests), size)]
        done = self._overlapped(self._readme_batch, batches)
        return [result for batch in done for result in batch]

    def _readme_batch(self, requests: list[ReadmeRequest]) -> list[ReadmeResult]:
        generated = [self.offline.readme(request).text for request in requests]
        payload = {
            "directories": [
                {
                    "path": request.node.path,
                    "description": request.node.description,
                    "subdirectories": [
                        {
                            "name": child.name,
                            "description": child.description,
                            "memories": memory_count(child),
                        }
                        for child in request.child_dirs
                    ],
                    "files": [
                        {"name": entry.name, "title": entry.title, "summary": entry.tldr}
                        for entry in request.files
                    ],
                }
                for request in requests
            ]
        }
        paths = [request.node.path for request in requests]

        def check(reply: _ReadmeReply) -> list[str]:
            got = [summary.path for summary in reply.summaries]
            return (
                []
                if sorted(got) == sorted(paths)
                else [f"expected one summary per path {paths}, got {got}"]
            )

        model, temperature = self.build_model
        try:
            reply = self.client.structured(
                "readme", prompt("readme"), payload, _ReadmeReply, model, temperature, check
            )
        except LLMError:
            self.ledger.count("readme", "fallbacks")
            return [ReadmeResult(text=text) for text in generated]
        summaries = {summary.path: " ".join(summary.summary.split()) for summary in reply.summaries}
        results = []
        for path, text in zip(paths, generated, strict=True):
            lines = text.split("\n")
            summary = summaries.get(path)
            # Keep the title and the generated listing; the model's paragraph replaces the opening.
            results.append(
                ReadmeResult(
                    text="\n".join([lines[0], "", summary, *lines[3:]]) if summary else text
                )
            )
        return results

    # --- navigate -----------------------------------------------------------------------------

    def navigator(
        self, tools: Any, search: Any, embedder: TextEncoder | None, config: RetrievalConfig
    ) -> Navigator:
        from memory_bank.llm.agent import ToolCallingNavigator

        model, temperature = self.chat_model
        return ToolCallingNavigator(self.client, tools, config, model, temperature)

    # --- research -------------------------------------------------------------------------------

    def researcher(
        self, search: Any, config: ResearchConfig, retrieval: RetrievalConfig
    ) -> Researcher:
        return self.offline.researcher(search, config, retrieval)


def tree_from_leaves(reply: _OrganizeReply) -> DirectoryNode:
    """The tree a flat list of leaf paths describes (names made safe; ValueError on a path
    that is both a leaf and a parent)."""
    root = DirectoryNode(path="/", name="")
    nodes = {"/": root}
    descriptions = {_clean_path(parent.path): parent.description for parent in reply.parents}
    for leaf in reply.leaves:
        path = _clean_path(leaf.path)
        if path == "/":
            raise ValueError("a leaf cannot be the root")
        parent = root
        for depth, name in enumerate(path.strip("/").split("/"), start=1):
            current = "/" + "/".join(path.strip("/").split("/")[:depth])
            node = nodes.get(current)
            if node is None:
                node = DirectoryNode(
                    path=current, name=name, description=descriptions.get(current, "")
                )
                nodes[current] = node
                if parent.chunk_indices:
                    raise ValueError(f"{parent.path} is a leaf and also has subdirectories")
                parent.children.append(node)
            parent = node
        if parent.children:
            raise ValueError(f"{path} is a leaf and also has subdirectories")
        parent.description = leaf.description or parent.description
        parent.chunk_indices.extend(int(index) for index in leaf.memories)
    return root


def _clean_path(path: str) -> str:
    names = [
        sanitize_name(part, fallback="topic") for part in path.strip().strip("/").split("/") if part
    ]
    return "/" + "/".join(names)
