"""The first stage of a commit: what a request does to the parts of the version it builds on.

Removed documents leave, offered documents the version already holds are not added twice, and
the memories are renumbered: the kept ones first, in their order, then the added ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from memory_bank.config import AppConfig
from memory_bank.errors import StoreError
from memory_bank.ingest.work import memory_recipe
from memory_bank.store.snapshot import MemoryParts, StoreSnapshot, concatenate, select_documents


@dataclass(frozen=True)
class Change:
    """A request applied to the parts of one version (`before`; None: a store made anew)."""

    before: StoreSnapshot | None
    parts: MemoryParts  # every part after the change: the kept memories, then `added`
    added: MemoryParts  # numbered on from the kept memories
    kept_index: dict[int, int]  # memory index in `before` -> index in `parts`
    removed: frozenset[str]  # document ids that left
    duplicates: int  # offered documents `before` already held
    # Kept documents of `before` whose rows stay in the store (`StoreSnapshot.stored_documents`)
    stored_documents: dict[str, str] | None = None

    @property
    def kept(self) -> int:
        """Memories of `before` that stay (they hold indices 0..kept-1)."""
        return len(self.parts.memories) - len(self.added.memories)

    @property
    def removed_memories(self) -> int:
        return len(self.before.parts.memories) - self.kept if self.before else 0

    @property
    def changes_parts(self) -> bool:
        return bool(self.added.memories or self.removed)


def apply_request(
    before: StoreSnapshot | None, offered: MemoryParts, remove: Iterable[str]
) -> Change:
    """`before` without the documents of `remove` it holds, with the `offered` documents it
    does not hold (whole documents: their memory indices are provisional)."""
    base = before.parts if before else MemoryParts()
    stored = before.documents() if before else {}
    removed = frozenset(remove) & set(stored)
    kept, kept_index = select_documents(base, lambda doc_id: doc_id not in removed, 0)
    known = set(stored) - removed
    added, _ = select_documents(offered, lambda doc_id: doc_id not in known, len(kept.memories))
    lent = before.stored_documents if before is not None else None
    return Change(
        before=before,
        parts=concatenate(kept, added),
        added=added,
        kept_index=kept_index,
        removed=removed,
        duplicates=len({doc.document_id for doc in offered.documents} & known),
        stored_documents=(
            {doc: source for doc, source in lent.items() if doc not in removed}
            if lent is not None
            else None
        ),
    )


def check_change(change: Change, config: AppConfig, store: str) -> None:
    """Refuse a change that would empty the store, or add memories made with other settings
    than the ones the store's memories were made with."""
    if not change.parts.memories:
        raise StoreError(f"this would leave {store} without memories; delete the store instead")
    before = change.before
    if (
        before is not None
        and change.added.memories
        and before.meta.get("memory_recipe") != memory_recipe(config)
    ):
        raise StoreError(
            f"{store} was made with other chunking/memorize/embedding settings than "
            "this ingest; run the ingest again to rebuild it with these settings"
        )
