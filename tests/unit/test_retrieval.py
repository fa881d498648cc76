"""BM25 tokenization and index, and the Retriever's four search modes on a real store."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.config import AppConfig, RetrievalConfig
from memory_bank.errors import ConfigError, ToolError
from memory_bank.index.bm25 import Bm25Index, top_positive
from memory_bank.index.collapsed_tree import readme_excerpt
from memory_bank.ingest.runner import local_runner
from memory_bank.store import StoreReader
from memory_bank.text.lexicon import search_tokens as tokenize
from tests.fakes import HashingEmbedder
from tests.support import open_search
from tests.unit.query_fixtures import build_store, shared_embedder


@pytest.fixture(scope="module")
def reader(ml_tech_store):
    return StoreReader(ml_tech_store)


@pytest.fixture(scope="module")
def retriever(reader):
    return open_search(reader, shared_embedder(), RetrievalConfig())


def test_tokenize_lowercases_and_drops_stopwords_and_single_letters():
    assert tokenize("The GIL is a lock in CPython's interpreter (PEP 484, Python 3.11)") == [
        "gil",
        "lock",
        "cpython",
        "interpreter",
        "pep",
        "484",
        "python",
        "3",
        "11",
    ]
    assert tokenize("snake_case_title") == ["snake", "case", "title"]


def test_tokenize_segments_japanese_and_chinese_into_words():
    # Particles (は, の) and Chinese function words (的, 是) are no tokens; Han words longer than
    # two characters also give their bigrams, to meet a shorter segmentation of the same word.
    assert tokenize("BERTは言語モデルです") == ["bert", "言語", "モデル"]
    assert tokenize("東海道新幹線の駅") == [
        "東海道",
        "東海",
        "海道",
        "新幹線",
        "新幹",
        "幹線",
        "駅",
    ]
    assert tokenize("长城是中国的军事工程") == ["长城", "中国", "军事", "工程"]


def test_bm25_index_ranks_by_term_relevance_and_finds_japanese():
    documents = [
        "Python threads and the GIL",
        "React hooks: useState and useEffect hooks",
        "注意機構はトランスフォーマーの中心です",
        "",
    ]
    index = Bm25Index.build(documents)
    assert [i for i, _ in index.top_k("hooks", 3)] == [1]
    assert [i for i, _ in index.top_k("GIL threads python", 3)] == [0]
    assert [i for i, _ in index.top_k("注意機構", 3)] == [2]
    assert index.top_k("rust borrow checker", 3) == []
    assert Bm25Index.build([]).top_k("anything", 3) == []


def test_top_positive_orders_by_score_then_index():
    scores = np.array([0.5, 2.0, 0.0, 2.0, 1.0], dtype=np.float32)
    assert top_positive(scores, 4) == [(1, 2.0), (3, 2.0), (4, 1.0), (0, 0.5)]
    assert top_positive(scores, 10)[-1] == (0, 0.5)


@pytest.mark.parametrize("mode", ["bm25", "vector", "hybrid", "tree"])
def test_every_mode_returns_well_formed_hits_best_first(reader, retriever, mode):
    hits = retriever.search("How does BERT use masked language modeling?", top_k=4, mode=mode)
    assert 0 < len(hits) <= 4
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    memories = {
        row["path"]: row for row in reader.memories().drop_columns(["embedding"]).to_pylist()
    }
    chunk_texts = dict(
        zip(
            reader.chunks().column("chunk_id").to_pylist(),
            reader.chunks().column("text").to_pylist(),
            strict=True,
        )
    )
    for hit in hits:
        assert (reader.root / hit.chunk_path).is_file()
        if hit.kind == "chunk":
            row = memories[hit.chunk_path]
            assert (hit.chunk_id, hit.document_id) == (row["chunk_id"], row["document_id"])
            assert hit.text == chunk_texts[hit.chunk_id]
            assert (
                hit.source == row["source"] == f"docs/{hit.chunk_path}"
            )  # the path given to ingest
    chunk_hits = [hit for hit in hits if hit.kind == "chunk"]
    assert chunk_hits[0].chunk_path == "ml/transformers/bert_pretraining.md"
    assert chunk_hits[0].source == "docs/ml/transformers/bert_pretraining.md"


def test_hybrid_score_is_the_documented_mix_of_normalized_bm25_and_cosine(reader, retriever):
    query = "recurrent hidden state vanishing gradients"
    hits = retriever.search(query, top_k=3, mode="hybrid")
    bm25 = retriever.hybrid.bm25_scores(query)
    query_vector = shared_embedder().encode([query])[0]
    for hit in hits:
        index = retriever.corpus.index_of_path(hit.chunk_path)
        expected = 0.5 * bm25[index] / bm25.max() + 0.5 * float(
            reader.memory_vectors()[index] @ query_vector
        )
        assert hit.score == pytest.approx(expected, abs=1e-4)
    assert hits[0].chunk_path == "ml/sequence/rnn_hidden_state.md"


def test_alpha_moves_hybrid_between_vector_and_bm25_rankings(reader):
    query = "multiversion concurrency control readers writers"
    only_bm25 = open_search(reader, shared_embedder(), RetrievalConfig(alpha=1.0))
    only_vector = open_search(reader, shared_embedder(), RetrievalConfig(alpha=0.0))
    bm25_paths = [hit.chunk_path for hit in only_bm25.search(query, top_k=3, mode="bm25")]
    vector_paths = [hit.chunk_path for hit in only_vector.search(query, top_k=3, mode="vector")]
    assert [
        hit.chunk_path for hit in only_bm25.search(query, top_k=len(bm25_paths), mode="hybrid")
    ] == bm25_paths
    assert [
        hit.chunk_path for hit in only_vector.search(query, top_k=3, mode="hybrid")
    ] == vector_paths


def test_tree_mode_returns_a_matching_readme_with_its_subtree_chunks(retriever):
    hits = retriever.search("convolutional neural networks for images", top_k=5, mode="tree")
    readmes = [hit for hit in hits if hit.kind == "readme"]
    assert "ml/vision/README.md" in [hit.chunk_path for hit in readmes]
    vision = next(hit for hit in readmes if hit.chunk_path == "ml/vision/README.md")
    assert vision.chunk_id == "/ml/vision" and vision.text.startswith("# Vision")
    assert "Convolutional neural networks for images." in vision.text
    assert "## Contents" not in vision.text  # the summary, not the list of what follows anyway
    chunk_paths = {hit.chunk_path for hit in hits if hit.kind == "chunk"}
    assert {"ml/vision/cnn_convolution_layers.md", "ml/vision/cnn_pooling_resnet.md"} <= chunk_paths


def test_blank_queries_unknown_modes_and_missing_embedder(reader, retriever):
    assert retriever.search("   ", mode="hybrid") == []
    with pytest.raises(ToolError, match="unknown search mode"):
        retriever.search("attention", mode="fuzzy")
    lexical_only = open_search(reader, embedder=None)
    assert lexical_only.search("attention heads", mode="bm25")
    with pytest.raises(ConfigError, match="embedding model"):
        lexical_only.search("attention heads", mode="hybrid")


def test_an_empty_store_has_no_hits(tmp_path):
    empty = open_search(
        StoreReader(build_store(tmp_path / "empty", {}, shared_embedder())), shared_embedder()
    )
    for mode in ("bm25", "vector", "hybrid", "tree"):
        assert empty.search("anything at all", mode=mode) == []


def test_a_hit_carries_the_raw_chunk_text_not_its_shorter_memory(tmp_path):
    sentences = [
        f"Sourdough step {n} keeps the starter at {20 + n} degrees while the dough rests and rises slowly."
        for n in range(30)
    ]
    local_runner(AppConfig(), HashingEmbedder()).run(tmp_path / "store", text="\n".join(sentences))
    reader = StoreReader(tmp_path / "store")
    memory = reader.memories().column("memory").to_pylist()[0]
    chunk_text = reader.chunks().column("text").to_pylist()[0]
    assert len(memory) < len(chunk_text)  # offline memorize kept an extract of this long chunk
    hits = open_search(reader, HashingEmbedder()).search(
        "starter degrees dough", top_k=1, mode="hybrid"
    )
    assert hits[0].text == chunk_text


def test_a_readme_hit_keeps_the_summary_sentences_about_the_question_not_yet_returned():
    summary = (
        "# Sequence\n\nRecurrent networks carry a hidden state from step to step. LSTMs add "
        "gates so information persists. Transformers replaced both for long texts."
    )
    terms = frozenset(tokenize("How do LSTM gates keep information in recurrent networks?"))
    assert readme_excerpt(summary, terms, []) == (
        "# Sequence\n\nRecurrent networks carry a hidden state from step to step. LSTMs add "
        "gates so information persists."
    )
    returned = ["Long story short:\nRecurrent networks  carry a hidden state from step to step"]
    assert readme_excerpt(summary, terms, returned) == (
        "# Sequence\n\nLSTMs add gates so information persists."
    )
    assert readme_excerpt(summary, frozenset(tokenize("sourdough starter")), []) is None
    assert readme_excerpt("No heading, about gates.", terms, []) == "No heading, about gates."


def test_a_transcripts_summary_sentence_is_held_by_the_turn_it_quotes_with_its_markup():
    # A conversation's TL;DR leaves the transcript's markup out; the turn returned keeps it.
    summary = "# Remote\n\nMarketing: We want big buttons on the remote. PM: Rubber buttons, then."
    terms = frozenset(tokenize("Which buttons does the remote get?"))
    returned = ["Marketing: We {disfmarker} want big {vocalsound} buttons on the remote ."]
    assert readme_excerpt(summary, terms, returned) == "# Remote\n\nPM: Rubber buttons, then."


def test_a_clean_verbatim_summary_sentence_is_held_by_the_turn_as_said():
    # The TL;DR drops hesitations and repeats and capitalizes what a hesitation opened.
    summary = "# Remote\n\nMarketing: We want big buttons on the remote. PM: Rubber buttons, then."
    terms = frozenset(tokenize("Which buttons does the remote get?"))
    returned = ["Marketing: Uh we we want , um , big buttons on the the remote ."]
    assert readme_excerpt(summary, terms, returned) == "# Remote\n\nPM: Rubber buttons, then."


def test_a_short_question_meets_documents_stemmed_in_their_own_language(tmp_path):
    documents = [
        "Der Kölner Dom wurde 1880 vollendet. Die Türme sind 157 Meter hoch.",
        "The tea clippers raced each other from Foochow to London every season.",
        "La tour Eiffel fut construite pour l'Exposition universelle de 1889.",
    ]
    index = Bm25Index.build(documents)
    assert index.languages == ("english", "french", "german")
    # Two words are too few to tell German from English; the German stems still meet.
    assert [i for i, _ in index.top_k("vollendete Türme", 3)] == [0]
    assert [i for i, _ in index.top_k("construite", 3)] == [2]
    index.save(tmp_path)
    assert Bm25Index.load(tmp_path, 3).languages == index.languages
    english_only = Bm25Index.build(documents[1:2])
    assert english_only.languages == ("english",)
