"""Which table format lets a store grow by appending: a measurement behind docs/store-format.md.

    python bench/table_formats.py [--memories 1753] [--sentences 54000] [--repeats 5]

Every commit of a store writes a whole new version directory beside the live one, hard-links
what did not change and switches a symlink; readers keep the version they opened. This script
builds tables shaped like the 1M-token store's (documents, chunks, memories, sentences: the
sentence table is most of the bytes) and, for each format, does what a commit that adds 1% new
documents would do: a new version directory with every file of the previous version
hard-linked, then the 1% appended in it. It prints, per format: seconds and bytes written
(files not shared with the previous version) for the add and for a removal of one document,
read latency of the tables a query touches (all sentences; all memories; the sentences of 10
chunks, as the graph step reads them), whether the previous version's files stayed
byte-identical (a format that rewrites a file in place would corrupt the version readers
hold), whether the version still reads after its directory is renamed (a build directory is
renamed into place), and the install size of the format's Python package.

Formats: `rewrite` (every table rewritten whole: the store before segments), `segments`
(memory_bank/store/segments.py: immutable Parquet segments, tombstones, a manifest), `lance`
(pylance) and `delta` (deltalake). The last two are not dependencies of memory-bank: install
them into a scratch venv beside pyarrow to run them (`pip install pylance deltalake`); a format
whose package is missing is reported as such.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DIM = 384
WORDS = [f"w{n}" for n in range(20_000)]
SENTENCES_PER_DOCUMENT = 280  # 54k sentences over 194 documents at 1M tokens
CHUNKS_PER_DOCUMENT = 9


# --- synthetic tables shaped like a 1M-token store ---------------------------------------------


def _text(rng: np.random.Generator, words: int) -> str:
    return " ".join(WORDS[i] for i in rng.zipf(1.3, words) % len(WORDS))


def _vectors(rng: np.random.Generator, rows: int) -> pa.FixedSizeListArray:
    matrix = rng.standard_normal((rows, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), DIM)


def make_tables(documents: int, seed: int) -> dict[str, pa.Table]:
    """documents, chunks, memories, sentences for `documents` documents (ids from `seed`)."""
    rng = np.random.default_rng(seed)
    doc_ids = [f"{seed:08x}{n:08x}" for n in range(documents)]
    chunk_ids = [f"{doc}-{c:05d}" for doc in doc_ids for c in range(CHUNKS_PER_DOCUMENT)]
    sentence_chunks = [
        chunk_ids[n * len(chunk_ids) // (documents * SENTENCES_PER_DOCUMENT)]
        for n in range(documents * SENTENCES_PER_DOCUMENT)
    ]
    return {
        "documents": pa.table(
            {"document_id": doc_ids, "text": [_text(rng, 3_500) for _ in doc_ids]}
        ),
        "chunks": pa.table(
            {
                "chunk_id": chunk_ids,
                "document_id": [c.split("-")[0] for c in chunk_ids],
                "text": [_text(rng, 400) for _ in chunk_ids],
            }
        ),
        "memories": pa.table(
            {
                "chunk_id": chunk_ids,
                "memory": [_text(rng, 120) for _ in chunk_ids],
                "embedding": _vectors(rng, len(chunk_ids)),
            }
        ),
        "sentences": pa.table(
            {
                "chunk_id": sentence_chunks,
                "sentence": list(range(len(sentence_chunks))),
                "text": [_text(rng, 25) for _ in sentence_chunks],
                "embedding": _vectors(rng, len(sentence_chunks)),
            }
        ),
    }


# --- formats ----------------------------------------------------------------------------------


class Format:
    """One way to keep the tables under a version directory's `.bank/`."""

    name = ""
    package: str | None = None

    def write(self, bank: Path, tables: dict[str, pa.Table]) -> None:
        raise NotImplementedError

    def append(self, bank: Path, tables: dict[str, pa.Table]) -> None:
        raise NotImplementedError

    def delete(self, bank: Path, document_id: str) -> None:
        raise NotImplementedError

    def read(self, bank: Path, table: str, columns: list[str] | None = None) -> pa.Table:
        raise NotImplementedError

    def read_chunks(self, bank: Path, chunk_ids: list[str]) -> pa.Table:
        table = self.read(bank, "sentences", ["chunk_id", "text", "embedding"])
        return table.filter(pc.is_in(table.column("chunk_id"), value_set=pa.array(chunk_ids)))


class Rewrite(Format):
    name = "rewrite"

    def write(self, bank, tables):
        for name, table in tables.items():
            pq.write_table(table, _replace_target(bank / f"{name}.parquet"))

    def append(self, bank, tables):
        self.write(bank, {n: pa.concat_tables([self.read(bank, n), t]) for n, t in tables.items()})

    def delete(self, bank, document_id):
        kept = {}
        for name in ("documents", "chunks", "memories", "sentences"):
            table = self.read(bank, name)
            kept[name] = table.filter(pc.invert(_of_document(table, document_id)))
        self.write(bank, kept)

    def read(self, bank, table, columns=None):
        return pq.read_table(bank / f"{table}.parquet", columns=columns)


class Segments(Format):
    name = "segments"

    def __init__(self) -> None:
        from memory_bank.store import segment_writer, segments

        self.segments = segments
        self.writer = segment_writer.TableSetWriter

    def write(self, bank, tables):
        with self.writer(None, bank) as writer:
            for name, table in tables.items():
                writer.replace(name, table)

    def append(self, bank, tables):
        with self.writer(bank, bank) as writer:
            for name, table in tables.items():
                writer.append(name, table)

    def delete(self, bank, document_id):
        with self.writer(bank, bank) as writer:
            for name in ("documents", "chunks", "memories", "sentences"):
                key = "document_id" if name in ("documents", "chunks") else "chunk_id"
                keys = writer.keys(name, key)
                doomed = [k for k in keys if k.startswith(document_id)]
                writer.delete(name, key, doomed)

    def read(self, bank, table, columns=None):
        return self.segments.read_table(bank, table, columns=columns)

    def read_chunks(self, bank, chunk_ids):
        return self.segments.read_table(
            bank, "sentences", ["chunk_id", "text", "embedding"], where=("chunk_id", chunk_ids)
        )


class Lance(Format):
    name = "lance"
    package = "pylance"

    def __init__(self) -> None:
        self.lance = importlib.import_module("lance")

    def write(self, bank, tables):
        for name, table in tables.items():
            self.lance.write_dataset(table, str(bank / name), mode="overwrite")

    def append(self, bank, tables):
        for name, table in tables.items():
            self.lance.write_dataset(table, str(bank / name), mode="append")

    def delete(self, bank, document_id):
        for name in ("documents", "chunks", "memories", "sentences"):
            column = "document_id" if name in ("documents", "chunks") else "chunk_id"
            self.lance.dataset(str(bank / name)).delete(f"{column} LIKE '{document_id}%'")

    def read(self, bank, table, columns=None):
        return self.lance.dataset(str(bank / table)).to_table(columns=columns)

    def read_chunks(self, bank, chunk_ids):
        listed = ", ".join(f"'{c}'" for c in chunk_ids)
        return self.lance.dataset(str(bank / "sentences")).to_table(
            columns=["chunk_id", "text", "embedding"], filter=f"chunk_id IN ({listed})"
        )


class Delta(Format):
    name = "delta"
    package = "deltalake"

    def __init__(self) -> None:
        self.deltalake = importlib.import_module("deltalake")

    def write(self, bank, tables):
        for name, table in tables.items():
            self.deltalake.write_deltalake(str(bank / name), table, mode="overwrite")

    def append(self, bank, tables):
        for name, table in tables.items():
            self.deltalake.write_deltalake(str(bank / name), table, mode="append")

    def delete(self, bank, document_id):
        for name in ("documents", "chunks", "memories", "sentences"):
            column = "document_id" if name in ("documents", "chunks") else "chunk_id"
            table = self.deltalake.DeltaTable(str(bank / name))
            table.delete(f"{column} LIKE '{document_id}%'")

    def read(self, bank, table, columns=None):
        dataset = self.deltalake.DeltaTable(str(bank / table)).to_pyarrow_dataset()
        return dataset.to_table(columns=columns)

    def read_chunks(self, bank, chunk_ids):
        dataset = self.deltalake.DeltaTable(str(bank / "sentences")).to_pyarrow_dataset()
        return dataset.to_table(
            columns=["chunk_id", "text", "embedding"],
            filter=pc.field("chunk_id").isin(chunk_ids),
        )


# --- measuring --------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    add_seconds: float = 0.0
    add_bytes: int = 0
    delete_seconds: float = 0.0
    delete_bytes: int = 0
    store_bytes: int = 0
    read_sentences_ms: float = 0.0
    read_memories_ms: float = 0.0
    read_10_chunks_ms: float = 0.0
    previous_intact: bool = False
    renamed_reads: bool = False
    install_mb: float = 0.0
    error: str = ""


def link_version(previous: Path, new: Path) -> None:
    """A new version directory with every file of `previous` hard-linked (as a commit does)."""
    for path in sorted(previous.rglob("*")):
        target = new / path.relative_to(previous)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(path, target)


def new_bytes(version: Path) -> int:
    """Bytes of the files in `version` that no other version shares (written by the commit)."""
    return sum(
        p.stat().st_size for p in version.rglob("*") if p.is_file() and p.stat().st_nlink == 1
    )


def total_bytes(version: Path) -> int:
    return sum(p.stat().st_size for p in version.rglob("*") if p.is_file())


def fingerprint(version: Path) -> dict[str, str]:
    return {
        str(p.relative_to(version)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(version.rglob("*"))
        if p.is_file()
    }


def median_ms(action: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def install_mb(package: str | None) -> float:
    if package is None:
        return 0.0
    files = importlib.metadata.distribution(package).files or []
    return sum(f.locate().stat().st_size for f in files if f.locate().is_file()) / 1e6


def measure(fmt: Format, base: dict, added: dict, work: Path, repeats: int) -> Result:
    result = Result(fmt.name, install_mb=install_mb(fmt.package))
    first, second, third = work / "v1" / ".bank", work / "v2" / ".bank", work / "v3" / ".bank"
    first.mkdir(parents=True)
    fmt.write(first, base)
    before = fingerprint(first.parent)

    link_version(first.parent, second.parent)
    started = time.perf_counter()
    fmt.append(second, added)
    result.add_seconds = time.perf_counter() - started
    result.add_bytes = new_bytes(second.parent)
    result.store_bytes = total_bytes(second.parent)
    result.previous_intact = fingerprint(first.parent) == before
    expected = base["sentences"].num_rows + added["sentences"].num_rows

    renamed = work / "v2-renamed"
    second.parent.rename(renamed)
    second = renamed / ".bank"
    result.renamed_reads = fmt.read(second, "sentences", ["chunk_id"]).num_rows == expected

    result.read_sentences_ms = median_ms(lambda: fmt.read(second, "sentences"), repeats)
    result.read_memories_ms = median_ms(lambda: fmt.read(second, "memories"), repeats)
    some = base["chunks"].column("chunk_id").to_pylist()[1000:1010]
    assert fmt.read_chunks(second, some).num_rows > 0
    result.read_10_chunks_ms = median_ms(lambda: fmt.read_chunks(second, some), repeats)

    link_version(second.parent, third.parent)
    started = time.perf_counter()
    fmt.delete(third, base["documents"].column("document_id")[0].as_py())
    result.delete_seconds = time.perf_counter() - started
    result.delete_bytes = new_bytes(third.parent)
    return result


def _replace_target(path: Path) -> Path:
    """Rewriting a hard-linked file in place would change the previous version: unlink first."""
    path.unlink(missing_ok=True)
    return path


def _of_document(table: pa.Table, document_id: str) -> pa.ChunkedArray:
    column = "document_id" if "document_id" in table.column_names else "chunk_id"
    return pc.starts_with(table.column(column), document_id)


def print_results(results: list[Result]) -> None:
    header = [
        "format",
        "add s",
        "add MB",
        "add / store",
        "remove 1 doc s",
        "remove MB",
        "read sentences ms",
        "read memories ms",
        "read 10 chunks ms",
        "old version intact",
        "reads renamed",
        "install MB",
    ]
    rows = [header]
    for r in results:
        if r.error:
            rows.append([r.name, r.error] + [""] * (len(header) - 2))
            continue
        rows.append(
            [
                r.name,
                f"{r.add_seconds:.2f}",
                f"{r.add_bytes / 1e6:.1f}",
                f"{r.add_bytes / r.store_bytes:.3f}",
                f"{r.delete_seconds:.2f}",
                f"{r.delete_bytes / 1e6:.1f}",
                f"{r.read_sentences_ms:.0f}",
                f"{r.read_memories_ms:.0f}",
                f"{r.read_10_chunks_ms:.1f}",
                "yes" if r.previous_intact else "NO",
                "yes" if r.renamed_reads else "NO",
                f"{r.install_mb:.0f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for number, row in enumerate(rows):
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))
        if number == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--documents", type=int, default=194, help="documents in the store")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--formats", default="rewrite,segments,lance,delta")
    args = parser.parse_args()
    added_documents = max(1, args.documents // 100)
    base = make_tables(args.documents - added_documents, seed=1)
    added = make_tables(added_documents, seed=2)
    kinds = {f.name: f for f in (Rewrite, Segments, Lance, Delta)}
    results = []
    for name in args.formats.split(","):
        with tempfile.TemporaryDirectory(prefix=f"formats-{name}-") as work:
            try:
                fmt = kinds[name]()
            except ImportError as exc:
                results.append(Result(name, error=f"not installed ({exc.name})"))
                continue
            results.append(measure(fmt, base, added, Path(work), args.repeats))
            shutil.rmtree(work, ignore_errors=True)
    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{args.documents} documents ({base['sentences'].num_rows + added['sentences'].num_rows:,} "
        f"sentences, {base['memories'].num_rows + added['memories'].num_rows:,} memories); "
        f"add {added_documents} documents; load average {load}; pyarrow {pa.__version__}"
    )
    print_results(results)


if __name__ == "__main__":
    main()
