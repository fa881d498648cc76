"""What a key limited to part of a store may see of one store version.

A key's scope (`keys.KeyScope`) names documents and/or a store directory; here it becomes sets of
store paths, worked out once per store version and scope:

- memory files: those of the documents in scope (and under the directory, when one is given);
- directories: those with at least one visible memory below them (an empty listing would still
  name what lies beside it, so a directory of other memories only is not listed at all);
- READMEs: only of directories whose every memory is visible. A README summarizes its whole
  subtree, so one over a mix of teams' memories would quote the other team: it stays hidden,
  the root README too unless the key sees everything.

Every result an agent gets passes through here: search hits (and the history notes they
carry), listings, grep lines, files, Query Graph nodes, answers. Something out of scope is
reported as absent, the same as something that does not exist, so a key learns nothing of what
it cannot see.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from memory_bank.agents.keys import Caller, KeyScope
from memory_bank.agents.uploads import uploads_folder
from memory_bank.errors import SessionError, ToolError
from memory_bank.index.scope import SearchScope
from memory_bank.query.tools import Entry, GrepMatch
from memory_bank.schemas import ChatResult, DirectoryNode, HistoryNote, SearchHit
from memory_bank.session.models import HistoryView, NodeDetail
from memory_bank.store.files import readme_relative_path
from memory_bank.store.reader import StoreReader
from memory_bank.store.sources import documents_named

# History events that record what replaced a memory; their detail describes the replacement.
REPLACEMENT_EVENTS = frozenset({"merged", "superseded", "claim superseded"})


def read_scope(store: Path, caller: Caller) -> KeyScope:
    """What `caller` reads of `store`: its key's scope, and, for a key limited to documents,
    what it uploaded itself too."""
    scope = caller.scope
    if not scope.documents:
        return scope
    own = str(uploads_folder(store, caller))
    return scope.model_copy(update={"documents": (*scope.documents, own)})


def relative(path: str) -> str:
    """A store path as the visible sets hold it: "a/b/x.md" ("/a/b/x.md", "./a/b/x.md")."""
    text = str(PurePosixPath("/", path.strip()))
    return text.lstrip("/")


def tree_path(path: str) -> str:
    """A directory as a tree path: "/" or "/a/b"."""
    return "/" + relative(path)


class Visibility:
    """The visible part of one store version for one scope (see the module docstring)."""

    def __init__(
        self,
        scope: KeyScope,
        sources: dict[str, str] | None = None,
        chunk_ids: frozenset[str] = frozenset(),
        files: frozenset[str] = frozenset(),
        directories: frozenset[str] = frozenset(),
        readmes: frozenset[str] = frozenset(),
        indices: frozenset[int] = frozenset(),
    ) -> None:
        self.scope = scope
        self.whole = scope.is_whole_store
        self.sources = sources or {}  # visible document id -> source as ingested
        self.documents = frozenset(self.sources)
        self.chunk_ids = chunk_ids
        self.files = files
        self.directories = directories
        self.readmes = readmes
        self.indices = indices

    @classmethod
    def everything(cls) -> Visibility:
        return cls(KeyScope())

    @classmethod
    def of(cls, scope: KeyScope, reader: StoreReader) -> Visibility:
        """Work the scope out against one opened store version."""
        if scope.is_whole_store:
            return cls.everything()
        table = reader.rows("memories", ["index", "chunk_id", "document_id", "source", "path"])
        rows = table.to_pylist()
        source_of = {row["document_id"]: row["source"] for row in rows}
        named = documents_named(source_of, scope.documents) if scope.documents else None
        prefix = None if scope.directory is None else relative(scope.directory) + "/"
        visible = [
            row
            for row in rows
            if (named is None or row["document_id"] in named)
            and (prefix is None or row["path"].startswith(prefix))
        ]
        files = frozenset(row["path"] for row in visible)
        directories = {"/"} if files else set()
        for path in files:
            parts = path.split("/")[:-1]
            directories.update("/" + "/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        hidden_below: set[str] = set()
        for row in rows:
            if row["path"] not in files:
                parts = row["path"].split("/")[:-1]
                hidden_below.add("/")
                hidden_below.update(
                    "/" + "/".join(parts[:depth]) for depth in range(1, len(parts) + 1)
                )
        readmes = frozenset(
            readme_relative_path(directory)
            for directory in directories
            if directory not in hidden_below
        )
        return cls(
            scope,
            sources={row["document_id"]: row["source"] for row in visible},
            chunk_ids=frozenset(row["chunk_id"] for row in visible),
            files=files,
            directories=frozenset(directories),
            readmes=readmes,
            indices=frozenset(row["index"] for row in visible),
        )

    # --- single items -----------------------------------------------------------------------

    def sees_file(self, path: str) -> bool:
        key = relative(path)
        return self.whole or key in self.files or key in self.readmes

    def sees_directory(self, path: str) -> bool:
        return self.whole or tree_path(path) in self.directories

    def sees_memory(self, chunk_id: str) -> bool:
        return self.whole or chunk_id in self.chunk_ids

    def sees_readme(self, directory: str) -> bool:
        return self.whole or readme_relative_path(tree_path(directory)) in self.readmes

    def sees_conflict(self, older: str, newer: str) -> bool:
        return self.sees_memory(older) and self.sees_memory(newer)

    def require_file(self, path: str, verb: str = "cat") -> None:
        if not self.sees_file(path):
            raise ToolError(f"{verb}: no such file: {path!r}")

    def require_directory(self, path: str, verb: str = "ls") -> None:
        if not self.sees_directory(path):
            raise ToolError(f"{verb}: no such directory: {path!r}")

    # --- searches ---------------------------------------------------------------------------

    def search_scope(
        self, within: Iterable[str] = (), under: str | None = None
    ) -> SearchScope | None:
        """The search scope of a request within this visibility; None when their intersection
        is empty (nothing to search)."""
        within = tuple(within)
        if self.whole:
            return SearchScope(documents=within, directory=under)
        directory = self.scope.directory
        if under not in (None, "", "/"):
            asked = tree_path(under)
            if directory is None or asked.startswith(directory + "/") or asked == directory:
                directory = asked
            elif not directory.startswith(asked + "/"):
                return None  # two subtrees side by side
        documents = sorted(self.documents)
        if within:
            # Only the visible documents the request names (the rest are not there for it).
            named = documents_named(self.sources, within)
            documents = [document for document in documents if document in named]
        if not documents:
            return None
        return SearchScope(documents=tuple(documents), directory=directory)

    def hits(self, hits: list[SearchHit]) -> list[SearchHit]:
        if self.whole:
            return hits
        kept = []
        for hit in hits:
            if hit.kind == "memory" or not self.sees_file(hit.chunk_path):
                continue  # a session's memory belongs to no document
            kept.append(hit.model_copy(update={"history": self.notes(hit.history)}))
        return kept

    def notes(self, notes: list[HistoryNote]) -> list[HistoryNote]:
        if self.whole:
            return notes
        return [
            note
            for note in notes
            if self.sees_file(note.superseded_source) and self.sees_file(note.current_source)
        ]

    # --- files ------------------------------------------------------------------------------

    def entries(self, directory: str, entries: list[Entry]) -> list[Entry]:
        if self.whole:
            return entries
        base = relative(directory)
        kept = []
        for entry in entries:
            path = f"{base}/{entry.name}" if base else entry.name
            visible = self.sees_directory(path) if entry.type == "dir" else self.sees_file(path)
            if visible:
                kept.append(entry)
        return kept

    def grep(self, matches: list[GrepMatch]) -> list[GrepMatch]:
        return matches if self.whole else [m for m in matches if self.sees_file(m.file)]

    def tree(self, root: DirectoryNode) -> DirectoryNode:
        if self.whole:
            return root
        return _pruned(root, self) or DirectoryNode(path="/", name="")

    # --- answers and the graph --------------------------------------------------------------

    def result(self, result: ChatResult) -> ChatResult:
        """An answer as this caller may see it. The scoped answer path reads only visible
        memories; a file out of sight here would be a bug, so it fails rather than leaks."""
        if self.whole:
            return result
        unseen = [p for p in (*result.sources, *result.files_read) if not self.sees_file(p)]
        if unseen:
            raise ToolError("the answer drew on memories outside this key's part of the store")
        return result.model_copy(update={"history": self.notes(result.history)})

    def node(self, detail: NodeDetail) -> NodeDetail:
        if self.whole:
            return detail
        if not self.sees_memory(detail.id):
            raise SessionError(f"no memory {detail.id!r} in the Query Graph")
        neighbours = [n for n in detail.neighbours if n.id is not None and self.sees_memory(n.id)]
        shown = {n.id for n in neighbours}
        status, superseded_by = self.standing(detail.status, detail.superseded_by)
        replaced_by = [detail.superseded_by or ""]
        replaced_by += [side for c in detail.conflicts for side in (c.older, c.newer)]
        return detail.model_copy(
            update={
                "status": status,
                "superseded_by": superseded_by,
                "neighbours": neighbours,
                "relations": {k: v for k, v in detail.relations.items() if k in shown},
                "conflicts": [c for c in detail.conflicts if self.sees_conflict(c.older, c.newer)],
                "history": self.history(detail.history, replaced_by),
            }
        )

    def standing(self, status: str, superseded_by: str | None) -> tuple[str, str | None]:
        """A memory's status and what replaced it: one replaced by a memory out of sight is
        current (what replaced it is absent, as if it did not exist)."""
        if self.whole or not superseded_by or self.sees_memory(superseded_by):
            return status, superseded_by
        return "current", None

    def history(self, entries: list[HistoryView], replaced_by: Iterable[str]) -> list[HistoryView]:
        """A memory's history entries this caller may see: none about a memory out of sight,
        and no record of a replacement when something out of sight replaced it or contradicts
        it (`replaced_by`: its `superseded_by` and both sides of its conflicts), since such a
        record's detail describes the replacing claim."""
        if self.whole:
            return entries
        outside = any(other and not self.sees_memory(other) for other in replaced_by)
        return [
            entry
            for entry in entries
            if (not entry.node_id or self.sees_memory(entry.node_id))
            and not (outside and entry.event in REPLACEMENT_EVENTS)
        ]


def _pruned(node: DirectoryNode, view: Visibility) -> DirectoryNode | None:
    if node.path not in view.directories:
        return None
    children = [pruned for child in node.children if (pruned := _pruned(child, view)) is not None]
    return node.model_copy(
        update={
            "description": node.description if view.sees_readme(node.path) else "",
            "children": children,
            "chunk_indices": [i for i in node.chunk_indices if i in view.indices],
        }
    )
