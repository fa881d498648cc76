"""memory-bank: a hierarchical, agent-organized memory for documents, corpora and conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["MemoryBank", "ChatResult", "SearchHit", "IngestSummary"]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from memory_bank.app.bank import MemoryBank
    from memory_bank.schemas import ChatResult, IngestSummary, SearchHit


def __getattr__(name: str):
    # Lazy so that `import memory_bank.text.tokens` in a Ray worker does not drag in the facade.
    if name == "MemoryBank":
        from memory_bank.app.bank import MemoryBank

        return MemoryBank
    if name in {"ChatResult", "SearchHit", "IngestSummary"}:
        from memory_bank import schemas

        return getattr(schemas, name)
    raise AttributeError(name)
