"""Each chunk's sentences read for claims, kept beside its chunks segment.

The graph step compares a new memory with stored ones sentence by sentence (`sentence_facts`:
values, frame, cues). Reading a sentence is a dozen regular expressions; a process that opens a
store for a small change read every candidate's sentences again, most of what its graph step
cost beyond a warm one. So every chunks segment a commit writes carries its rows' sentence facts
as an attachment (`<segment>.facts.parquet`: a chunk id, a digest of its text and its
sentences' facts per row), and the graph reads them back for the candidates it compares instead
of reading their text again. A segment written by merging others (compaction, a rebuild) carries
their rows over by chunk id and text digest, so only new text is ever read.

Facts are a function of a sentence's text and of the rules that read it; the attachment names
those rules (`facts_version`: a digest of the modules that read a sentence), and one made under
other rules is not read. They are looked up by sentence text, so a chunk whose text changed
under the same id simply finds none of its new sentences. A segment without the attachment (a
store written before it, or without a graph) is read as the text it holds."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from memory_bank.graph import openings as openings_module
from memory_bank.graph import sentence_facts as sentence_facts_module
from memory_bank.graph import values as values_module
from memory_bank.graph.sentence_facts import SentenceFacts
from memory_bank.graph.subjects import text_facts
from memory_bank.graph.values import Value
from memory_bank.store import layout
from memory_bank.store.segments import attached, read_matching, text_digest
from memory_bank.text import lexicon as lexicon_module
from memory_bank.text import sentences as sentences_module

CHUNKS_TABLE = "chunks"
FACTS_SUFFIX = ".facts.parquet"
_VERSION_KEY = b"facts_version"
# A commit reads its candidates' rows, a few hundred anywhere in the store: row groups of a
# few chunks' sentences each, so that reading one row decodes little else.
_ROW_GROUP_ROWS = 64
_VALUE = pa.struct(
    [
        ("text", pa.string()),
        ("key", pa.string()),
        ("kind", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
    ]
)
_FACTS = pa.struct(
    [
        ("text", pa.string()),
        ("values", pa.list_(_VALUE)),
        ("frame", pa.list_(pa.string())),
        ("replaces", pa.bool_()),
        ("announces", pa.bool_()),
        ("single_role", pa.bool_()),
        ("subject_end", pa.int32()),
        ("refers_back", pa.bool_()),
        ("role_objects", pa.list_(pa.string())),
    ]
)
_SCHEMA = pa.schema(
    [
        ("chunk_id", pa.string()),
        ("digest", pa.string()),  # of the chunk's text: what the facts were read from
        ("sentences", pa.list_(_FACTS)),
    ]
)


@cache
def facts_version() -> str:
    """A digest of the code that reads a sentence: facts stored under another are read anew."""
    digest = hashlib.blake2b(digest_size=8)
    for module in (
        sentence_facts_module,
        values_module,
        openings_module,
        lexicon_module,
        sentences_module,
    ):
        digest.update(Path(module.__file__ or "").read_bytes())
    digest.update(str(lexicon_module.STEMS_VERSION).encode())
    return digest.hexdigest()


def facts_attachment(table: str, rows: pa.Table, path: Path, earlier: Sequence[Path]) -> list[str]:
    """The segment hook writing a chunks segment's sentence facts beside it. A chunk whose text
    a merged segment's attachment (`earlier`) already read under these rules is carried over
    from it, not read again."""
    if table != CHUNKS_TABLE:
        return []
    texts = rows.column("text").to_pylist()
    chunk_ids = rows.column("chunk_id").to_pylist()
    digests = [text_digest(text) for text in texts]
    carried = _carried(earlier, chunk_ids, digests)
    have = set(carried.column("chunk_id").to_pylist())
    fresh = [
        (chunk_id, digest, text)
        for chunk_id, digest, text in zip(chunk_ids, digests, texts, strict=True)
        if chunk_id not in have
    ]
    made = pa.table(
        {
            "chunk_id": [chunk_id for chunk_id, _, _ in fresh],
            "digest": [digest for _, digest, _ in fresh],
            "sentences": [
                [_facts_row(f) for f in text_facts(text, all_sentences=True).sentences]
                for _, _, text in fresh
            ],
        },
        schema=_SCHEMA,
    )
    name = path.name.removesuffix(".parquet") + FACTS_SUFFIX
    pq.write_table(
        pa.concat_tables([carried, made]).replace_schema_metadata(
            {_VERSION_KEY: facts_version().encode()}
        ),
        path.parent / name,
        row_group_size=_ROW_GROUP_ROWS,
    )
    return [name]


def _carried(earlier: Sequence[Path], chunk_ids: list[str], digests: list[str]) -> pa.Table:
    """The rows of the facts attachments among `earlier` made under these rules for one of
    `chunk_ids` with its text's digest, one per chunk."""
    wanted = pa.array([f"{c}\0{d}" for c, d in zip(chunk_ids, digests, strict=True)])
    parts = []
    for path in earlier:
        if not path.name.endswith(FACTS_SUFFIX):
            continue
        try:
            if _version_of(path) != facts_version():
                continue
            table = pq.read_table(path).select(_SCHEMA.names).cast(_SCHEMA)
        except (OSError, pa.ArrowException, KeyError):
            continue  # gone or unreadable: its chunks are read again
        keys = pc.binary_join_element_wise(table["chunk_id"], table["digest"], "\0")
        parts.append(table.filter(pc.is_in(keys, value_set=wanted)))
    if not parts:
        return _SCHEMA.empty_table()
    found = pa.concat_tables(parts)
    first = {}
    for row, chunk_id in enumerate(found.column("chunk_id").to_pylist()):
        first.setdefault(chunk_id, row)
    return found.take(pa.array(sorted(first.values()), pa.int64()))


def _version_of(path: Path) -> str | None:
    metadata = pq.read_schema(path).metadata or {}
    value = metadata.get(_VERSION_KEY)
    return value.decode() if value is not None else None


def stored_facts(
    version_dir: Path | None, chunk_ids: Iterable[str]
) -> dict[str, dict[str, SentenceFacts]]:
    """Chunk id -> sentence text -> facts, for the chunks of `chunk_ids` whose segments in the
    version in `version_dir` carry them under this code's `facts_version` (the others left
    out)."""
    wanted = sorted(set(chunk_ids))
    if version_dir is None or not wanted:
        return {}
    found: dict[str, dict[str, SentenceFacts]] = {}
    for _, path in attached(version_dir / layout.BANK_DIR, CHUNKS_TABLE, FACTS_SUFFIX) or []:
        try:
            if path is None or _version_of(path) != facts_version():
                continue
            rows = read_matching(path, "chunk_id", wanted, ["chunk_id", "sentences"])
        except (OSError, pa.ArrowException):
            continue  # unreadable: the sentences are read from the text instead
        for chunk_id, sentences in zip(
            rows.column("chunk_id").to_pylist(), rows.column("sentences").to_pylist(), strict=True
        ):
            found[chunk_id] = {row["text"]: _facts(row) for row in sentences}
    return found


def _facts_row(facts: SentenceFacts) -> dict:
    return {
        "text": facts.text,
        "values": [
            {"text": v.text, "key": v.key, "kind": v.kind, "start": v.start, "end": v.end}
            for v in facts.values
        ],
        "frame": sorted(facts.frame),
        "replaces": facts.replaces,
        "announces": facts.announces,
        "single_role": facts.single_role,
        "subject_end": facts.subject_end,
        "refers_back": facts.refers_back,
        "role_objects": sorted(facts.role_objects),
    }


def _facts(row: dict) -> SentenceFacts:
    # positional: a few times faster than keywords, and a cold commit reads thousands
    return SentenceFacts(
        row["text"],
        tuple(Value(v["text"], v["key"], v["kind"], v["start"], v["end"]) for v in row["values"]),
        frozenset(row["frame"]),
        row["replaces"],
        row["announces"],
        row["single_role"],
        row["subject_end"],
        row["refers_back"],
        frozenset(row["role_objects"]),
    )
