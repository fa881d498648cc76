"""The Markdown side of the store: chunk files with YAML frontmatter and their paths.

Memory texts, titles and TL;DRs come from documents we do not control, so everything that goes
into the frontmatter is emitted by a YAML library (never string-formatted) and every file and
directory name is checked against one strict pattern before it touches the filesystem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

import yaml

from memory_bank.errors import StoreError
from memory_bank.schemas import DirectoryNode, MemorizedChunk
from memory_bank.text.lexicon import MAX_NAME_LENGTH, is_valid_name, sanitize_name

README_NAME = "README.md"
# A chunk file may never shadow a directory's README, whatever its title is.
_RESERVED_TITLES = frozenset({"readme"})
FRONTMATTER_FIELDS = ("title", "index", "tldr", "keywords", "source", "document_id", "chunk_id")
_METADATA_FIELDS = ("source", "document_id", "chunk_id")
_FRONTMATTER_DELIMITER = "---"
# Any of these in a string would make the YAML emitter spread it over several lines.
_LINE_BREAKS = re.compile(r"[\r\n\x85\u2028\u2029]")

_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _FrontmatterDumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """A safe dumper that keeps every string on one line.

    A one-line frontmatter cannot contain a line that reads "---", so hostile text can never end
    the frontmatter early, whichever parser (ours, an editor, a static-site tool) reads the file.
    """


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if _LINE_BREAKS.search(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    # Always inline ("keywords: [a, b]"), also when an item needs quotes, so that no item can
    # start a line of its own.
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_FrontmatterDumper.add_representer(str, _represent_str)
_FrontmatterDumper.add_representer(list, _represent_list)


def directory_relative_path(directory: str) -> str:
    """Map a tree path ("/" or "/a/b") to a store-relative path ("" or "a/b"), checking names."""
    if directory == "/":
        return ""
    parts = directory.split("/")
    if parts[0] != "" or not all(is_valid_name(part) for part in parts[1:]):
        raise StoreError(
            f"invalid directory path {directory!r}: expected '/' or '/name/...' with names "
            "of lowercase letters, digits and '_', a letter first, at most 60 characters"
        )
    return "/".join(parts[1:])


def readme_relative_path(directory: str) -> str:
    """Store-relative path of the README of a tree directory ("/" -> "README.md")."""
    relative = directory_relative_path(directory)
    return f"{relative}/{README_NAME}" if relative else README_NAME


def render_chunk_file(memory: MemorizedChunk) -> str:
    """Render one memory as a Markdown file: YAML frontmatter, a blank line, the memory text."""
    missing = [key for key in _METADATA_FIELDS if not memory.metadata.get(key)]
    if missing:
        raise StoreError(f"memory {memory.index} lacks metadata needed in its file: {missing}")
    frontmatter = {
        "title": memory.title,
        "index": memory.index,
        "tldr": memory.tldr,
        "keywords": list(memory.keywords),
        **{key: str(memory.metadata[key]) for key in _METADATA_FIELDS},
    }
    header = yaml.dump(
        frontmatter,
        Dumper=_FrontmatterDumper,
        sort_keys=False,
        allow_unicode=True,
        width=2**31 - 1,  # never fold a long value onto a second line
    )
    # The trailing newline is ours; parse_chunk_file removes exactly that one again.
    return f"{_FRONTMATTER_DELIMITER}\n{header}{_FRONTMATTER_DELIMITER}\n\n{memory.memory}\n"


def parse_chunk_file(text: str) -> tuple[dict[str, Any], str]:
    """Split a chunk file into its frontmatter mapping and its body (the memory text)."""
    # Split on "\n" only: str.splitlines would also break at \x0c, \x85, \u2028, ... which are
    # ordinary characters of a memory body.
    lines = text.split("\n")
    if lines[0].rstrip("\r") != _FRONTMATTER_DELIMITER:
        raise StoreError("chunk file does not start with a '---' frontmatter line")
    closing = next(
        (i for i in range(1, len(lines)) if lines[i].rstrip("\r") == _FRONTMATTER_DELIMITER),
        None,
    )
    if closing is None:
        raise StoreError("chunk file frontmatter is not closed by a '---' line")
    try:
        frontmatter = yaml.load("\n".join(lines[1:closing]), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise StoreError(f"chunk file frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(frontmatter, dict):
        raise StoreError("chunk file frontmatter is not a mapping")
    newline = "\r\n" if lines[0].endswith("\r") else "\n"  # files edited on Windows
    body = "\n".join(lines[closing + 1 :]).removeprefix(newline)  # the blank line after "---"
    return frontmatter, body.removesuffix(newline)


def assign_chunk_paths(
    tree: DirectoryNode,
    memories: Iterable[MemorizedChunk],
    keep: Mapping[int, str] | None = None,
) -> dict[int, str]:
    """Give every memory in `tree` a store-relative file path "dir/sub/title.md".

    Titles are sanitized to valid names and made unique within their directory with `_2`, `_3`,
    ... suffixes, in index order so the result does not depend on list order. `keep` (memory
    index -> its current path) lets memories that stay in their directory keep their file name,
    so a path an earlier answer cited stays valid after other memories come and go.
    """
    by_index = {memory.index: memory for memory in memories}
    keep = keep or {}
    paths: dict[int, str] = {}
    for node in tree.iter_nodes():
        if not node.chunk_indices:
            continue
        directory = directory_relative_path(node.path)
        taken: set[str] = set(_RESERVED_TITLES)
        fresh: list[int] = []
        for index in sorted(node.chunk_indices):
            if index not in by_index:
                raise StoreError(f"directory {node.path} lists unknown memory {index}")
            if index in paths:
                raise StoreError(f"memory {index} is placed in more than one directory")
            kept = keep.get(index)
            if kept is not None and _parent_of(kept) == directory:
                name = PurePosixPath(kept).stem
                if name not in taken:
                    taken.add(name)
                    paths[index] = kept
                    continue
            fresh.append(index)
        for index in fresh:
            name = _unique_name(sanitize_name(by_index[index].title), taken)
            taken.add(name)
            paths[index] = f"{directory}/{name}.md" if directory else f"{name}.md"
    return paths


def _parent_of(relative: str) -> str:
    parent = PurePosixPath(relative).parent.as_posix()
    return "" if parent == "." else parent


def _unique_name(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    suffix = 2
    while True:
        tail = f"_{suffix}"
        candidate = base[: MAX_NAME_LENGTH - len(tail)].rstrip("_") + tail
        if candidate not in taken:
            return candidate
        suffix += 1
