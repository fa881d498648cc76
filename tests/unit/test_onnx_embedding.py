"""The packaged MiniLM on ONNX Runtime: the same vectors as on torch, exported once, offline."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from memory_bank.config import AppConfig, EmbeddingConfig, embedder_identity
from memory_bank.index import minilm_onnx
from memory_bank.index.embedding import Embedder
from memory_bank.ingest.work import memory_recipe
from tests.unit.test_embedding import (
    GIL_PARAGRAPH,
    HIDDEN_FACT_QUERY,
    _long_chunk_with_fact_at_the_end,
)

QUERIES = [
    HIDDEN_FACT_QUERY,
    "What is the GIL?",
    "東京タワーの高さは何メートルですか？",
    "Wann wurde der Kölner Dom vollendet?",
]
CHUNKS = [GIL_PARAGRAPH, _long_chunk_with_fact_at_the_end(), "東京タワーは1958年に完成した。"]


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return Embedder(EmbeddingConfig(runtime="torch", precision="float32", num_threads=1))


@pytest.fixture(scope="module")
def onnx_embedder() -> Embedder:
    return Embedder(EmbeddingConfig(runtime="onnx", query_precision="same", num_threads=1))


def test_onnx_query_vectors_equal_the_torch_ones(
    torch_embedder: Embedder, onnx_embedder: Embedder
) -> None:
    expected = torch_embedder.encode(QUERIES)
    batched = onnx_embedder.encode(QUERIES)
    one_by_one = np.concatenate([onnx_embedder.encode([query]) for query in QUERIES])
    for vectors in (batched, one_by_one):
        assert vectors.dtype == np.float32 and vectors.shape == expected.shape
        np.testing.assert_allclose(vectors, expected, atol=2e-5)


def test_onnx_chunk_and_sentence_vectors_equal_the_torch_ones(
    torch_embedder: Embedder, onnx_embedder: Embedder
) -> None:
    for exact, exported in zip(
        torch_embedder.encode_chunks(CHUNKS), onnx_embedder.encode_chunks(CHUNKS), strict=True
    ):
        assert exported.sentence_spans == exact.sentence_spans
        np.testing.assert_allclose(exported.vector, exact.vector, atol=2e-5)
        np.testing.assert_allclose(exported.sentence_vectors, exact.sentence_vectors, atol=2e-5)


def test_int8_vectors_stay_close_to_float32(torch_embedder: Embedder) -> None:
    quantized = Embedder(EmbeddingConfig(runtime="onnx", precision="int8", num_threads=1))
    agreement = np.sum(quantized.encode(QUERIES) * torch_embedder.encode(QUERIES), axis=1)
    assert agreement.min() > 0.97
    chunk = quantized.encode_chunks([GIL_PARAGRAPH])[0]
    np.testing.assert_allclose(np.linalg.norm(chunk.sentence_vectors, axis=1), 1.0, atol=1e-5)


def test_int8_queries_meet_float32_passages(onnx_embedder: Embedder) -> None:
    mixed = Embedder(EmbeddingConfig(runtime="onnx", query_precision="int8", num_threads=1))
    int8 = Embedder(EmbeddingConfig(runtime="onnx", precision="int8", num_threads=1))
    np.testing.assert_array_equal(mixed.encode(QUERIES), int8.encode(QUERIES))
    np.testing.assert_array_equal(
        mixed.encode_passages(QUERIES), onnx_embedder.encode_passages(QUERIES)
    )
    for kept, exact in zip(
        mixed.encode_chunks(CHUNKS), onnx_embedder.encode_chunks(CHUNKS), strict=True
    ):
        np.testing.assert_array_equal(kept.vector, exact.vector)
        np.testing.assert_array_equal(kept.sentence_vectors, exact.sentence_vectors)
    # Against the float32 sentence vectors, int8 queries rank as float32 queries do.
    sentences = np.concatenate([chunk.sentence_vectors for chunk in mixed.encode_chunks(CHUNKS)])
    for query in QUERIES:
        assert np.argmax(sentences @ mixed.encode([query])[0]) == np.argmax(
            sentences @ onnx_embedder.encode([query])[0]
        )


def test_int8_texts_get_their_own_vectors_when_encoded_together() -> None:
    int8 = Embedder(EmbeddingConfig(runtime="onnx", precision="int8", num_threads=2))
    texts = [*QUERIES, GIL_PARAGRAPH, "word " * 400, ""]
    together = int8.encode(texts)
    alone = np.concatenate([int8.encode([text]) for text in texts])
    np.testing.assert_array_equal(together, alone)


def test_query_precision_is_not_another_embedder() -> None:
    float32, mixed = AppConfig(), AppConfig(embedding=EmbeddingConfig(query_precision="int8"))
    assert embedder_identity(mixed.embedding) == embedder_identity(float32.embedding)
    assert memory_recipe(mixed) == memory_recipe(float32)  # no rebuild of existing stores


def test_the_export_is_made_once_and_reused(tmp_path, monkeypatch) -> None:
    exports = []
    export = minilm_onnx._export
    monkeypatch.setattr(
        minilm_onnx, "_export", lambda *args: (exports.append(args), export(*args))[1]
    )
    first = minilm_onnx.exported_model("float32", tmp_path)
    again = minilm_onnx.exported_model("float32", tmp_path)
    assert first == again and first.is_file() and len(exports) == 1
    assert first.parent.name == minilm_onnx.model_key(minilm_onnx.model_path())
    assert [path.name for path in first.parent.iterdir()] == ["model.float32.onnx"]  # no leftovers


def test_precision_must_fit_the_runtime() -> None:
    with pytest.raises(ValidationError, match="int8 needs embedding.runtime onnx"):
        EmbeddingConfig(runtime="torch", precision="int8")
    with pytest.raises(ValidationError, match="bfloat16 needs embedding.runtime torch"):
        EmbeddingConfig(runtime="onnx", precision="bfloat16")
    with pytest.raises(ValidationError, match="query_precision int8 needs embedding.runtime"):
        EmbeddingConfig(runtime="torch", precision="float32", query_precision="int8")


def test_giving_the_arena_back_after_a_call_leaves_the_vectors_alone(
    onnx_embedder: Embedder,
) -> None:
    model = onnx_embedder.model
    ids = np.array([[101, 7592, 2088, 102]], dtype=np.int64)
    mask = np.ones_like(ids)
    kept = model.token_embeddings(ids, mask)
    released = model.token_embeddings(ids, mask, last=True)
    again = model.token_embeddings(ids, mask)
    np.testing.assert_array_equal(released, kept)
    np.testing.assert_array_equal(again, kept)
