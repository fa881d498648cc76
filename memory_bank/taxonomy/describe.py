"""Directory descriptions: one line each, from the terms naming chose and the central memory's
TL;DR (leaves) or the subdirectories with their sizes (parents)."""

from __future__ import annotations

from collections.abc import Sequence

LISTED_CHILDREN = 7  # subdirectories a description names before "and N more"
MAX_TLDR_CHARS = 200

Listed = tuple[str, int]  # a subdirectory's label in a description and its number of memories


def join_words(words: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def one_line(text: str) -> str:
    """Collapse whitespace so the text fits on one Markdown line."""
    return " ".join(text.split())


def clip_sentence(text: str, limit: int = MAX_TLDR_CHARS) -> str:
    """One line, at most `limit` characters (cut at a word), ending in sentence punctuation."""
    line = one_line(text)
    if len(line) > limit:
        cut = line[:limit].rsplit(" ", 1)[0] if " " in line[:limit] else line[:limit]
        return cut.rstrip(",;:") + "…"
    return end_sentence(line)


def end_sentence(text: str) -> str:
    """`text` on one line with closing punctuation ("." added when it has none)."""
    line = one_line(text)
    return line if not line or line[-1] in ".!?。！？…" else line + "."


def describe(shown: Sequence[str], central_tldr: str | None) -> str:
    """A leaf: "Memories about X, Y and Z, including: <tldr of the most central memory>."

    `shown` are the terms to name, spelled for display (see `distinct_terms`).
    """
    example = clip_sentence(central_tldr) if central_tldr and central_tldr.strip() else ""
    if shown and example:
        return f"Memories about {join_words(shown)}, including: {example}"
    if shown:
        return f"Memories about {join_words(shown)}."
    if example:
        return f"Memories such as: {example}"
    return "Memories grouped by similarity."


def count_memories(count: int) -> str:
    return f"{count:,} memor{'y' if count == 1 else 'ies'}"


def list_children(children: Sequence[Listed]) -> str:
    """ "a (8), b (7) and c (6)": labels with sizes, largest first, at most `LISTED_CHILDREN`."""
    largest_first = sorted(children, key=lambda child: -child[1])  # stable: ties keep order
    shown = [f"{label} ({size:,})" for label, size in largest_first[:LISTED_CHILDREN]]
    if len(children) > LISTED_CHILDREN:
        shown.append(f"{len(children) - LISTED_CHILDREN} more")
    return join_words(shown)


def describe_parent(about: Sequence[str], children: Sequence[Listed]) -> str:
    """A parent or the root: "21 memories about coffee and sourdough in 3 subdirectories:
    sourdough starter (8), photosynthesis (7) and coffee beans (6)."

    `about` are display terms (none for the root); `children` are (label, memory count) pairs.
    """
    total = sum(size for _, size in children)
    topic = f" about {join_words(list(about))}" if about else ""
    kind = "subdirectory" if len(children) == 1 else "subdirectories"
    return f"{count_memories(total)}{topic} in {len(children)} {kind}: {list_children(children)}."


def humanize(name: str) -> str:
    """ "neural_networks" -> "neural networks"."""
    return name.replace("_", " ").strip()
