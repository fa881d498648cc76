"""QueryService and the retriever's README vectors: stored at ingest, reloaded only on change."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.app.service import QueryService
from memory_bank.config import AppConfig
from memory_bank.store import StoreReader
from tests.support import open_search
from tests.unit.query_fixtures import ML_TECH_STORE, PYTHON_ONLY_STORE, build_store, shared_embedder


class RecordingEmbedder:
    """The real embedder, remembering how many texts each `encode` call was given."""

    def __init__(self) -> None:
        self.inner = shared_embedder()
        self.batch_sizes: list[int] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.batch_sizes.append(len(texts))
        return self.inner.encode(texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        self.batch_sizes.append(len(texts))
        return self.inner.encode_passages(texts)


@pytest.fixture(scope="module")
def stores(tmp_path_factory, ml_tech_store):
    root = tmp_path_factory.mktemp("query_service")
    embedder = shared_embedder()
    with_vectors = ml_tech_store
    without_vectors = build_store(
        root / "without_vectors", ML_TECH_STORE, embedder, readme_vectors=False
    )
    return with_vectors, without_vectors


def test_readme_vectors_of_a_store_without_them_are_made_on_open_as_a_commit_makes_them(stores):
    with_vectors, without_vectors = stores
    stored = open_search(StoreReader(with_vectors), embedder=None).corpus.directories()
    made = open_search(StoreReader(without_vectors), embedder=None).corpus.directories()
    assert stored.paths == made.paths
    np.testing.assert_allclose(stored.vectors, made.vectors, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(made.vectors, axis=1), 1.0, atol=1e-5)
    assert stored.readme_terms == made.readme_terms
    assert stored.term_holders == made.term_holders
    for terms, holders, members in zip(
        stored.readme_terms, stored.term_holders, stored.subtree_chunks, strict=True
    ):
        assert set(holders) <= terms and all(0 < n <= len(members) for n in holders.values())


def test_warm_up_and_questions_embed_only_the_question(stores):
    for store in stores:
        recorder = RecordingEmbedder()
        service = QueryService(store, AppConfig(), embedder=recorder)
        service.warm_up()  # a warm-up question, one text at a time: no README is embedded
        result = service.ask("How does the GIL affect threads in CPython?")
        assert result.sources and result.confidence > 0.5
        assert recorder.batch_sizes and set(recorder.batch_sizes) == {1}


def test_the_store_is_reopened_only_when_its_version_changes(tmp_path):
    store = build_store(tmp_path / "store", ML_TECH_STORE, shared_embedder())
    service = QueryService(store, AppConfig(), embedder=shared_embedder())
    tree = service.tree()
    version = service.store_version
    assert service.tree() is tree  # nothing changed: the same open store

    build_store(store, ML_TECH_STORE, shared_embedder())  # rewritten, same content
    assert service.store_version == version
    assert service.tree() is tree

    build_store(store, PYTHON_ONLY_STORE, shared_embedder())
    assert service.store_version != version
    assert [child.path for child in service.tree().children] == ["/python"]
    hits = service.search("React hooks useState", top_k=3)
    assert hits and all(hit.chunk_path.startswith("python/") for hit in hits)


def test_a_repeated_query_is_embedded_once(stores):
    recorder = RecordingEmbedder()
    retriever = open_search(StoreReader(stores[0]), recorder)
    first = retriever.search("asyncio event loop", mode="vector")
    vector = retriever.hybrid.encode_query("asyncio event loop")
    assert retriever.search("asyncio event loop", mode="vector") == first
    assert recorder.batch_sizes == [1]
    np.testing.assert_array_equal(vector, shared_embedder().encode(["asyncio event loop"])[0])
    assert not vector.flags.writeable  # shared by every caller: nobody may change it
    retriever.search("a different query", mode="vector")
    assert recorder.batch_sizes == [1, 1]


def test_questions_embedded_together_are_then_answered_without_the_model(stores):
    recorder = RecordingEmbedder()
    retriever = open_search(StoreReader(stores[0]), recorder)
    questions = ["asyncio event loop", "React hooks useState", "the GIL and threads"]

    retriever.hybrid.encode_queries([*questions, questions[0]])
    hits = [retriever.search(question, mode="vector") for question in questions]

    assert recorder.batch_sizes == [3]  # one forward pass, duplicates once, none afterwards
    for question, found in zip(questions, hits, strict=True):
        alone = open_search(StoreReader(stores[0]), shared_embedder()).search(
            question, mode="vector"
        )
        assert [hit.chunk_path for hit in found] == [hit.chunk_path for hit in alone]
        batched = retriever.hybrid.encode_query(question)
        single = shared_embedder().encode([question])[0]
        assert float(batched @ single) > 0.9999  # padding in a batch changes nothing that counts
