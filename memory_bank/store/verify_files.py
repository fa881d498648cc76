"""The Markdown side of `verify_store`: chunk files and directories on disk against the tables.

Files are read as exact UTF-8 bytes, without newline translation: a memory body may hold "\\r",
and the writer wrote it as is.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode
from memory_bank.store.files import (
    FRONTMATTER_FIELDS,
    README_NAME,
    parse_chunk_file,
    readme_relative_path,
)
from memory_bank.store.reader import StoreReader
from memory_bank.store.tables import directory_of


def read_store_text(reader: StoreReader, relative: str) -> str:
    """The exact text of a store file; raises StoreError, OSError or UnicodeDecodeError."""
    return reader.path(relative).read_bytes().decode("utf-8")


def readme_texts(reader: StoreReader, tree: DirectoryNode) -> dict[str, str]:
    """README text of each tree directory that has a readable one on disk; the others are left
    out, for `find_store_problems` to name as directories without a README."""
    texts = {}
    for node in tree.iter_nodes():
        try:
            texts[node.path] = read_store_text(reader, readme_relative_path(node.path))
        except (StoreError, OSError, UnicodeDecodeError):
            continue
    return texts


def chunk_file_problems(
    reader: StoreReader, memory_table: pa.Table, tree: DirectoryNode
) -> list[str]:
    """Every memory's file is at the path memories.parquet records, in the directory the tree
    lists the memory in, and its frontmatter and body are the table's."""
    leaf_of = {i: node.path for node in tree.iter_nodes() for i in node.chunk_indices}
    problems = []
    rows = memory_table.drop_columns(["embedding"]).to_pylist()
    for path, count in Counter(row["path"] for row in rows).items():
        if count > 1:
            problems.append(f"{count} memories share the chunk file {path}")
    for row in rows:
        index, path = row["index"], row["path"]
        where = f"memory {index} ({path})"
        if row["directory"] != directory_of(path):
            problems.append(f"{where}: directory column says {row['directory']}")
        if index in leaf_of and leaf_of[index] != directory_of(path):
            problems.append(f"{where}: the tree places it in {leaf_of[index]}")
        try:
            text = read_store_text(reader, path)
        except FileNotFoundError:
            problems.append(f"{where}: chunk file is missing")
            continue
        except (StoreError, OSError, UnicodeDecodeError) as exc:
            problems.append(f"{where}: chunk file is unreadable: {exc}")
            continue
        try:
            front, body = parse_chunk_file(text)
        except StoreError as exc:
            problems.append(f"{where}: {exc}")
            continue
        differing = [key for key in FRONTMATTER_FIELDS if front.get(key) != row[key]]
        if differing:
            shown = ", ".join(f"{k}={front.get(k)!r} (table: {row[k]!r})" for k in differing)
            problems.append(f"{where}: frontmatter differs from memories.parquet: {shown}")
        if body != row["memory"]:
            problems.append(f"{where}: body differs from the memory in memories.parquet")
    return problems


def disk_tree_problems(
    reader: StoreReader, memory_table: pa.Table, tree: DirectoryNode
) -> tuple[list[str], int]:
    """The visible files on disk are exactly the tree's directories, their READMEs and the
    memories' chunk files; returns the problems and how many chunk files were found."""
    directories = {node.path for node in tree.iter_nodes()}
    chunk_files = set(memory_table.column("path").to_pylist())
    seen_directories: set[str] = set()
    problems: list[str] = []
    found = 0
    for current, subdirectories, names in os.walk(reader.root):
        # Hidden entries (.bank/, .gam_meta.json, editor files) are not part of the tree.
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        relative = Path(current).relative_to(reader.root).as_posix()
        directory = "/" if relative == "." else f"/{relative}"
        seen_directories.add(directory)
        if directory not in directories:
            problems.append(f"directory {relative} on disk is not in tree.json")
        for name in sorted(n for n in names if not n.startswith(".")):
            file = name if relative == "." else f"{relative}/{name}"
            if name == README_NAME and directory in directories:
                continue
            if file in chunk_files:
                found += 1
                continue
            kind = "stray chunk file" if name.endswith(".md") else "stray file"
            problems.append(f"{kind} {file}: no memory points to it")
    problems += [
        f"directory {path} of tree.json is missing on disk"
        for path in sorted(directories - seen_directories)
    ]
    return problems, found
