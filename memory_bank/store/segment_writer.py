"""`TableSetWriter`: the tables of a new store version as segments (see segments.py): the base
version's segments linked, new rows as new segments, removed rows as tombstones, compaction."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_bank.errors import StoreError
from memory_bank.store.atomic import atomic_write_text
from memory_bank.store.segments import (
    DEAD_SHARE,
    MAX_SEGMENTS,
    SEGMENTS_DIR,
    TABLES_MANIFEST,
    Segment,
    SegmentHook,
    TableEntry,
    TablesManifest,
    has_segments,
    live_mask,
    read_manifest,
    read_segment,
    segment_path,
    segment_write_options,
)


@dataclass
class _Pending:
    """A segment of the new version: linked from the base, new rows not yet written, or new
    rows already streamed into the target (`written`)."""

    segment: Segment | None = None  # an existing segment (of the base, unless `written`)
    rows: pa.Table | None = None  # rows to write as a new segment
    earlier: list[Path] = field(default_factory=list)  # attachments of segments merged into it
    written: bool = False  # `segment` was streamed into the target already (`append_batches`)


@dataclass
class _TableState:
    pending: list[_Pending] = field(default_factory=list)


class TableSetWriter:
    """Writes the tables of a new version into `target` (a `.bank` directory), starting from the
    segments of `base` (the previous version's `.bank`, or None for a new store).

    Use as a context manager: leaving the block without an error runs compaction, writes the new
    segments, links the kept ones and writes tables.json; `target` may equal `base` (the files
    are then already there)."""

    def __init__(
        self,
        base: Path | None,
        target: Path,
        on_segment: SegmentHook | None = None,
        max_segments: int = MAX_SEGMENTS,
    ) -> None:
        self.base = base if base is not None and has_segments(base) else None
        self.target = target
        self.on_segment = on_segment
        self.max_segments = max_segments
        self._base_manifest = read_manifest(self.base) if self.base else TablesManifest()
        self._tables: dict[str, _TableState] = {
            name: _TableState([_Pending(segment=s) for s in entry.segments])
            for name, entry in self._base_manifest.tables.items()
        }
        self.written_bytes = 0
        self.manifest: TablesManifest | None = None  # once finished

    def __enter__(self) -> TableSetWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.finish()

    # --- changes -------------------------------------------------------------------------

    def replace(self, name: str, rows: pa.Table) -> None:
        """The table becomes exactly `rows` (one new segment)."""
        for item in self._table(name).pending:
            self._drop_streamed(item)
        self._tables[name] = _TableState([_Pending(rows=rows)] if rows.num_rows else [])

    def append(self, name: str, rows: pa.Table) -> None:
        if rows.num_rows:
            self._tables.setdefault(name, _TableState()).pending.append(_Pending(rows=rows))

    def append_batches(self, name: str, batches: Iterable[pa.Table], schema: pa.Schema) -> int:
        """New rows given a batch at a time, written now as one segment (in row groups of
        at most ROW_GROUP_ROWS, like every segment), so they are never all in memory; returns
        how many. Such a segment gets no attachments: the hook needs all its rows at once."""
        directory = self.target / SEGMENTS_DIR / name
        directory.mkdir(parents=True, exist_ok=True)
        relative = f"{name}/{self._next_number(name):06d}-{secrets.token_hex(4)}.parquet"
        path = segment_path(self.target, relative)
        rows = 0
        options = segment_write_options(schema)
        row_group_size = options.pop("row_group_size")
        with pq.ParquetWriter(path, schema, **options) as parquet:
            for batch in batches:
                parquet.write_table(batch, row_group_size=row_group_size)
                rows += batch.num_rows
        if not rows:
            path.unlink()
            return 0
        self.written_bytes += path.stat().st_size
        segment = Segment(file=relative, rows=rows)
        self._table(name).pending.append(_Pending(segment=segment, written=True))
        return rows

    def keys(self, name: str, column: str) -> list[Any]:
        """The column's values over the table's live rows, in order (new rows included)."""
        values: list[Any] = []
        for item in self._table(name).pending:
            if item.rows is not None:
                values += item.rows.column(column).to_pylist()
            else:
                values += (
                    read_segment(self._bank(item), item.segment, [column])
                    .column(column)
                    .to_pylist()
                )
        return values

    def delete(self, name: str, column: str, keys: Collection[Any]) -> int:
        """Tombstone the live rows whose `column` is one of `keys`; returns how many."""
        if not keys:
            return 0
        value_set = pa.array(list(keys))
        removed = 0
        for item in self._table(name).pending:
            if item.rows is not None:
                doomed = pc.is_in(item.rows.column(column), value_set=value_set)
                removed += pc.sum(doomed).as_py() or 0
                item.rows = item.rows.filter(pc.invert(doomed))
                continue
            segment = item.segment
            values = read_segment(self._bank(item), segment, [column], live=False).column(column)
            hits = np.flatnonzero(
                pc.is_in(values, value_set=value_set).to_numpy(zero_copy_only=False)
            )
            mask = live_mask(segment)
            if mask is not None:
                hits = hits[mask[hits]]
            if len(hits):
                removed += len(hits)
                dead = _ranges(np.concatenate([_positions(segment.deleted), hits]))
                item.segment = segment.model_copy(update={"deleted": dead})
        return removed

    def tables(self) -> list[str]:
        return list(self._tables)

    def merge_tail(self, name: str, min_rows: int) -> None:
        """Merge the trailing segments of fewer than `min_rows` live rows each into one, once
        they hold `min_rows` together (the memories' latest adds, into one segment worth an
        HNSW graph)."""
        pending = self._table(name).pending
        start = len(pending)
        while start > 0 and self._live_rows(pending[start - 1]) < min_rows:
            start -= 1
        tail = pending[start:]
        if len(tail) > 1 and sum(self._live_rows(item) for item in tail) >= min_rows:
            pending[start:] = [self._merge(name, tail)]

    def compact(self, name: str) -> None:
        """Fold the table into one segment (a rebuild, or a change of what the rows mean)."""
        state = self._table(name)
        if not state.pending:
            return
        only = state.pending[0]
        if len(state.pending) == 1 and only.written and not only.segment.deleted:
            return  # streamed as one new segment already
        merged = self._merge(name, state.pending)
        state.pending = [merged] if merged.rows is not None and merged.rows.num_rows else []

    # --- finishing -----------------------------------------------------------------------

    def finish(self) -> TablesManifest:
        manifest = TablesManifest()
        for name, state in self._tables.items():
            self._fold_tombstones(name, state)
            self._bound_segments(name, state)
            segments = [self._written(name, item) for item in state.pending]
            manifest.tables[name] = TableEntry(segments=segments)
        self.manifest = manifest
        self.target.mkdir(parents=True, exist_ok=True)
        text = json.dumps(manifest.model_dump(mode="json"), indent=1) + "\n"
        # Replaced, never rewritten in place: the file may be a hard link of the base's.
        atomic_write_text(self.target / TABLES_MANIFEST, text)
        return manifest

    def _fold_tombstones(self, name: str, state: _TableState) -> None:
        folded = []
        for item in state.pending:
            segment = item.segment
            if segment is not None and segment.live_rows == 0:
                self._drop_streamed(item)
                continue
            if (
                segment is not None
                and segment.rows - segment.live_rows >= DEAD_SHARE * segment.rows
            ):
                item = self._merge(name, [item])
            folded.append(item)
        state.pending = [item for item in folded if item.rows is None or item.rows.num_rows]

    def _bound_segments(self, name: str, state: _TableState) -> None:
        pending = state.pending
        while len(pending) > self.max_segments:
            sizes = [self._live_rows(item) for item in pending]
            pair = min(range(len(pending) - 1), key=lambda i: sizes[i] + sizes[i + 1])
            pending[pair : pair + 2] = [self._merge(name, pending[pair : pair + 2])]

    def _merge(self, name: str, items: list[_Pending]) -> _Pending:
        tables = [
            item.rows if item.rows is not None else read_segment(self._bank(item), item.segment)
            for item in items
        ]
        earlier = [path for item in items for path in item.earlier]
        for item in items:
            if item.segment is not None:
                folder = segment_path(self._bank(item), item.segment.file).parent
                earlier.extend(folder / name for name in item.segment.attachments)
            self._drop_streamed(item)
        non_empty = [table for table in tables if table.num_rows] or tables[:1]
        rows = pa.concat_tables(non_empty, promote_options="permissive")
        return _Pending(rows=rows, earlier=earlier)

    def _written(self, name: str, item: _Pending) -> Segment:
        if item.segment is not None:
            if not item.written:
                self._link(item.segment)
            return item.segment
        directory = self.target / SEGMENTS_DIR / name
        directory.mkdir(parents=True, exist_ok=True)
        relative = f"{name}/{self._next_number(name):06d}-{secrets.token_hex(4)}.parquet"
        path = segment_path(self.target, relative)
        pq.write_table(item.rows, path, **segment_write_options(item.rows.schema))
        attachments = (
            self.on_segment(name, item.rows, path, item.earlier) if self.on_segment else []
        )
        self.written_bytes += path.stat().st_size
        self.written_bytes += sum((directory / a).stat().st_size for a in attachments)
        return Segment(file=relative, rows=item.rows.num_rows, attachments=attachments)

    def _link(self, segment: Segment) -> None:
        base = self._base()
        if base.resolve() == self.target.resolve():
            return
        parent = Path(segment.file).parent
        for relative in [segment.file, *(str(parent / a) for a in segment.attachments)]:
            source, link = segment_path(base, relative), segment_path(self.target, relative)
            link.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, link)
            except OSError:
                shutil.copyfile(source, link)

    def _next_number(self, name: str) -> int:
        numbers = [
            int(Path(s.file).name.split("-", 1)[0])
            for s in self._base_manifest.tables.get(name, TableEntry()).segments
        ]
        directory = self.target / SEGMENTS_DIR / name
        numbers += [int(p.name.split("-", 1)[0]) for p in directory.glob("*.parquet")]
        return max(numbers, default=0) + 1

    def _live_rows(self, item: _Pending) -> int:
        return item.rows.num_rows if item.rows is not None else item.segment.live_rows

    def _table(self, name: str) -> _TableState:
        return self._tables.setdefault(name, _TableState())

    def _drop_streamed(self, item: _Pending) -> None:
        """A streamed segment that leaves the table (merged, replaced, emptied) is not
        listed, so its file must not stay in the new version."""
        if item.written:
            segment_path(self.target, item.segment.file).unlink(missing_ok=True)

    def _bank(self, item: _Pending) -> Path:
        """The `.bank` directory holding the segment of `item`."""
        return self.target if item.written else self._base()

    def _base(self) -> Path:
        if self.base is None:
            raise StoreError("no base version to read segments from")
        return self.base


def _positions(ranges: list[tuple[int, int]]) -> np.ndarray:
    if not ranges:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([np.arange(start, stop) for start, stop in ranges])


def _ranges(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted, disjoint [start, stop) ranges covering `positions`."""
    unique = np.unique(positions)
    if not len(unique):
        return []
    breaks = np.flatnonzero(np.diff(unique) != 1) + 1
    return [(int(run[0]), int(run[-1]) + 1) for run in np.split(unique, breaks)]
