"""A huge single file streams: it is chunked window by window, journaled every
`store.journal_tokens` inside the document too, and a run killed half way resumes where the
journal ends, redoing no chunk it kept."""

from __future__ import annotations

import pytest

from memory_bank.config import AppConfig, ChunkConfig, StoreConfig
from memory_bank.ingest import stages
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.ingest.journal import IngestJournal
from memory_bank.ingest.progress import NullProgress, StageTimer
from memory_bank.ingest.runner import IngestRunner
from memory_bank.ingest.work import memory_recipe
from memory_bank.store.reader import StoreReader
from memory_bank.store.verify import verify_store
from memory_bank.text.sources import document_from_text, load_file

WINDOW = 4_000


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(stages, "STREAM_WINDOW_CHARS", WINDOW)


def huge_text(paragraphs: int = 120) -> str:
    return "\n\n".join(
        f"Log entry {n}: the ferry number {n} left harbour {n % 9} at {n % 12} o'clock with "
        f"{n * 7 % 300} passengers and reached island {n % 13} after {n % 5 + 1} hours at sea."
        for n in range(paragraphs)
    )


def config() -> AppConfig:
    return AppConfig(
        chunking=ChunkConfig(min_tokens=20, max_tokens=120),
        store=StoreConfig(journal_tokens=1_000),
    )


class CountingEmbedder:
    """The shared model, counting the chunks it is asked to embed."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.chunks = 0

    def encode_chunks(self, texts):
        self.chunks += len(texts)
        return self.embedder.encode_chunks(texts)

    def __getattr__(self, name):
        return getattr(self.embedder, name)


def test_windowed_chunks_cover_the_document_in_order(small_windows):
    doc = document_from_text(huge_text())
    chunks = stages.chunk_documents([doc], config().chunking)
    assert len(doc.text) > 3 * WINDOW
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert [c.chunk_id for c in chunks] == [
        f"{doc.document_id}-{n:05d}" for n in range(len(chunks))
    ]
    assert all(doc.text[c.start_char : c.end_char] == c.text for c in chunks)
    assert chunks == stages.chunk_documents([doc], config().chunking)  # the same every run


def test_a_killed_ingest_resumes_inside_the_document(small_windows, tmp_path, embedder):
    settings = config()
    doc_path = tmp_path / "log.txt"
    doc_path.write_text(huge_text(), encoding="utf-8")
    store = tmp_path / "store"
    journal = IngestJournal(store, memory_recipe(settings))
    doc = load_file(doc_path)
    total = len(stages.chunk_documents([doc], settings.chunking))
    batches = []

    class Killed(Exception):
        pass

    def save_then_die(part):
        journal.save(part)
        batches.append(len(part.memories))
        if len(batches) == 3:
            raise Killed  # as SIGKILL would, after the third batch reached the journal

    first = LocalExecutor(settings, embedder)
    with pytest.raises(Killed):
        first.memorize([doc], 0, StageTimer(NullProgress()), None, save_then_die)  # offline
    journaled, _ = journal.load([doc.document_id])
    assert len(journaled.chunks) == sum(batches) < total
    assert journaled.partial_documents == {doc.document_id}

    counting = CountingEmbedder(embedder)
    resumed = IngestRunner(settings, LocalExecutor(settings, counting), None)
    summary = resumed.run(store, files=[doc_path])

    assert counting.chunks == total - sum(batches)  # nothing the journal kept is made again
    assert summary.chunks == total
    stored = StoreReader(store).memories().column("chunk_id").to_pylist()
    assert sorted(stored) == [f"{doc.document_id}-{n:05d}" for n in range(total)]
    report = verify_store(store)
    assert report.ok, report.problems
    assert journal.batches() == []  # committed, so forgotten


def _logical_tables(store):
    reader = StoreReader(store)
    return {
        "documents": reader.documents(),
        "chunks": reader.chunks(),
        "memories": reader.memories(),
        "sentences": reader.sentences(),
        "readmes": reader.readmes(),
    }


def test_a_commit_from_many_journal_batches_equals_one_from_a_single_batch(
    small_windows, tmp_path, embedder
):
    """The commit streams a huge document's sentences batch file by batch file: the store is
    the same as when the whole document was one batch."""
    doc_path = tmp_path / "log.txt"
    doc_path.write_text(huge_text(), encoding="utf-8")
    stores = {}
    for name, tokens in (("tiny", 1_000), ("whole", 10**9)):
        settings = config().model_copy(update={"store": StoreConfig(journal_tokens=tokens)})
        saved = []
        executor = LocalExecutor(settings, embedder)
        memorize = executor.memorize

        def counting(*args, memorize=memorize, saved=saved, **kwargs):
            sink = kwargs.pop("on_batch")
            return memorize(*args, on_batch=lambda part: saved.append(sink(part)), **kwargs)

        executor.memorize = counting
        stores[name] = tmp_path / name
        IngestRunner(settings, executor, None).run(stores[name], files=[doc_path])
        stores[name, "batches"] = len(saved)
        assert verify_store(stores[name]).ok

    assert stores["whole", "batches"] == 1 < stores["tiny", "batches"]
    tiny, whole = _logical_tables(stores["tiny"]), _logical_tables(stores["whole"])
    for table in tiny:
        assert tiny[table].equals(whole[table]), table
    assert tiny["sentences"].num_rows > tiny["memories"].num_rows
    manifest = StoreReader(stores["tiny"]).root / ".bank" / "tables.json"
    assert '"sentences/' in manifest.read_text()


def test_the_commit_is_given_the_sentences_as_a_source_not_as_records(tmp_path, embedder):
    """What an ingest hands its commit: memories and vectors, the sentences left in the
    journal and read from it chunk by chunk."""
    settings = config()
    doc_path = tmp_path / "log.txt"
    doc_path.write_text(huge_text(40), encoding="utf-8")
    store = tmp_path / "store"
    journal = IngestJournal(store, memory_recipe(settings))
    doc = load_file(doc_path)
    LocalExecutor(settings, embedder).memorize(
        [doc], 0, StageTimer(NullProgress()), None, journal.save
    )
    parts, _ = journal.load([doc.document_id])
    assert parts.sentences == [] and parts.sentence_source is not None
    chunk_ids = [chunk.chunk_id for chunk in parts.chunks]
    rows = list(parts.sentence_source.batches(chunk_ids))
    assert len(rows) == len(journal.batches()) > 1  # one read per batch file
    read = [cid for batch in rows for cid in batch.column("chunk_id").to_pylist()]
    assert list(dict.fromkeys(read)) == chunk_ids  # chunk by chunk, in the order asked
    first = parts.chunks[0]
    vectors = parts.sentence_source.vectors(first.chunk_id)
    assert len(vectors) > 0
    assert all(text in first.text for text in vectors)
