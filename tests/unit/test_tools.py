"""StoreTools: ls / cat / grep on plain files, path confinement, and the store-backed tools."""

from __future__ import annotations

import json
import logging
import os
import re

import numpy as np
import pytest

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ToolError
from memory_bank.query.tools import Entry, GrepMatch, StoreTools
from memory_bank.store import StoreReader
from tests.support import open_search
from tests.unit.query_fixtures import ML_TECH_STORE, PYTHON_ONLY_STORE, build_store, shared_embedder


@pytest.fixture()
def plain_dir(tmp_path):
    root = tmp_path / "gam"
    (root / "alpha").mkdir(parents=True)
    (root / "beta").mkdir()
    (root / ".bank").mkdir()
    (root / ".bank" / "secret.md").write_text("specific_term hidden in machine state\n")
    (root / ".gam_meta.json").write_text("{}")
    (root / "README.md").write_text("# Root\n\nOverview of alpha and beta.\n")
    (root / "notes.md").write_text("first line\nthe Specific_Term appears here\nlast line\n")
    (root / "zeta.txt").write_text("nothing to see\n")
    (root / "alpha" / "deep.md").write_text(
        "intro\n\nspecific_term again\nand SPECIFIC_TERM once more\n"
    )
    (root / "beta" / "other.md").write_text("a.b literal\naxb is not a match for a.b\n")
    return root


@pytest.fixture(scope="module")
def tech_store(ml_tech_store):
    return ml_tech_store


def test_ls_lists_three_files_and_two_directories_with_types_and_sizes(plain_dir):
    entries = StoreTools(plain_dir).ls("/")
    assert entries == [
        Entry(name="README.md", type="file", size=(plain_dir / "README.md").stat().st_size),
        Entry(name="alpha", type="dir", size=(plain_dir / "alpha").stat().st_size),
        Entry(name="beta", type="dir", size=(plain_dir / "beta").stat().st_size),
        Entry(name="notes.md", type="file", size=(plain_dir / "notes.md").stat().st_size),
        Entry(name="zeta.txt", type="file", size=(plain_dir / "zeta.txt").stat().st_size),
    ]
    assert StoreTools(plain_dir).ls("") == entries
    assert [entry.name for entry in StoreTools(plain_dir).ls("/alpha")] == ["deep.md"]


def test_ls_of_a_file_is_an_error(plain_dir):
    with pytest.raises(ToolError, match="not a directory"):
        StoreTools(plain_dir).ls("notes.md")


def test_cat_returns_the_exact_content(plain_dir):
    content = "---\ntitle: café\n---\n\nLine one.\r\nLine two without newline"
    (plain_dir / "alpha" / "exact.md").write_bytes(content.encode("utf-8"))
    tools = StoreTools(plain_dir)
    assert tools.cat("alpha/exact.md") == content
    assert tools.cat("/alpha/exact.md") == content
    assert tools.cat(str(plain_dir / "alpha" / "exact.md")) == content  # absolute, inside the store


def test_cat_refuses_missing_files_and_directories(plain_dir):
    tools = StoreTools(plain_dir)
    with pytest.raises(ToolError, match="no such file"):
        tools.cat("alpha/missing.md")
    with pytest.raises(ToolError, match="no such file"):
        tools.cat("alpha")


def test_grep_returns_only_matching_files_with_line_numbers(plain_dir):
    matches = StoreTools(plain_dir).grep("specific_term")
    assert matches == [
        GrepMatch(file="alpha/deep.md", line_number=3, line="specific_term again"),
        GrepMatch(file="alpha/deep.md", line_number=4, line="and SPECIFIC_TERM once more"),
        GrepMatch(file="notes.md", line_number=2, line="the Specific_Term appears here"),
    ]


def test_grep_is_a_literal_substring_search_within_a_scope(plain_dir):
    tools = StoreTools(plain_dir)
    assert [(m.file, m.line_number) for m in tools.grep("a.b")] == [
        ("beta/other.md", 1),
        ("beta/other.md", 2),
    ]
    assert [m.file for m in tools.grep("specific_term", path="/alpha")] == ["alpha/deep.md"] * 2
    assert [m.line_number for m in tools.grep("line", path="notes.md")] == [1, 3]
    assert tools.grep("no such words anywhere") == []


def test_grep_caps_the_number_of_matches(plain_dir):
    tools = StoreTools(plain_dir, max_grep_matches=2)
    assert len(tools.grep("specific_term")) == 2
    assert len(tools.grep("specific_term", max_matches=1)) == 1


def test_grep_lines_survive_crlf_and_text_whose_lowercase_is_longer(tmp_path):
    root = tmp_path / "gam"
    root.mkdir()
    # "İ" lowercases to two code points, so offsets in the lowered corpus run ahead of the text.
    (root / "a.md").write_bytes("İSTANBUL İİİİ\r\nsecond line has the Needle\r\n".encode())
    (root / "b.md").write_text("needle in b\n")
    matches = StoreTools(root).grep("needle")
    assert matches == [
        GrepMatch(file="a.md", line_number=2, line="second line has the Needle"),
        GrepMatch(file="b.md", line_number=1, line="needle in b"),
    ]
    assert StoreTools(root).grep("i̇stanbul") == [
        GrepMatch(file="a.md", line_number=1, line="İSTANBUL İİİİ")
    ]


def test_grep_of_a_store_answers_from_memory_until_the_store_is_replaced(plain_dir):
    tools = StoreTools(plain_dir)
    tools.warm_up()
    (plain_dir / "notes.md").unlink()  # a committed store never changes in place
    assert [m.file for m in tools.grep("specific_term")] == [
        "alpha/deep.md",
        "alpha/deep.md",
        "notes.md",
    ]
    meta = plain_dir / ".gam_meta.json"
    replacement = plain_dir / ".gam_meta.json.new"
    replacement.write_text('{"store_version": "next"}')
    os.replace(replacement, meta)  # a new store comes with a new meta file
    assert [m.file for m in tools.grep("specific_term")] == ["alpha/deep.md", "alpha/deep.md"]


def test_whole_word_grep_matches_what_a_whole_word_substring_search_does(tmp_path):
    root = tmp_path / "gam"
    (root / "ml").mkdir(parents=True)
    texts = {
        "ml/bert.md": "BERT-Base has 12 layers.\nRoBERTa is not BERT.\n",
        "ml/roberta.md": "RoBERTa drops next sentence prediction.\n",
        "ml/lower.md": "we fine-tune bert_large here\nthe bert model\n",
        "code.md": "Call asyncio.gather(*tasks) for C++ and C#.\nasyncio gather apart\n",
        "numbers.md": "In 1994, then 19945.\n",
    }
    for path, text in texts.items():
        (root / path).write_text(text)
    tools = StoreTools(root)
    tools.warm_up()  # builds the word index

    def found(pattern: str, path: str = "/") -> list[tuple[str, int]]:
        return [(m.file, m.line_number) for m in tools.grep(pattern, path=path, whole_word=True)]

    def brute_force(pattern: str) -> list[tuple[str, int]]:
        word = re.compile(rf"(?<!\w){re.escape(pattern)}(?!\w)", re.IGNORECASE)
        return [
            (path, number)
            for path in sorted(texts)
            for number, line in enumerate(texts[path].splitlines(), start=1)
            if word.search(line)
        ]

    for pattern in [
        "BERT",
        "bert",
        "RoBERTa",
        "asyncio.gather",
        "C++",
        "++",
        "1994",
        "bert_large",
        "Base has",
        "nothing here",
        "gather apart",
    ]:
        assert found(pattern) == brute_force(pattern), pattern
    assert found("BERT") == [("ml/bert.md", 1), ("ml/bert.md", 2), ("ml/lower.md", 2)]
    assert found("bert", path="/ml/bert.md") == [("ml/bert.md", 1), ("ml/bert.md", 2)]
    assert found("1994", path="/ml") == []
    # Without whole_word, grep stays a substring search.
    assert ("ml/roberta.md", 1) in [(m.file, m.line_number) for m in tools.grep("bert")]


def test_whole_word_grep_in_an_empty_or_wordless_store(tmp_path):
    root = tmp_path / "gam"
    root.mkdir()
    assert StoreTools(root).grep("BERT", whole_word=True) == []
    (root / "marks.md").write_text("+++ --- ***\n")
    assert StoreTools(root).grep("+++", whole_word=True) == [
        GrepMatch(file="marks.md", line_number=1, line="+++ --- ***")
    ]


def test_grep_rejects_an_empty_pattern(plain_dir):
    with pytest.raises(ToolError, match="empty"):
        StoreTools(plain_dir).grep("")


@pytest.mark.parametrize("path", ["../outside.md", "alpha/../../outside.md", "/../outside.md"])
def test_parent_directory_escapes_are_refused(plain_dir, path):
    (plain_dir.parent / "outside.md").write_text("outside the store\n")
    with pytest.raises(ToolError, match=r"'\.\.'"):
        StoreTools(plain_dir).cat(path)


def test_absolute_paths_outside_the_store_are_refused(plain_dir):
    tools = StoreTools(plain_dir)
    with pytest.raises(ToolError):
        tools.cat("/etc/passwd")
    with pytest.raises(ToolError):
        tools.ls(str(plain_dir.parent))


def test_symlinks_leading_outside_are_refused_and_not_listed(plain_dir):
    outside = plain_dir.parent / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("specific_term outside\n")
    os.symlink(outside / "secret.md", plain_dir / "link.md")
    os.symlink(outside, plain_dir / "alpha" / "linkdir")
    os.symlink(plain_dir / "notes.md", plain_dir / "beta" / "inside_link.md")  # stays inside: fine
    tools = StoreTools(plain_dir)
    for path in ("link.md", "alpha/linkdir/secret.md", "alpha/linkdir"):
        with pytest.raises(ToolError, match="outside the store"):
            tools.cat(path)
    with pytest.raises(ToolError, match="outside the store"):
        tools.ls("alpha/linkdir")
    assert "link.md" not in [entry.name for entry in tools.ls("/")]
    assert [entry.name for entry in tools.ls("alpha")] == ["deep.md"]
    assert "outside" not in " ".join(match.line for match in tools.grep("specific_term"))
    assert tools.cat("beta/inside_link.md") == (plain_dir / "notes.md").read_text()


def test_hidden_entries_are_neither_listed_nor_readable(plain_dir):
    tools = StoreTools(plain_dir)
    assert not any(entry.name.startswith(".") for entry in tools.ls("/"))
    for path in (".bank/secret.md", "/.gam_meta.json", ".bank"):
        with pytest.raises(ToolError, match="hidden"):
            tools.cat(path)
    assert all(not match.file.startswith(".") for match in tools.grep("specific_term"))


def test_deep_retrieval_returns_the_raw_chunk_text(tech_store):
    tools = StoreTools(tech_store)
    chunks = StoreReader(tech_store).chunks().to_pylist()
    assert tools.deep_retrieval(chunks[3]["chunk_id"]) == chunks[3]["text"]
    with pytest.raises(ToolError, match="no chunk"):
        tools.deep_retrieval("0000000000000000-00000")


def test_answer_checks_its_sources(tech_store):
    tools = StoreTools(tech_store)
    answer = tools.answer("Text.", 1.5, ["/ml/transformers/bert_pretraining.md"])
    assert answer.sources == ["ml/transformers/bert_pretraining.md"] and answer.confidence == 1.0
    with pytest.raises(ToolError):
        tools.answer("Text.", 0.5, ["ml/nothing_here.md"])
    with pytest.raises(ToolError):
        tools.answer("   ")


def test_searches_return_ranked_hits(tech_store):
    reader = StoreReader(tech_store)
    tools = StoreTools(
        tech_store, reader, open_search(reader, shared_embedder(), RetrievalConfig())
    )
    for hits in (
        tools.bm25_search("BERT masked language model pretraining"),
        tools.vector_search("What is BERT?"),
    ):
        assert hits[0].chunk_path == "ml/transformers/bert_pretraining.md"
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert len(tools.vector_search("neural networks", top_k=3)) == 3


def test_vector_search_without_an_embedder_is_a_tool_error(tech_store):
    with pytest.raises(ToolError, match="embedding model"):
        StoreTools(tech_store).vector_search("attention")


def test_bm25_index_is_built_once_and_reused_until_the_store_changes(tmp_path):
    store = build_store(tmp_path / "store", ML_TECH_STORE, shared_embedder())
    first = StoreTools(store)
    hits = first.bm25_search("React useEffect side effects")
    assert hits[0].chunk_path == "programming/react/react_useeffect_hook.md"
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    first.bm25_search("transformer attention heads")
    assert (first.searcher.corpus.bm25.builds, first.searcher.corpus.bm25.loads) == (1, 0)
    old_index_dir = first.searcher.corpus.bm25.directory
    assert (
        json.loads((old_index_dir / "stamp.json").read_text())["store_version"]
        == first.reader.store_version
    )

    second = StoreTools(store)  # a new process or replica on the same store version
    assert second.bm25_search("React useEffect side effects") == hits
    assert (second.searcher.corpus.bm25.builds, second.searcher.corpus.bm25.loads) == (0, 1)

    build_store(store, PYTHON_ONLY_STORE, shared_embedder())  # the store is replaced: new version
    third = StoreTools(store)
    assert (
        third.bm25_search("asyncio event loop")[0].chunk_path
        == "python/python_asyncio_event_loop.md"
    )
    assert (third.searcher.corpus.bm25.builds, third.searcher.corpus.bm25.loads) == (1, 0)
    assert third.searcher.corpus.bm25.directory.is_dir()


def test_bm25_index_is_saved_without_pickle(tech_store):
    tools = StoreTools(tech_store)
    tools.bm25_search("GIL threads")
    files = sorted(path.name for path in tools.searcher.corpus.bm25.directory.iterdir())
    assert all(name.endswith((".npy", ".json")) for name in files), files
    for name in files:
        if name.endswith(".npy"):
            np.load(tools.searcher.corpus.bm25.directory / name, allow_pickle=False)


def test_bm25_index_stays_in_memory_when_the_store_is_not_writable(tmp_path, caplog):
    store = build_store(tmp_path / "store", PYTHON_ONLY_STORE, shared_embedder())
    (store / ".bank" / "bm25").write_text("not a directory: index writes fail here")
    tools = StoreTools(store)
    with caplog.at_level(logging.WARNING, logger="memory_bank.index.bm25"):
        hits = tools.bm25_search("mypy static type checker")
    assert hits[0].chunk_path == "python/python_type_hints_mypy.md"
    assert "keeping it in memory" in caplog.text
    assert tools.searcher.corpus.bm25.builds == 1
