"""README.md text for one directory, composed from its summary, its description and its children.

Format (seed 000 §3.2): a "# Title" line, the directory's summary (its highlights: the TL;DRs of
the central and diverse memories of its subtree, `summary.subtree_highlights`) followed by a
sentence on what it holds, or, without highlights, a 1-3 sentence description; then
"## Contents" with one bullet per subdirectory ("- **name/**: description") and per memory
("- **file.md**: tldr"); last, with index terms, "## Index": the words of the subtree's
memories that set it apart from its siblings, for search and for the README-only descent, kept
out of the way of a person reading the summary and the short key-term line.
READMEs are written bottom-up, so a parent can be described from its children with
`describe_directory` when the plan gave it none. A parent description that already lists its
subdirectories with their sizes (as the planner's do) is not followed by a second listing.
Deterministic: same input, same text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.describe import (
    LISTED_CHILDREN,
    count_memories,
    describe,
    describe_parent,
    end_sentence,
    humanize,
    join_words,
    list_children,
    one_line,
)
from memory_bank.taxonomy.naming import DESCRIPTION_TERMS, distinct_terms
from memory_bank.text.lexicon import name_words

DEFAULT_STORE_TITLE = "Memory Bank"
# Recorded in `.gam_meta.json` (`ingest.commit`): a release that writes READMEs differently
# bumps it, so the next commit rewrites every README instead of keeping the old ones.
README_FORMAT = 5
KEY_TERMS = 3
KEY_TERMS_HEADING = "## Key terms"
INDEX_NOTE = (
    "Words of the memories below, those that set this directory apart from its siblings first:"
)
PARENT_KEY_TERMS = 2
# Words of the description templates themselves ("Memories about ...", "in 3 subdirectories").
_TEMPLATE_WORDS = frozenset({"memories", "memory", "subdirectories", "subdirectory"})


@dataclass(frozen=True)
class ReadmeHighlight:
    """One sentence of a directory's summary and the memory file it is quoted from."""

    text: str  # the memory's TL;DR
    file: str  # path of the memory file relative to the directory, e.g. "sub/leaf/title.md"


@dataclass(frozen=True)
class SubtreeSummary:
    """What a directory's README says of its whole subtree (`taxonomy.summary`): the TL;DRs of
    its central and diverse memories, its most telling key terms, and the words of its
    memories, those that set it apart from its siblings first. Empty: the README describes its
    own entries only."""

    highlights: tuple[ReadmeHighlight, ...] = ()
    key_terms: tuple[str, ...] = ()
    index_terms: tuple[str, ...] = ()


NO_SUMMARY = SubtreeSummary()


@dataclass(frozen=True)
class ReadmeFileEntry:
    """One memory file of the directory."""

    name: str  # file name, e.g. "python_gil_threading.md"
    title: str
    tldr: str


def readme_title(node: DirectoryNode, store_title: str | None = None) -> str:
    """ "neural_networks" -> "Neural Networks"; the root is the store's title."""
    if node.path == "/" or not node.name:
        return one_line(store_title or "") or DEFAULT_STORE_TITLE
    return " ".join(word.capitalize() for word in node.name.split("_") if word)


def _child_texts(
    child_dirs: Sequence[DirectoryNode], files: Sequence[ReadmeFileEntry]
) -> list[str]:
    return [f"{child.name} {child.description}" for child in child_dirs] + [
        f"{entry.title} {entry.tldr}" for entry in files
    ]


def _key_terms(texts: Sequence[str], min_children: int = 1) -> list[str]:
    """Terms ranked by how many children use them, then by count, then alphabetically."""
    children_using: Counter[str] = Counter()
    occurrences: Counter[str] = Counter()
    for text in texts:
        terms = [term for term in name_words(text) if term not in _TEMPLATE_WORDS]
        occurrences.update(terms)
        children_using.update(set(terms))
    ranked = sorted(children_using, key=lambda t: (-children_using[t], -occurrences[t], t))
    return [term for term in ranked if children_using[term] >= min_children]


def describe_directory(
    child_dirs: Sequence[DirectoryNode], files: Sequence[ReadmeFileEntry]
) -> str:
    """A one-sentence description of a directory built from its children (bottom-up)."""
    if files:
        terms = _key_terms(_child_texts(child_dirs, files))
        return describe(distinct_terms(terms, DESCRIPTION_TERMS), files[0].tldr)
    if child_dirs:
        # Only terms several subdirectories share say what the directory as a whole is about.
        shared = _key_terms(_child_texts(child_dirs, files), min_children=2)
        return describe_parent(shared[:PARENT_KEY_TERMS], _subdirectory_sizes(child_dirs))
    return "An empty directory."


def _subdirectory_sizes(child_dirs: Sequence[DirectoryNode]) -> list[tuple[str, int]]:
    return [(humanize(child.name), _memory_count(child)) for child in child_dirs]


def _listed(names: Sequence[str]) -> str:
    shown = list(names[:LISTED_CHILDREN])
    if len(names) > LISTED_CHILDREN:
        shown.append(f"{len(names) - LISTED_CHILDREN} more")
    return join_words(shown)


def _structure_sentence(
    child_dirs: Sequence[DirectoryNode], files: Sequence[ReadmeFileEntry]
) -> str:
    dir_names = [humanize(child.name) for child in child_dirs]
    titles = [humanize(entry.title) or entry.name for entry in files]
    memories = f"{len(files)} memor{'y' if len(files) == 1 else 'ies'}"
    if child_dirs and files:
        return f"It has {len(child_dirs)} subdirectories ({_listed(dir_names)}) and {memories}."
    if child_dirs:
        kind = "subdirectory" if len(child_dirs) == 1 else "subdirectories"
        return f"It is organized into {len(child_dirs)} {kind}: {_listed(dir_names)}."
    if files:
        return f"It holds {memories}: {_listed(titles)}."
    return "It holds no memories yet."


def _memory_count(node: DirectoryNode) -> int:
    return sum(len(leaf.chunk_indices) for leaf in node.leaves())


def _closing_sentence(
    opening: str, child_dirs: Sequence[DirectoryNode], files: Sequence[ReadmeFileEntry]
) -> str | None:
    """Where the memories sit (for parents) or what several memories share (for leaves)."""
    if child_dirs:
        counts = [_memory_count(child) for child in child_dirs]
        total = sum(counts) + len(files)
        if not total or len(child_dirs) < 2:
            return None
        largest = max(range(len(counts)), key=lambda i: (counts[i], -i))
        return (
            f"Together they hold {total} memories, the most in "
            f"{humanize(child_dirs[largest].name)} ({counts[largest]})."
        )
    mentioned = set(name_words(opening))
    shared = _key_terms(_child_texts(child_dirs, files), min_children=2)
    fresh = [term for term in shared if term not in mentioned][:KEY_TERMS]
    return f"Several of them mention {join_words(fresh)}." if fresh else None


_ABOUT = re.compile(r"[Mm]emories about (.+?)(?:, including:| in \d+ subdirector|\.$)")


def _description_terms(description: str) -> str:
    """ "X, Y and Z" from a planned description "... memories about X, Y and Z ..."; "" else."""
    match = _ABOUT.search(one_line(description))
    return match.group(1) if match else ""


def _holding_sentence(
    child_dirs: Sequence[DirectoryNode], files: Sequence[ReadmeFileEntry], terms: str
) -> str:
    """ "It holds 12 memories about X and Y in 3 subdirectories: a (5), b (4) and c (3)." """
    about = f" about {terms}" if terms else ""
    if child_dirs:
        listed = list_children(_subdirectory_sizes(child_dirs))
        total = sum(_memory_count(child) for child in child_dirs) + len(files)
        kind = "subdirectory" if len(child_dirs) == 1 else "subdirectories"
        held = f"It holds {count_memories(total)}{about} in {len(child_dirs)} {kind}: {listed}"
        return held + (f", and {count_memories(len(files))} of its own." if files else ".")
    return f"It holds {count_memories(len(files))}{about}."


def _lists_subdirectories(opening: str, child_dirs: Sequence[DirectoryNode]) -> bool:
    """True when `opening` already names the subdirectories with their sizes."""
    return bool(child_dirs) and list_children(_subdirectory_sizes(child_dirs)) in opening


def _bullet(label: str, text: str) -> str:
    return f"- **{label}**: {text}"


def summary_text(highlights: Sequence[ReadmeHighlight]) -> str:
    """The summary paragraph: the highlights' sentences, one line."""
    return " ".join(
        end_sentence(highlight.text) for highlight in highlights if highlight.text.strip()
    )


def readme_key_terms(text: str) -> str:
    """The key-term line of a README `compose_readme` wrote ("" when it has none)."""
    _, found, rest = text.partition(f"\n{KEY_TERMS_HEADING}\n")
    return rest.strip().split("\n\n", 1)[0].strip() if found else ""


def compose_readme(
    node: DirectoryNode,
    child_dirs: Sequence[DirectoryNode],
    files: Sequence[ReadmeFileEntry],
    store_title: str | None = None,
    subtree: SubtreeSummary = NO_SUMMARY,
) -> str:
    """The README.md text of `node`, listing `child_dirs` first, then `files`, in given order.

    With the `subtree`'s highlights the README opens with them as the summary, then says what
    the directory holds; the description (what the parent lists for it) is not repeated. Its
    key terms are listed after that; its index terms (those not among the key terms) close the
    README."""
    key_terms, index_terms = subtree.key_terms, subtree.index_terms
    summary = summary_text(subtree.highlights)
    head = [f"# {readme_title(node, store_title)}", ""]
    if summary:
        terms = _description_terms(node.description)
        sentences = [_holding_sentence(child_dirs, files, terms)]
        extra = None if child_dirs else _closing_sentence(summary + " " + sentences[0], [], files)
        if extra:
            sentences.append(extra)
        head += [summary, "", " ".join(sentences)]
        if key_terms:
            head += ["", KEY_TERMS_HEADING, "", ", ".join(one_line(term) for term in key_terms)]
    else:
        opening = one_line(node.description) or describe_directory(child_dirs, files)
        sentences = [end_sentence(opening)]
        if not _lists_subdirectories(opening, child_dirs) or files:
            sentences.append(_structure_sentence(child_dirs, files))
            extra = _closing_sentence(opening, child_dirs, files)
            if extra:
                sentences.append(extra)
        head.append(" ".join(sentences))
    lines = [*head, "", "## Contents", ""]
    for child in child_dirs:
        text = one_line(child.description) or f"Memories on {humanize(child.name)}."
        lines.append(_bullet(f"{child.name}/", text))
    for entry in files:
        text = one_line(entry.tldr) or f"{humanize(entry.title) or entry.name}."
        lines.append(_bullet(entry.name, text))
    if not child_dirs and not files:
        lines.append("_No entries yet._")
    shown = {one_line(term).lower() for term in key_terms}
    indexed = [term for term in map(one_line, index_terms) if term and term.lower() not in shown]
    if indexed:
        lines += ["", "## Index", "", INDEX_NOTE, "", ", ".join(indexed)]
    return "\n".join(lines) + "\n"
