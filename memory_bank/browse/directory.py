"""One directory of the tree as a page shows it: never more than its own children and one page of
its memories, so a store of any size is browsed a level at a time."""

from __future__ import annotations

from memory_bank.browse.catalog import (
    StoreCatalog,
    breadcrumb_paths,
    normalized_directory,
    readme_parts,
)
from memory_bank.browse.models import Crumb, DirectoryEntry, DirectoryPage, MemoryEntry
from memory_bank.schemas import DirectoryNode

MAX_FILES_PAGE = 500


def directory_page(
    catalog: StoreCatalog, path: str, offset: int = 0, limit: int = 100
) -> DirectoryPage | None:
    """Directory `path` with its README, its subdirectories and memories [offset, offset+limit)
    of those filed directly in it, by file name; None when the tree has no such directory."""
    node = catalog.directory(path)
    if node is None:
        return None
    limit = max(0, min(limit, MAX_FILES_PAGE))
    offset = max(0, offset)
    title, summary, key_terms = readme_parts(catalog.readme(node.path))
    files = _files(catalog, node)
    return DirectoryPage(
        store_version=catalog.store_version,
        path=node.path,
        name=node.name if node.path != "/" else "",
        title=title or node.name,
        summary=summary,
        key_terms=key_terms,
        description=node.description,
        breadcrumb=breadcrumb(catalog, node.path),
        memories=catalog.memory_count(node.path),
        directories=[_entry(catalog, child) for child in node.children],
        files=files[offset : offset + limit],
        files_total=len(files),
        offset=offset,
    )


def breadcrumb(catalog: StoreCatalog, path: str) -> list[Crumb]:
    crumbs = []
    for step in breadcrumb_paths(normalized_directory(path)):
        node = catalog.directory(step)
        name = node.name if node is not None and step != "/" else step.rsplit("/", 1)[-1]
        crumbs.append(Crumb(path=step, name=name))
    return crumbs


def _entry(catalog: StoreCatalog, node: DirectoryNode) -> DirectoryEntry:
    return DirectoryEntry(
        path=node.path,
        name=node.name,
        description=node.description,
        memories=catalog.memory_count(node.path),
        directories=len(node.children),
    )


def _files(catalog: StoreCatalog, node: DirectoryNode) -> list[MemoryEntry]:
    entries = [
        MemoryEntry(
            chunk_id=row["chunk_id"], title=row["title"], tldr=row["tldr"], path=row["path"]
        )
        for row in catalog.memory_rows(node.chunk_indices)
    ]
    return sorted(entries, key=lambda entry: entry.path)
