"""Each memory's index words, kept beside its memories segment.

A directory's README index ranks the words of its subtree's memories against its siblings'
(`taxonomy.summary.subtree_index_terms`), so every commit that changes a README reads the
words of every memory of the store. Reading them is tokenizing each memory's title, keywords
and text; a commit adding a few memories to a large store spent most of its README stage
there. So every memories segment carries its rows' words as an attachment
(`<segment>.words.parquet`, one list of words per row, in row order), made when the segment is
written, and a commit reads the stored memories' words back and tokenizes only its own.
A segment without the attachment (a store written before it existed) is read as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memory_bank.schemas import MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.segments import SegmentHook, attached, live_mask
from memory_bank.store.vectors import MEMORIES_TABLE
from memory_bank.taxonomy.summary import index_text, index_words

WORDS_SUFFIX = ".words.parquet"
_WORDS_SCHEMA = pa.schema([pa.field("words", pa.list_(pa.string()), nullable=False)])


def words_attachment(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
    """The segment hook writing a memories segment's index words beside it."""
    if table != MEMORIES_TABLE:
        return []
    texts = {
        row: index_text(title, keywords or [], memory)
        for row, (title, keywords, memory) in enumerate(
            zip(
                rows.column("title").to_pylist(),
                rows.column("keywords").to_pylist(),
                rows.column("memory").to_pylist(),
                strict=True,
            )
        )
    }
    words = index_words(texts)
    name = path.name.removesuffix(".parquet") + WORDS_SUFFIX
    pq.write_table(
        pa.table({"words": [words[row] for row in range(rows.num_rows)]}, schema=_WORDS_SCHEMA),
        path.parent / name,
    )
    return [name]


def with_words(hook: SegmentHook) -> SegmentHook:
    """`hook`'s attachments plus the index words of memories segments."""

    def attach(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
        return [*hook(table, rows, path, earlier), *words_attachment(table, rows, path, earlier)]

    return attach


def stored_words(version_dir: Path | None, memories: Sequence[MemorizedChunk]) -> dict[str, list]:
    """Chunk id -> index words of the memories of the version in `version_dir` whose segments
    carry them; `memories` are that version's, any order. Empty when the version's tables
    cannot be matched with them (nothing is then assumed)."""
    if version_dir is None:
        return {}
    segments = attached(version_dir / layout.BANK_DIR, MEMORIES_TABLE, WORDS_SUFFIX)
    if segments is None:
        return {}
    words: list[list[str] | None] = []
    for segment, path in segments:
        if path is None:
            words.extend([None] * segment.live_rows)
            continue
        try:
            column = pq.read_table(path, columns=["words"]).column("words")
        except (OSError, pa.ArrowException):
            words.extend([None] * segment.live_rows)
            continue
        if len(column) != segment.rows:
            words.extend([None] * segment.live_rows)
            continue
        mask = live_mask(segment)
        words.extend((column if mask is None else column.filter(pa.array(mask))).to_pylist())
    ordered = sorted(memories, key=lambda memory: memory.index)
    if len(ordered) != len(words):
        return {}
    return {
        str(memory.metadata["chunk_id"]): found
        for memory, found in zip(ordered, words, strict=True)
        if found is not None
    }
