"""The `memorize` role: chunks -> memories (title, memory, tldr, keywords, context).

Offline, a memory is the extract of its chunk chosen by the chunk's sentence vectors
(`extractive.memorize_offline`: MMR over sentences, keeping numbers and names). With a model,
`llm.memorize_batch` chunks go in one request, the requests overlapped; the model writes title,
memory, tldr, keywords and context, while the chunk's metadata (ids, offsets, source) comes from
the pipeline as offline. A batch whose replies stay invalid after the repairs keeps the offline
memories, counted as fallbacks.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, InstanceOf

from memory_bank.config import MemorizeConfig
from memory_bank.errors import LLMError
from memory_bank.index.embedding import ChunkEncoding
from memory_bank.llm.seam import LLM, RoleModel, prompt
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.schemas import Chunk, MemorizedChunk
from memory_bank.text.lexicon import sanitize_name

ROLE = "memorize"


class MemorizeRequest(RoleModel):
    """Chunks to turn into memories; memory indices start at `first_index`, in chunk order."""

    chunks: list[Chunk]
    first_index: int = Field(ge=0)
    config: MemorizeConfig = MemorizeConfig()
    # One per chunk, from the embedding stage: the offline memories are extracts chosen by
    # their sentence vectors (and the metadata and fallback of the model's).
    encodings: list[InstanceOf[ChunkEncoding]]


class _Memory(BaseModel):
    id: int
    title: str
    memory: str
    tldr: str
    keywords: list[str] = Field(default_factory=list)
    context: str = ""


class _MemorizeReply(BaseModel):
    memories: list[_Memory]


def memorize(request: MemorizeRequest, llm: LLM | None) -> list[MemorizedChunk]:
    """The memories of `request`'s chunks, in chunk order (see the module docstring)."""
    if len(request.encodings) != len(request.chunks):
        raise LLMError("the memorize role needs one chunk encoding per chunk")
    extracts = [
        memorize_offline(chunk, encoding, request.first_index + offset, request.config)
        for offset, (chunk, encoding) in enumerate(
            zip(request.chunks, request.encodings, strict=True)
        )
    ]
    if llm is None:
        return extracts
    size = llm.config.memorize_batch
    batches = [
        (extracts[start : start + size], request.chunks[start : start + size])
        for start in range(0, len(extracts), size)
    ]
    done = llm.overlapped(lambda batch: _written(*batch, llm), batches)
    return [memory for batch in done for memory in batch]


def _written(extracts: list[MemorizedChunk], chunks: list[Chunk], llm: LLM) -> list[MemorizedChunk]:
    """The model's memories of one batch, on the extracts' metadata (the extracts themselves
    when its replies stay invalid)."""
    ids = list(range(len(extracts)))
    payload = {
        "chunks": [
            {"id": i, "source": chunk.source, "text": chunk.text}
            for i, chunk in zip(ids, chunks, strict=True)
        ]
    }

    def check(reply: _MemorizeReply) -> list[str]:
        got = [memory.id for memory in reply.memories]
        return [] if sorted(got) == ids else [f"expected one memory per chunk id {ids}, got {got}"]

    try:
        reply = llm.complete(ROLE, prompt(__package__, ROLE), payload, _MemorizeReply, check=check)
    except LLMError:
        llm.ledger.count(ROLE, "fallbacks")
        return extracts
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
        for i, memory in zip(ids, extracts, strict=True)
    ]
