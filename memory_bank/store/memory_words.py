"""Each memory's index words, kept beside its memories segment.

A directory's README index ranks the words of its subtree's memories against its siblings'
(`taxonomy.summary.subtree_index_terms`), so every commit that changes a README reads the
words of every memory of the store. Reading them is tokenizing each memory's title, keywords
and text; a commit adding a few memories to a large store spent most of its README stage
there. So every memories segment carries its rows' words as an attachment
(`<segment>.words.parquet`, one list of words per row, in row order, with a digest of the text
they are of), made when the segment is written, and a commit reads the stored memories' words
back and tokenizes only its own. A segment merged from others (compaction, the memories' tail)
carries their words over by digest. A segment without the attachment (a store written before it
existed) is read as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_bank.schemas import MemorizedChunk
from memory_bank.store import layout
from memory_bank.store.segments import SegmentHook, attached, live_mask, text_digest
from memory_bank.store.vectors import MEMORIES_TABLE
from memory_bank.taxonomy.summary import index_text, index_words

WORDS_SUFFIX = ".words.parquet"
_WORDS_SCHEMA = pa.schema(
    [
        pa.field("words", pa.list_(pa.string()), nullable=False),
        pa.field("digest", pa.string()),  # of the memory's index text, which the words are of
    ]
)


def words_attachment(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
    """The segment hook writing a memories segment's index words beside it; a memory whose
    words a merged segment's attachment (`earlier`) holds is carried over, not read again."""
    if table != MEMORIES_TABLE:
        return []
    texts = [
        index_text(title, keywords or [], memory)
        for title, keywords, memory in zip(
            rows.column("title").to_pylist(),
            rows.column("keywords").to_pylist(),
            rows.column("memory").to_pylist(),
            strict=True,
        )
    ]
    digests = [text_digest(text) for text in texts]
    known = _carried(earlier, digests)
    made = index_words({row: t for row, t in enumerate(texts) if digests[row] not in known})
    words = [known[d] if d in known else made[row] for row, d in enumerate(digests)]
    name = path.name.removesuffix(".parquet") + WORDS_SUFFIX
    pq.write_table(
        pa.table({"words": words, "digest": digests}, schema=_WORDS_SCHEMA), path.parent / name
    )
    return [name]


def _carried(earlier: Sequence[Path], digests: list[str]) -> dict[str, list[str]]:
    """Index text digest -> words, from the words attachments among `earlier` that hold
    digests (those written before them do not)."""
    wanted = pa.array(sorted(set(digests)), pa.string())
    found: dict[str, list[str]] = {}
    for path in earlier:
        if not path.name.endswith(WORDS_SUFFIX):
            continue
        try:
            table = pq.read_table(path, columns=["digest", "words"])
        except (OSError, pa.ArrowException):
            continue  # gone, unreadable or without digests: its memories are read again
        table = table.filter(pc.is_in(table["digest"], value_set=wanted))
        found.update(zip(table["digest"].to_pylist(), table["words"].to_pylist(), strict=True))
    return found


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
