"""Chunking along document structure within token bounds (seed 000 §5.2, §11.1)."""

from __future__ import annotations

import json
import random
import re

import pytest

from memory_bank.config import ChunkConfig
from memory_bank.schemas import Chunk, Document
from memory_bank.text.chunking import _Atom, _fit_runs, chunk_document
from memory_bank.text.sentences import split_sentence_spans
from memory_bank.text.sources import document_from_text, load_file
from memory_bank.text.tokens import count_tokens, get_encoding


def check_invariants(doc: Document, chunks: list[Chunk], config: ChunkConfig) -> None:
    assert chunks, "a non-empty document gives at least one chunk"
    previous_end = 0
    for position, chunk in enumerate(chunks):
        assert chunk.position == position
        assert chunk.chunk_id == f"{doc.document_id}-{position:05d}"
        assert (chunk.document_id, chunk.source) == (doc.document_id, doc.source)
        assert doc.text[chunk.start_char : chunk.end_char] == chunk.text
        assert chunk.text == chunk.text.strip() and chunk.text
        assert chunk.start_char >= previous_end  # in order, never overlapping
        assert doc.text[previous_end : chunk.start_char].strip() == ""  # nothing left out
        previous_end = chunk.end_char
        assert chunk.token_count == count_tokens(chunk.text, config.encoding)
        assert chunk.token_count <= config.max_tokens
        if position < len(chunks) - 1:
            assert chunk.token_count >= config.min_tokens, f"chunk {position} is too small"
    assert doc.text[previous_end:].strip() == ""


def sentence(rng: random.Random, words: list[str]) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(6, 24))).capitalize() + "."


def paragraph(topic: str, sentences: int) -> str:
    return " ".join(
        f"The {topic} note {i} adds one more plain fact about {topic}." for i in range(sentences)
    )


def markdown(sections: list[tuple[str, int]]) -> str:
    """Sections as (header line, number of sentences in its one paragraph)."""
    return "\n\n".join(f"{header}\n\n{paragraph(header.strip('# '), n)}" for header, n in sections)


def test_sections_that_fit_become_one_chunk_each():
    doc = document_from_text(
        markdown([("# Alpha", 8), ("## Beta", 10), ("## Gamma", 6), ("# Delta", 9)])
    )
    config = ChunkConfig(min_tokens=40, max_tokens=400)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert [chunk.section for chunk in chunks] == ["Alpha", "Beta", "Gamma", "Delta"]
    assert all(re.match(r"#+ ", chunk.text) for chunk in chunks)


def test_short_section_joins_the_following_one():
    doc = document_from_text(
        markdown([("# Alpha", 8), ("## Short", 1), ("## Beta", 8), ("## Gamma", 8)])
    )
    config = ChunkConfig(min_tokens=40, max_tokens=400)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert [chunk.section for chunk in chunks] == ["Alpha", "Short", "Gamma"]
    assert chunks[1].text.startswith("## Short") and "## Beta" in chunks[1].text


def test_short_subsection_before_a_new_chapter_joins_the_one_before():
    doc = document_from_text(
        markdown([("# One", 8), ("### Short", 1), ("# Two", 8), ("## Two b", 8)])
    )
    config = ChunkConfig(min_tokens=40, max_tokens=400)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert [chunk.section for chunk in chunks] == ["One", "Two", "Two b"]
    assert "### Short" in chunks[0].text


def test_header_stays_with_the_text_that_follows_it():
    # Each section is too big for one chunk, and min_tokens=1 would allow a header on its own.
    text = "\n\n".join(
        f"# Part {n}\n\n{paragraph(f'first {n}', 7)}\n\n{paragraph(f'second {n}', 7)}"
        for n in range(3)
    )
    doc = document_from_text(text)
    config = ChunkConfig(min_tokens=1, max_tokens=150)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert len(chunks) == 6
    for chunk in chunks:
        assert not re.search(r"(^|\n)#+ [^\n]*$", chunk.text), "a chunk ends with a header line"


def test_tight_bounds_hold():
    rng = random.Random(3)
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
    ]
    paragraphs = [" ".join(sentence(rng, words) for _ in range(4)) for _ in range(150)]
    doc = document_from_text("\n\n".join(paragraphs))
    config = ChunkConfig(min_tokens=100, max_tokens=112)
    check_invariants(doc, chunk_document(doc, config), config)


def test_oversized_section_splits_at_sentences_into_even_pieces():
    doc = document_from_text(markdown([("# Big", 70)]))
    config = ChunkConfig(min_tokens=50, max_tokens=300)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert len(chunks) >= 3
    assert all(chunk.text.endswith(".") for chunk in chunks)
    assert all(chunk.section == "Big" for chunk in chunks)
    sizes = [chunk.token_count for chunk in chunks]
    assert max(sizes) - min(sizes) < 0.3 * config.max_tokens  # no tiny tail piece


def test_sentence_longer_than_max_tokens_splits_at_token_boundaries():
    doc = document_from_text("lorem" + "ipsumdolor" * 800 + ".")
    config = ChunkConfig(min_tokens=20, max_tokens=100)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert len(chunks) > 10


def test_runs_whose_real_count_exceeds_max_tokens_are_cut_again():
    # Planned sizes are estimates; here they are made far too small on purpose.
    text = " ".join(f"Sentence number {i} holds a few more words." for i in range(40))
    atoms = [
        _Atom(span.start, span.end, tokens=1, cut_cost=4.0, joint_tokens=0)
        for span in split_sentence_spans(text)
    ]
    fitted = _fit_runs(text, atoms, [(0, len(atoms))], get_encoding(), max_tokens=50)
    assert [first for first, _, _ in fitted] == [0, *(last for _, last, _ in fitted[:-1])]
    assert fitted[-1][1] == len(atoms)
    for first, last, tokens in fitted:
        assert tokens == count_tokens(text[atoms[first].start : atoms[last - 1].end]) <= 50


def test_document_shorter_than_min_tokens_is_one_chunk():
    doc = document_from_text("# Tiny\n\nJust a line.")
    chunks = chunk_document(doc, ChunkConfig())
    assert len(chunks) == 1
    assert (chunks[0].text, chunks[0].section) == ("# Tiny\n\nJust a line.", "Tiny")


def test_blank_document_has_no_chunks():
    doc = Document(document_id="0" * 16, source="x", title="x", kind="text", text=" \n ")
    assert chunk_document(doc, ChunkConfig()) == []


def test_headers_inside_code_fences_are_not_sections():
    text = "# Setup\n\n```python\n# install the package\n\npip install memory-bank\n```\n\nThen run it."
    chunks = chunk_document(document_from_text(text), ChunkConfig(min_tokens=5, max_tokens=100))
    assert [chunk.section for chunk in chunks] == ["Setup"]


def test_chunking_is_deterministic():
    rng = random.Random(7)
    words = ["graph", "node", "edge", "weight", "path", "cycle", "tree", "root", "leaf", "depth"]
    text = "\n\n".join(
        " ".join(sentence(rng, words) for _ in range(rng.randint(1, 9))) for _ in range(60)
    )
    doc = document_from_text(text)
    config = ChunkConfig(min_tokens=60, max_tokens=250)
    first = [chunk.model_dump() for chunk in chunk_document(doc, config)]
    assert first == [chunk.model_dump() for chunk in chunk_document(doc, config)]
    check_invariants(doc, chunk_document(doc, config), config)


def test_o200k_encoding_is_honoured():
    doc = document_from_text(markdown([("# A", 40), ("# B", 40)]))
    config = ChunkConfig(min_tokens=50, max_tokens=200, encoding="o200k_base")
    check_invariants(doc, chunk_document(doc, config), config)


# ----------------------------------------------------------------------- conversations


@pytest.fixture()
def conversation(tmp_path) -> Document:
    turns = [
        {
            "speaker": ["Ann", "Bob", "Cy"][i % 3],
            "text": paragraph(f"topic {i}", 1 + i % 4),
            "timestamp": f"2024-03-{1 + i // 8:02d} 10:{i:02d}",
        }
        for i in range(24)
    ]
    turns[9]["text"] = paragraph("giant", 45) + "\n\n" + paragraph("giant tail", 10)
    sessions = [
        {"session_id": "first", "turns": turns[:12]},
        {"session_id": "second", "turns": turns[12:]},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(sessions), encoding="utf-8")
    return load_file(path)


def test_conversation_chunks_cut_only_at_turn_boundaries(conversation):
    config = ChunkConfig(min_tokens=60, max_tokens=250)
    chunks = chunk_document(conversation, config)
    check_invariants(conversation, chunks, config)
    offsets = conversation.turn_offsets
    giant_start, giant_end = offsets[9], offsets[10]
    for chunk in chunks[1:]:
        cut = chunk.start_char
        at_turn_boundary = cut in offsets or chunk.text.startswith("## Session ")
        # Only turn 9 is longer than max_tokens, so only it may be cut inside (at sentences).
        assert at_turn_boundary or giant_start < cut < giant_end, (
            f"chunk {chunk.position} cuts a turn"
        )
    assert any(giant_start < chunk.start_char < giant_end for chunk in chunks)
    for chunk in chunks:
        turns = conversation.turns[chunk.first_turn : chunk.last_turn + 1]
        assert chunk.speakers == list(dict.fromkeys(turn.speaker for turn in turns))
        assert chunk.timestamps == list(dict.fromkeys(turn.timestamp for turn in turns))
        assert chunk.section == ("Session first" if chunk.first_turn < 12 else "Session second")
    second_session = [chunk for chunk in chunks if chunk.first_turn == 12]
    assert len(second_session) == 1 and second_session[0].text.startswith("## Session second")


def test_conversation_turn_ranges_cover_every_turn_in_order(conversation):
    chunks = chunk_document(conversation, ChunkConfig(min_tokens=60, max_tokens=250))
    covered = []
    for chunk in chunks:
        covered.extend(range(chunk.first_turn, chunk.last_turn + 1))
    assert sorted(set(covered)) == list(range(len(conversation.turns)))
    assert covered == sorted(covered)


# ---------------------------------------------------------------------------- Japanese


def test_japanese_document_chunks_at_sentence_ends():
    paragraphs = [
        "".join(
            f"これは第{p}段落の{i}番目の文であり、日本語の文章を分割する試験です。"
            for i in range(14)
        )
        for p in range(6)
    ]
    doc = document_from_text("# 日本語の文書\n\n" + "\n\n".join(paragraphs))
    config = ChunkConfig(min_tokens=50, max_tokens=300)
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert len(chunks) >= 6  # every paragraph is above max_tokens
    assert all(chunk.text.endswith("。") for chunk in chunks)
    assert all(chunk.section == "日本語の文書" for chunk in chunks)


# ------------------------------------------------------------------------------- scale


@pytest.mark.slow
def test_hundred_thousand_word_document():
    rng = random.Random(42)
    words = [
        "memory",
        "index",
        "cluster",
        "token",
        "search",
        "vector",
        "model",
        "tree",
        "query",
        "answer",
        "source",
        "chunk",
        "header",
        "section",
        "storage",
        "pipeline",
        "batch",
        "actor",
        "result",
        "value",
    ]
    parts, total_words = [], 0
    while total_words < 100_000:
        if rng.random() < 0.04:
            parts.append("#" * rng.randint(1, 3) + " " + sentence(rng, words)[:-1])
        else:
            text = " ".join(sentence(rng, words) for _ in range(rng.randint(1, 10)))
            parts.append(text)
            total_words += len(text.split())
    doc = document_from_text("\n\n".join(parts))
    config = ChunkConfig()
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    total_tokens = count_tokens(doc.text)
    assert total_tokens / config.max_tokens <= len(chunks) <= total_tokens / config.min_tokens


def test_a_lead_in_paragraph_stays_with_the_list_it_announces():
    # Paragraphs of about 75, 50, 70 and 75 tokens: 270 tokens need two cuts or one in the
    # middle, after "... two sizes:", which would part the list from its lead-in.
    filler = "The encoder reads the whole sentence at once and builds context for every word. "
    opening = filler * 5
    lead_in = filler * 3 + "It came in two sizes:"
    items = "\n".join(f"- Size {name}: {filler.strip()}" for name in ("Base", "Large"))
    closing = filler * 5
    text = "\n\n".join([opening, lead_in, items, closing])
    config = ChunkConfig(min_tokens=60, max_tokens=150)
    doc = document_from_text(text, source="lead_in.md")
    chunks = chunk_document(doc, config)
    check_invariants(doc, chunks, config)
    assert len(chunks) >= 2
    assert not any(chunk.text.endswith(":") for chunk in chunks[:-1])
    assert any("two sizes:\n\n- Size Base" in chunk.text for chunk in chunks)
