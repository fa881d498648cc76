"""The input of taxonomy planning: what is known about each memory besides its vector."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_bank.schemas import MemorizedChunk


@dataclass(frozen=True)
class TaxonomyItem:
    """One memory to place. `index` is its global memory number (what leaves list)."""

    index: int
    title: str
    tldr: str
    keywords: list[str] = field(default_factory=list)
    text: str = ""  # the memory text: the main source of directory terms
    source: str = ""

    @classmethod
    def from_memory(cls, memory: MemorizedChunk) -> TaxonomyItem:
        return cls(
            index=memory.index,
            title=memory.title,
            tldr=memory.tldr,
            keywords=list(memory.keywords),
            text=memory.memory,
            source=str(memory.metadata.get("source", "")),
        )

    def curated_terms(self) -> list[str]:
        """Title words and keywords: terms memorize already picked out."""
        return [self.title.replace("_", " "), *self.keywords]
