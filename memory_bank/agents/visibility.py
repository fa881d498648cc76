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
from pathlib import PurePosixPath

from memory_bank.agents.keys import KeyScope
from memory_bank.errors import SessionError, ToolError
from memory_bank.index.scope import SearchScope
from memory_bank.query.tools import Entry, GrepMatch
from memory_bank.schemas import ChatResult, DirectoryNode, HistoryNote, SearchHit
from memory_bank.session.models import NodeDetail
from memory_bank.store.files import readme_relative_path
from memory_bank.store.reader import StoreReader
from memory_bank.store.sources import documents_named


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
        table = reader.memories().select(["index", "chunk_id", "document_id", "source", "path"])
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
        return _pruned(root, self.directories, self.indices) or DirectoryNode(path="/", name="")

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
        return detail.model_copy(
            update={
                "neighbours": neighbours,
                "relations": {k: v for k, v in detail.relations.items() if k in shown},
                "conflicts": [
                    c
                    for c in detail.conflicts
                    if self.sees_memory(c.older) and self.sees_memory(c.newer)
                ],
                "history": [
                    h for h in detail.history if not h.node_id or self.sees_memory(h.node_id)
                ],
            }
        )


def _pruned(
    node: DirectoryNode, directories: frozenset[str], indices: frozenset[int]
) -> DirectoryNode | None:
    if node.path not in directories:
        return None
    children = [
        pruned
        for child in node.children
        if (pruned := _pruned(child, directories, indices)) is not None
    ]
    return node.model_copy(
        update={
            "children": children,
            "chunk_indices": [i for i in node.chunk_indices if i in indices],
        }
    )
