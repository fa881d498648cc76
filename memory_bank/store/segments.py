"""Tables that grow by appending: immutable Parquet segments, tombstones and compaction.

A store version's tables live under `.bank/tables/<table>/` as segment files that are never
changed once written, listed in order by `.bank/tables.json`:

    {"format": 1, "tables": {"sentences": {"segments": [
        {"file": "sentences/000001-3fa2c1d0.parquet", "rows": 51744, "deleted": [[120, 151]]},
        {"file": "sentences/000002-9b01e4aa.parquet", "rows": 560, "deleted": []}]}}}

The logical table is the segments' rows in that order without the deleted ones (`deleted`:
sorted, disjoint [start, stop) row ranges of the segment: its tombstones). A commit writes a
new version directory: it hard-links the segments it keeps from the previous version, writes
new rows as a new segment, records removed rows as tombstones, and writes a new tables.json;
so a commit costs what it changes, and a reader of the previous version never sees a file
change. Compaction, in `finish`, keeps the number of segments and of dead rows bounded: a
segment whose tombstones reach `DEAD_SHARE` of its rows is rewritten without them (or dropped
when nothing is left), and beyond `MAX_SEGMENTS` the two adjacent segments with the fewest
rows are merged until the count fits; `compact()` folds a whole table into one segment (a
rebuild does). Merging adjacent segments keeps the logical row order.

A segment may carry attachments, files derived from its rows (the memories' vector index),
made by the `on_segment` hook whenever a segment is written and linked or dropped with it. A
segment written by merging others is given their attachments too (`earlier`), so that a hook
whose rows are keyed can carry what it made of them instead of making it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, Field, ValidationError

from memory_bank.errors import StoreError

TABLES_MANIFEST = "tables.json"  # under .bank/
SEGMENTS_DIR = "tables"  # under .bank/
FORMAT = 1
MAX_SEGMENTS = 12  # per table; beyond, the smallest adjacent pair merges
DEAD_SHARE = 0.25  # a segment with this share of rows deleted is rewritten without them
ROW_GROUP_ROWS = 2_048  # so a read of a few keys skips most of a large segment
# Columns no reader filters on, running text (a document's whole text, a chunk's, a memory's)
# and vectors: Parquet's statistics and dictionaries would copy a long value several times
# over while writing it, for nothing.
UNKEYED_COLUMNS = frozenset({"text", "memory", "tldr", "context", "embedding"})

# Called with (table name, the segment's rows, the segment's path) for every segment written;
# returns the file names of the attachments it wrote beside it (same directory).
# (table, rows, the new segment's path, the attachments of the segments merged into it) ->
# the names of the files it wrote beside the segment
SegmentHook = Callable[[str, pa.Table, Path, Sequence[Path]], list[str]]


def segment_write_options(schema: pa.Schema) -> dict[str, Any]:
    """`pq.write_table` / `pq.ParquetWriter` options of a segment: row groups of ROW_GROUP_ROWS,
    statistics and dictionaries for every column but the UNKEYED_COLUMNS."""
    kept = [path for field in schema for path in _leaf_paths(field) if not _unkeyed(path)]
    return {"row_group_size": ROW_GROUP_ROWS, "use_dictionary": kept, "write_statistics": kept}


def _leaf_paths(field: pa.Field) -> list[str]:
    """The Parquet column paths of an Arrow field ("keywords.list.element")."""
    if isinstance(field.type, pa.ListType | pa.LargeListType | pa.FixedSizeListType):
        return [
            f"{field.name}.list.{p}"
            for p in _leaf_paths(field.type.value_field.with_name("element"))
        ]
    if pa.types.is_struct(field.type):
        return [f"{field.name}.{p}" for child in field.type for p in _leaf_paths(child)]
    return [field.name]


def _unkeyed(path: str) -> bool:
    return path.split(".", 1)[0] in UNKEYED_COLUMNS or path.rsplit(".", 1)[-1] in UNKEYED_COLUMNS


class Segment(BaseModel):
    file: str  # relative to .bank/tables/
    rows: int = Field(ge=0)
    deleted: list[tuple[int, int]] = []  # tombstones: [start, stop) row ranges
    attachments: list[str] = []  # file names beside `file`

    @property
    def live_rows(self) -> int:
        return self.rows - sum(stop - start for start, stop in self.deleted)


class TableEntry(BaseModel):
    segments: list[Segment] = []


class TablesManifest(BaseModel):
    format: int = FORMAT
    tables: dict[str, TableEntry] = {}


# --- reading ----------------------------------------------------------------------------------


def has_segments(bank: Path) -> bool:
    return (bank / TABLES_MANIFEST).is_file()


def read_manifest(bank: Path) -> TablesManifest:
    path = bank / TABLES_MANIFEST
    try:
        manifest = TablesManifest.model_validate_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise StoreError(f"{path} is missing") from exc
    except (OSError, ValidationError, ValueError) as exc:
        raise StoreError(f"{path} is unreadable: {exc}") from exc
    if manifest.format != FORMAT:
        raise StoreError(f"{path}: table format {manifest.format}, this release reads {FORMAT}")
    return manifest


def segment_path(bank: Path, relative: str) -> Path:
    return bank / SEGMENTS_DIR / relative


def text_digest(text: str) -> str:
    """The key an attachment row is carried over by when its segment merges: a short digest of
    the text it was made from (a row made from other text is made again)."""
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def attached(bank: Path, table: str, suffix: str) -> list[tuple[Segment, Path | None]] | None:
    """Each segment of `table` in the version at `bank`, in order, with its attachment whose
    name ends in `suffix` (None for a segment without one); None when the version's manifest
    is unreadable or has no such table."""
    try:
        entry = read_manifest(bank).tables.get(table)
    except StoreError:
        return None
    if entry is None:
        return None
    found = []
    for segment in entry.segments:
        names = [name for name in segment.attachments if name.endswith(suffix)]
        path = segment_path(bank, segment.file).parent / names[0] if names else None
        found.append((segment, path))
    return found


def live_mask(segment: Segment) -> np.ndarray | None:
    """Which rows of the segment are live (None: all of them)."""
    if not segment.deleted:
        return None
    mask = np.ones(segment.rows, dtype=bool)
    for start, stop in segment.deleted:
        mask[start:stop] = False
    return mask


def read_segment(
    bank: Path, segment: Segment, columns: list[str] | None = None, *, live: bool = True
) -> pa.Table:
    """One segment's rows (without its tombstoned rows unless `live` is False)."""
    path = segment_path(bank, segment.file)
    try:
        table = pq.read_table(path, columns=columns)
    except FileNotFoundError as exc:
        raise StoreError(f"table segment {path} is missing") from exc
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"table segment {path} is unreadable: {exc}") from exc
    if table.num_rows != segment.rows:
        raise StoreError(f"table segment {path} has {table.num_rows} rows, listed {segment.rows}")
    mask = live_mask(segment) if live else None
    return table if mask is None else table.filter(pa.array(mask))


def read_table(
    bank: Path,
    name: str,
    columns: list[str] | None = None,
    where: tuple[str, Collection[Any]] | None = None,
    schema: pa.Schema | None = None,
    manifest: TablesManifest | None = None,
) -> pa.Table:
    """The logical table `name`: its segments' live rows in order. `where` = (column, values)
    keeps only rows whose column is one of the values (read with Parquet's row-group
    statistics, so a few keys do not read whole segments). `schema` gives the result's
    columns when the table has no segment."""
    manifest = manifest or read_manifest(bank)
    segments = manifest.tables.get(name, TableEntry()).segments
    parts = []
    for segment in segments:
        if where is None:
            parts.append(read_segment(bank, segment, columns))
        else:
            parts.append(_read_matching(bank, segment, columns, *where))
    if not parts:
        if schema is None:
            raise StoreError(f"table {name} has no segments and no schema was given")
        return (
            schema if columns is None else pa.schema([schema.field(c) for c in columns])
        ).empty_table()
    return pa.concat_tables(parts, promote_options="permissive")


def _read_matching(
    bank: Path, segment: Segment, columns: list[str] | None, column: str, values: Collection[Any]
) -> pa.Table:
    """The live rows of a segment whose `column` is one of `values`."""
    path = segment_path(bank, segment.file)
    try:
        return read_matching(path, column, values, columns, live_mask(segment))
    except FileNotFoundError as exc:
        raise StoreError(f"table segment {path} is missing") from exc
    except (OSError, pa.ArrowException) as exc:
        raise StoreError(f"table segment {path} is unreadable: {exc}") from exc


def read_matching(
    path: Path,
    column: str,
    values: Collection[Any],
    columns: list[str] | None = None,
    mask: np.ndarray | None = None,
) -> pa.Table:
    """The rows of the Parquet file at `path` whose `column` is one of `values` (and whose
    `mask` entry is true): the key column first, then only the row groups that hold a match.
    Raises what pyarrow raises."""
    parquet = pq.ParquetFile(path)
    keys = parquet.read(columns=[column]).column(column)
    hits = np.flatnonzero(
        pc.is_in(keys, value_set=pa.array(list(values), type=keys.type)).to_numpy(
            zero_copy_only=False
        )
    )
    if mask is not None:
        hits = hits[mask[hits]]
    metadata = parquet.metadata
    starts = np.cumsum(
        [0] + [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
    )
    groups = sorted({int(g) for g in np.searchsorted(starts, hits, side="right") - 1})
    if not groups:
        return parquet.schema_arrow.empty_table().select(columns or parquet.schema_arrow.names)
    table = parquet.read_row_groups(groups, columns=columns)
    group_starts = np.cumsum([0] + [metadata.row_group(g).num_rows for g in groups])
    offsets = {group: int(start) for group, start in zip(groups, group_starts, strict=False)}
    rows = [
        offsets[int(g)] + int(h - starts[g])
        for h, g in zip(hits, np.searchsorted(starts, hits, side="right") - 1, strict=True)
    ]
    return table.take(pa.array(rows, type=pa.int64()))


def referenced_files(manifest: TablesManifest) -> set[str]:
    """Every file under .bank/tables/ the manifest names (segments and attachments)."""
    files = set()
    for entry in manifest.tables.values():
        for segment in entry.segments:
            files.add(segment.file)
            parent = Path(segment.file).parent
            files.update(str(parent / name) for name in segment.attachments)
    return files


def segment_problems(bank: Path, manifest: TablesManifest) -> list[str]:
    """What is wrong with the segments tables.json lists: missing or unreadable files, row
    counts, tombstones out of order or range, missing attachments, files nobody lists."""
    problems = []
    for name, entry in manifest.tables.items():
        for segment in entry.segments:
            where = f"segment {segment.file} of {name}"
            path = segment_path(bank, segment.file)
            if not segment.file.startswith(f"{name}/"):
                problems.append(f"{where} lies outside its table's directory")
            try:
                rows = pq.ParquetFile(path).metadata.num_rows
            except (OSError, pa.ArrowException) as exc:
                problems.append(f"{where} is missing or unreadable: {exc}")
                continue
            if rows != segment.rows:
                problems.append(f"{where} has {rows} rows, tables.json says {segment.rows}")
            previous_stop = 0
            for start, stop in segment.deleted:
                if not previous_stop <= start < stop <= segment.rows:
                    problems.append(
                        f"{where}: tombstones {segment.deleted[:5]} are not sorted, "
                        f"disjoint ranges within its {segment.rows} rows"
                    )
                    break
                previous_stop = stop
            for attachment in segment.attachments:
                if not (path.parent / attachment).is_file():
                    problems.append(f"{where}: attachment {attachment} is missing")
    listed = referenced_files(manifest)
    directory = bank / SEGMENTS_DIR
    stray = sorted(
        str(p.relative_to(directory))
        for p in (directory.rglob("*") if directory.is_dir() else [])
        if p.is_file() and str(p.relative_to(directory)) not in listed
    )
    if stray:
        problems.append(
            f"files under .bank/{SEGMENTS_DIR}/ that tables.json does not list: {stray[:5]}"
        )
    return problems
