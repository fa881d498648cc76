"""`InteractionTree`: the raw contexts behind the Query Graph's nodes (seed 002 §3.3).

Entries are frozen records, added once and never modified or deleted; a merge records a
`MergeEvent` and links the merged nodes' entries to the new node as well (the old links
stay). `entries_for(node_id)` is what `deep_retrieval` returns for a session node; a memory
node's raw text is its chunk (read from the store by the caller).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memory_bank.errors import MemoryBankError
from memory_bank.graph.model import InteractionEntry, MergeEvent


class ReadOnlyEntryError(MemoryBankError):
    """An interaction entry with this id exists already; entries are never replaced."""


@dataclass
class TreeChanges:
    entries: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)  # node ids whose entry list grew
    merge_events: set[str] = field(default_factory=set)


class InteractionTree:
    def __init__(self) -> None:
        self.entries: dict[str, InteractionEntry] = {}
        self.node_to_entries: dict[str, list[str]] = {}
        self.merge_events: dict[str, MergeEvent] = {}
        self.changes = TreeChanges()

    def add_entry(self, entry: InteractionEntry, node_ids: Iterable[str] = ()) -> None:
        existing = self.entries.get(entry.entry_id)
        if existing is not None and existing != entry:
            raise ReadOnlyEntryError(f"interaction entry {entry.entry_id} exists and is read-only")
        if existing is None:
            self.entries[entry.entry_id] = entry
            self.changes.entries.add(entry.entry_id)
        for node_id in node_ids:
            self.link(node_id, entry.entry_id)

    def link(self, node_id: str, entry_id: str) -> None:
        linked = self.node_to_entries.setdefault(node_id, [])
        if entry_id not in linked:
            linked.append(entry_id)
            self.changes.links.add(node_id)

    def record_merge(self, event: MergeEvent) -> None:
        """Record a merge and give the new node every entry of the merged ones."""
        self.merge_events[event.event_id] = event
        self.changes.merge_events.add(event.event_id)
        for old in event.merged_node_ids:
            for entry_id in self.node_to_entries.get(old, []):
                self.link(event.new_node_id, entry_id)

    def entries_for(self, node_id: str) -> list[InteractionEntry]:
        return [self.entries[e] for e in self.node_to_entries.get(node_id, []) if e in self.entries]

    def take_changes(self) -> TreeChanges:
        changes, self.changes = self.changes, TreeChanges()
        return changes
