"""`verify_store`: check every invariant of a committed store and name each violation.

A store is written whole by `write_store`, so a violation means something edited, lost or
corrupted it afterwards (or a writer bug). The check reads the store as it is, never repairs it,
and keeps going after a problem so one run lists all of them. What it checks, in order:

- tables: documents <-> chunks <-> memories <-> sentences (`find_store_problems`, which also
  validates the tree against the taxonomy config: every memory in exactly one leaf, depth and
  leaf bounds), plus the document and source each memory and chunk names;
- segments (tables.json): every listed segment there with its row count, tombstones sorted
  ranges within it, attachments present, no file under .bank/tables/ that nobody lists;
- vectors: memory and sentence vectors finite with 384 columns; the vector index holds exactly
  the memory vectors (each segment's HNSW graph its segment's rows; in a store written before
  segments, vectors.faiss the memories row for row);
- files: each memory's chunk file exists where memories.parquet says, in the tree directory
  that lists the memory, and its frontmatter and body equal the table's; no stray files; every
  tree directory on disk with a README.md, and no directory on disk outside the tree;
- readmes.parquet (optional): exactly the tree's directories, the READMEs' text, sound vectors;
- meta and manifest: counts and sources equal the tables, and store_version is the content hash
  `compute_store_version` gives (so query-side caches keyed by it cannot be stale);
- the BM25 cache of this store version, if the query side made one: it loads and scores one
  document per memory, each memory's row being that memory;
- every file the commit recorded in `.bank/hashes.parquet` is there with the bytes it wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from memory_bank.config import TaxonomyConfig
from memory_bank.errors import StoreError
from memory_bank.index.bm25 import BM25_RECIPE, INDEX_FORMAT, Bm25Index, LazyBm25Index
from memory_bank.schemas import DirectoryNode
from memory_bank.store import layout
from memory_bank.store.files import readme_relative_path
from memory_bank.store.integrity import HASHES_FILE, file_sha256, read_hashes
from memory_bank.store.reader import StoreReader
from memory_bank.store.segments import read_segment, segment_problems

# The meta keys writing computes, as the writer uses them, so the two cannot drift apart.
from memory_bank.store.snapshot import COMPUTED_META_KEYS
from memory_bank.store.tables import (
    EMBEDDING_DIM,
    check_vectors,
    chunks_from_table,
    documents_from_table,
    embeddings_to_numpy,
    memories_from_table,
    read_faiss_index,
    sentences_from_table,
)
from memory_bank.store.vectors import MEMORIES_TABLE, attachment_path, attachment_problems
from memory_bank.store.verify_files import chunk_file_problems, disk_tree_problems, readme_texts
from memory_bank.store.writer import compute_store_version, count_directories, find_store_problems

MAX_LISTED = 10  # problems of one kind spelled out; the rest are counted
_FAISS_BATCH = 10_000  # vectors compared per step, so a 100k store is not copied whole
_STANDARD_BANK_JSON = {
    PurePosixPath(layout.MANIFEST_FILE).name,
    PurePosixPath(layout.TREE_FILE).name,
    PurePosixPath(layout.TABLES_FILE).name,
}
_T = TypeVar("_T")


class VerifyReport(BaseModel):
    """The outcome of `verify_store`: `ok` when `problems` is empty."""

    store: str  # the resolved directory that was checked (one version of the store)
    store_version: str | None = None  # None when the store could not be opened
    ok: bool
    problems: list[str]
    counts: dict[str, int]
    notes: list[str] = []  # checked and harmless, e.g. a BM25 cache the query side will rebuild


def verify_store(store: str | Path, taxonomy_config: TaxonomyConfig | None = None) -> VerifyReport:
    """Check every invariant of the store at `store` (see the module docstring).

    The path is resolved once: a store path is a symlink to its current version, and a commit
    during the check must not make it compare two versions. `taxonomy_config` should be the one
    the store was built with (default: the default TaxonomyConfig).
    """
    root = Path(store).expanduser().resolve()
    try:
        reader = StoreReader(root)
    except StoreError as exc:
        return VerifyReport(store=str(root), ok=False, problems=[str(exc)], counts={})
    return _Verifier(reader, taxonomy_config or TaxonomyConfig()).run()


class _Verifier:
    def __init__(self, reader: StoreReader, taxonomy_config: TaxonomyConfig) -> None:
        self.reader = reader
        self.taxonomy_config = taxonomy_config
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.counts: dict[str, int] = {}

    def run(self) -> VerifyReport:
        r = self.reader
        # Each part loads on its own, so one unreadable table does not hide the other checks.
        documents = self._load(lambda: documents_from_table(r.documents()))
        chunks = self._load(lambda: chunks_from_table(r.chunks()))
        memory_table = self._load(r.memories)
        memories = None
        if memory_table is not None:
            memories = self._load(lambda: memories_from_table(memory_table))
        sentences = self._load(lambda: sentences_from_table(r.sentences()))
        tree = self._load(r.tree)
        readme_table = self._load(r.readmes)
        readmes = readme_texts(r, tree) if tree is not None else {}
        for name, rows in (
            ("documents", documents),
            ("chunks", chunks),
            ("memories", memories),
            ("sentences", sentences),
        ):
            if rows is not None:
                self.counts[name] = len(rows)
        if tree is not None:
            self.counts["directories"] = count_directories(tree)
            self.counts["readmes"] = len(readmes)

        if all(part is not None for part in (documents, chunks, memories, sentences, tree)):
            self.problems += find_store_problems(
                documents=documents,
                chunks=chunks,
                memories=memories,
                sentences=sentences,
                tree=tree,
                readmes=readmes,
                taxonomy_config=self.taxonomy_config,
            )
            self._check_references(documents, chunks, memory_table)
        if r.segmented:
            self._check_segments()
        vectors = self._check_vectors(memory_table)
        if memory_table is not None and tree is not None:
            self._add(chunk_file_problems(r, memory_table, tree))
            problems, self.counts["chunk_files"] = disk_tree_problems(r, memory_table, tree)
            self._add(problems)
        if readme_table is not None and tree is not None:
            self._check_readmes_table(readme_table, tree, readmes)
        if documents is not None and memories is not None and tree is not None:
            self._check_meta(documents, memories, tree)
            if vectors is not None and len(readmes) == self.counts["directories"] + 1:
                paths = dict(enumerate(memory_table.column("path").to_pylist()))
                self._check_store_version(documents, memories, tree, paths, readmes, vectors)
        if memory_table is not None:
            self._check_bm25_cache(memory_table)
        self._check_recorded_hashes()
        return VerifyReport(
            store=str(r.root),
            store_version=r.store_version,
            ok=not self.problems,
            problems=self.problems,
            counts=self.counts,
            notes=self.notes,
        )

    # --- tables ---------------------------------------------------------------------------

    def _check_references(self, documents, chunks, memory_table) -> None:
        """Each memory names its chunk's document and source; each chunk its document's source."""
        source_of = {doc.document_id: doc.source for doc in documents}
        chunk_of = {chunk.chunk_id: chunk for chunk in chunks}
        self._add(
            f"chunk {chunk.chunk_id}: source {chunk.source!r} but its document has "
            f"{source_of[chunk.document_id]!r}"
            for chunk in chunks
            if chunk.document_id in source_of and chunk.source != source_of[chunk.document_id]
        )
        self._add(
            f"memory {row['index']}: {key} {row[key]!r} but chunk {row['chunk_id']} has "
            f"{getattr(chunk_of[row['chunk_id']], key)!r}"
            for row in memory_table.select(
                ["index", "chunk_id", "document_id", "source"]
            ).to_pylist()
            if row["chunk_id"] in chunk_of
            for key in ("document_id", "source")
            if row[key] != getattr(chunk_of[row["chunk_id"]], key)
        )
        chunked = {chunk.document_id for chunk in chunks}
        self._add(
            f"document {doc_id} has no chunks" for doc_id in source_of if doc_id not in chunked
        )

    def _check_vectors(self, memory_table) -> np.ndarray | None:
        """Memory and sentence vectors are sound; faiss holds exactly the memory vectors."""
        sentence_vectors = self._load(self.reader.sentence_vectors)
        if sentence_vectors is not None:
            self._load(
                lambda: check_vectors(sentence_vectors, len(sentence_vectors), "sentence vectors")
            )
        if memory_table is None:
            return None
        vectors = self._load(self.reader.memory_vectors)
        if vectors is None:
            return None
        rows = memory_table.num_rows
        vectors = self._load(lambda: check_vectors(vectors, rows, "memory vectors"))
        if self.reader.segmented:
            self._check_segment_graphs(vectors)
            return vectors
        index = self._load(lambda: read_faiss_index(self.reader.root / layout.FAISS_FILE))
        if index is None or vectors is None:
            return vectors
        self.counts["faiss_vectors"] = index.ntotal
        if index.d != EMBEDDING_DIM:
            self._add([f"vectors.faiss has dimension {index.d}, expected {EMBEDDING_DIM}"])
        elif index.ntotal != rows:
            self._add([f"vectors.faiss holds {index.ntotal} vectors, memories.parquet {rows} rows"])
        else:
            for start in range(0, rows, _FAISS_BATCH):
                stop = min(start + _FAISS_BATCH, rows)
                try:
                    stored = index.reconstruct_n(start, stop - start)
                except RuntimeError as exc:  # an index type that keeps no vectors
                    self.notes.append(f"vectors.faiss: its vectors cannot be compared ({exc})")
                    break
                if not np.array_equal(stored, vectors[start:stop]):
                    mismatch = start + int(
                        np.flatnonzero((stored != vectors[start:stop]).any(1))[0]
                    )
                    self._add([f"vectors.faiss row {mismatch} is not memory {mismatch}'s vector"])
                    break
        return vectors

    def _check_segments(self) -> None:
        manifest = self._load(self.reader.table_manifest)
        if manifest is None:
            return
        bank = self.reader.root / layout.BANK_DIR
        self._add(segment_problems(bank, manifest))
        self.counts["segments"] = sum(len(entry.segments) for entry in manifest.tables.values())
        self.counts["tombstoned_rows"] = sum(
            segment.rows - segment.live_rows
            for entry in manifest.tables.values()
            for segment in entry.segments
        )

    def _check_segment_graphs(self, vectors: np.ndarray | None) -> None:
        """Each memories segment's HNSW graph holds its rows' vectors; the index as a whole
        answers with every memory."""
        manifest = self._load(self.reader.table_manifest)
        if manifest is None or vectors is None:
            return
        bank = self.reader.root / layout.BANK_DIR
        entry = manifest.tables.get(MEMORIES_TABLE)
        for segment in entry.segments if entry else []:
            if attachment_path(bank, segment) is None:
                continue
            rows = self._load(lambda s=segment: read_segment(bank, s, ["embedding"], live=False))
            if rows is not None:
                self._add(attachment_problems(bank, segment, embeddings_to_numpy(rows)))
        index = self._load(self.reader.faiss_index)
        if index is not None:
            self.counts["faiss_vectors"] = index.ntotal
            if index.ntotal != len(vectors):
                self._add(
                    [f"the vector index holds {index.ntotal} vectors, {len(vectors)} memories"]
                )

    # --- files ----------------------------------------------------------------------------

    def _check_readmes_table(self, table, tree: DirectoryNode, readmes: dict[str, str]) -> None:
        """readmes.parquet holds each tree directory once, with its README's text and a vector."""
        listed = table.column("directory").to_pylist()
        self.counts["readme_rows"] = len(listed)
        directories = {node.path for node in tree.iter_nodes()}
        if listed != sorted(set(listed)):
            self._add(["readmes.parquet: directories are not sorted and unique"])
        if set(listed) != directories:
            extra, lacking = sorted(set(listed) - directories), sorted(directories - set(listed))
            self._add(
                [f"readmes.parquet: rows for {extra[:5]} not in the tree; lacks {lacking[:5]}"]
            )
        self._add(
            f"readmes.parquet: text of {directory} differs from {readme_relative_path(directory)}"
            for directory, text in zip(listed, table.column("text").to_pylist(), strict=True)
            if directory in readmes and readmes[directory] != text
        )
        vectors = self._load(self.reader.readme_vectors)
        if vectors is not None:
            self._load(lambda: check_vectors(vectors, len(listed), "readmes.parquet vectors"))

    # --- meta, manifest, version ----------------------------------------------------------

    def _check_meta(self, documents, memories, tree: DirectoryNode) -> None:
        meta, manifest = self.reader.meta, self.reader.manifest
        expected = {
            "total_documents": len(documents),
            "total_chunks": len(memories),
            "total_directories": count_directories(tree),
            "source_files": sorted({doc.source for doc in documents}),
        }
        self._add(
            f"{layout.META_FILE} {key} is {meta.get(key)!r}, the store holds {value!r}"
            for key, value in expected.items()
            if meta.get(key) != value
        )
        if manifest.get("schema_version") != layout.MANIFEST_SCHEMA_VERSION:
            self._add([f"manifest.json schema_version is {manifest.get('schema_version')!r}"])
        listed = manifest.get("documents")
        actual = {doc.document_id: doc.source for doc in documents}
        if listed != actual:
            names = set(listed) if isinstance(listed, dict) else set()
            differing = sorted(names ^ set(actual)) or sorted(
                key for key in names if listed[key] != actual[key]
            )
            self._add([f"manifest.json documents differ from documents.parquet: {differing[:5]}"])

    def _check_store_version(self, documents, memories, tree, paths, readmes, vectors) -> None:
        """The version is the content hash, recomputed here as `write_store` computed it."""
        bank = self.reader.root / layout.BANK_DIR
        bank_json = {}
        for path in sorted(bank.glob("*.json")):
            if path.name not in _STANDARD_BANK_JSON:
                bank_json[path.name] = self._load(lambda p=path: json.loads(p.read_text("utf-8")))
        meta_extra = {k: v for k, v in self.reader.meta.items() if k not in COMPUTED_META_KEYS}
        version = compute_store_version(
            {doc.document_id: doc.source for doc in documents},
            tree,
            memories,
            paths,
            readmes,
            vectors,
            extra={"meta": meta_extra, "bank": bank_json},
        )
        if version != self.reader.store_version:
            self._add(
                [
                    f"store_version {self.reader.store_version} is not the content's hash "
                    f"({version}): the store was changed after it was written"
                ]
            )

    # --- what the store recorded of its files ------------------------------------------------

    def _check_recorded_hashes(self) -> None:
        """Every file the commit recorded is there with the bytes it wrote (`integrity.py`)."""
        root = self.reader.root
        if not (root / HASHES_FILE).is_file():
            self.notes.append(f"{HASHES_FILE} is absent: written before files were hashed")
            return
        recorded = self._load(lambda: read_hashes(root))
        if recorded is None:
            return
        self.counts["hashed_files"] = len(recorded)
        missing, changed = [], []
        for relative, expected in sorted(recorded.items()):
            try:
                actual = file_sha256(root / relative)
            except OSError:
                missing.append(relative)
                continue
            if actual != expected:
                changed.append(relative)
        self._add(f"{relative} is recorded in {HASHES_FILE} but missing" for relative in missing)
        self._add(
            f"{relative} was changed after the store wrote it (its SHA-256 is not the one "
            f"{HASHES_FILE} recorded)"
            for relative in changed
        )

    # --- BM25 cache -----------------------------------------------------------------------

    def _check_bm25_cache(self, memory_table) -> None:
        """The cache the query side would load for this version: one document per memory."""
        lazy = LazyBm25Index(
            self.reader.root / layout.BANK_DIR, self.reader.store_version, list, BM25_RECIPE
        )
        directory = lazy.directory
        if not directory.is_dir():
            return
        where = f"BM25 cache {directory.relative_to(self.reader.root)}"
        try:
            stamp = json.loads((directory / "stamp.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self.notes.append(f"{where}: no readable stamp ({exc}); the query side rebuilds it")
            return
        wanted = {"format": INDEX_FORMAT, "store_version": self.reader.store_version}
        wanted["recipe"] = BM25_RECIPE
        if {key: stamp.get(key) for key in wanted} != wanted:
            self.notes.append(f"{where}: stamp {stamp} is stale; the query side rebuilds it")
            return
        rows = memory_table.num_rows
        self.counts["bm25_documents"] = int(stamp.get("num_docs", -1))
        if stamp.get("num_docs") != rows:
            self._add([f"{where}: stamp says {stamp.get('num_docs')} documents, {rows} memories"])
            return
        try:
            index = Bm25Index.load(directory, rows)
        except Exception as exc:  # bm25s reports a damaged index in many ways (numpy, json, ...)
            self._add([f"{where}: does not load: {exc}"])
            return
        # Probe with memories' own titles: the scores must cover every memory, and a memory
        # must match its own title (its row is that memory), wherever the title matches at all.
        titles = memory_table.column("title").to_pylist()
        for probe in sorted({0, rows // 2, rows - 1} if rows else set()):
            scores = index.scores(titles[probe].replace("_", " "))
            if len(scores) != rows:
                self._add([f"{where}: scores {len(scores)} documents, the store has {rows}"])
                return
            if scores.max() > 0 and scores[probe] <= 0:
                self._add([f"{where}: row {probe} does not match memory {probe}'s title"])
                return

    # --- helpers --------------------------------------------------------------------------

    def _load(self, load: Callable[[], _T]) -> _T | None:
        """`load()`, or None with its error recorded as a problem."""
        try:
            return load()
        except (StoreError, ValidationError, OSError, ValueError) as exc:
            self.problems.append(str(exc))
            return None

    def _add(self, problems: Iterable[str]) -> None:
        """Record the problems one check found, spelling out the first MAX_LISTED (a damaged
        store can have thousands of the same kind)."""
        listed = list(problems)
        self.problems += listed[:MAX_LISTED]
        if len(listed) > MAX_LISTED:
            self.problems.append(f"... and {len(listed) - MAX_LISTED} more found by the same check")
