"""The offline navigation agent on real stores (seed 000 §11.2)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_bank.config import RetrievalConfig
from memory_bank.query.answer_sentences import (
    AnswerSentence,
    answer_text,
    calibrate_confidence,
    complete_lead_ins,
)
from memory_bank.query.descent_policy import NOT_FOUND_ANSWER
from memory_bank.query.navigation import NavigationAgent
from memory_bank.query.question import content_terms, question_entities, term_coverage
from memory_bank.query.tools import StoreTools
from memory_bank.store import StoreReader
from memory_bank.text.lexicon import stem_words
from memory_bank.text.sentences import split_sentences
from tests.support import open_search
from tests.unit.query_fixtures import ML_TECH_STORE, Note, build_store, shared_embedder


class CountingEncoder:
    """The real embedder, counting how many texts each request embeds."""

    def __init__(self) -> None:
        self.texts = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return shared_embedder().encode(texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return shared_embedder().encode_passages(texts)


def make_agent(store, encoder=None, config=None) -> NavigationAgent:
    reader = StoreReader(store)
    retriever = open_search(reader, encoder or shared_embedder(), config or RetrievalConfig())
    return NavigationAgent(StoreTools(store, reader, retriever), retriever.hybrid)


@pytest.fixture(scope="module")
def tech_store(ml_tech_store):
    return ml_tech_store


@pytest.fixture(scope="module")
def tech_agent(tech_store):
    return make_agent(tech_store)


@pytest.fixture(scope="module")
def python_agent(python_store):
    return make_agent(python_store)


def tool_calls(result) -> list:
    return [step for step in result.steps if step.number is not None]


def step(result, action: str, target: str):
    """The position of the first step with this action and target (ValueError: none)."""
    return next(i for i, s in enumerate(result.steps) if (s.action, s.target) == (action, target))


def test_basic_question_is_answered_from_the_stored_memories(tech_agent):
    result = tech_agent.request("How do React hooks work?")
    assert result.confidence > 0.5
    assert result.sources and all(path.startswith("programming/react/") for path in result.sources)
    assert set(result.sources) <= set(result.files_read)
    assert "hook" in result.answer.lower() and "React" in result.answer
    stored = " ".join(note.text for note in ML_TECH_STORE["/programming/react"][1])
    assert all(sentence in stored for sentence in split_sentences(result.answer))  # extractive


def test_exploration_reads_the_root_readme_first_and_descends(tech_agent):
    result = tech_agent.request("Explain transformer attention")
    assert result.files_read[0] == "README.md"
    first = tool_calls(result)[0]
    assert (first.number, first.action, first.target) == (1, "cat", "README.md")
    assert result.trajectory.splitlines()[0] == "[1] cat README.md (9 lines)"  # the rendered log
    descent = step(result, "descend", "/ml/transformers")
    first_chunk_read = next(
        i
        for i, s in enumerate(result.steps)
        if s.action == "cat"
        and s.target.startswith("ml/transformers/")
        and s.target != "ml/transformers/README.md"
    )
    assert descent < first_chunk_read
    assert result.dirs_explored[:3] == ["/", "/ml", "/ml/transformers"]
    assert result.sources and all(path.startswith("ml/transformers/") for path in result.sources)
    assert result.confidence > 0.5


def test_a_question_the_store_cannot_answer_says_so(python_agent):
    result = python_agent.request("How does Rust's borrow checker work?")
    assert result.answer == NOT_FOUND_ANSWER
    assert result.confidence < 0.3
    assert result.sources == []
    grep = result.steps[step(result, "grep", "Rust")]
    assert grep.detail == "-> 0 files"


def test_comparison_cites_files_from_two_directories(tech_agent):
    result = tech_agent.request("Compare CNNs and RNNs")
    directories = {path.rsplit("/", 1)[0] for path in result.sources}
    assert {"ml/vision", "ml/sequence"} <= directories
    assert {"/ml/vision", "/ml/sequence"} <= set(result.dirs_explored)
    assert "CNNs" in result.answer and "RNNs" in result.answer
    assert result.confidence > 0.5


def test_grep_locates_an_exact_entity(tech_agent):
    result = tech_agent.request("What is BERT?")
    assert result.steps[step(result, "grep", "BERT")].detail == "-> 1 file"
    assert result.sources == ["ml/transformers/bert_pretraining.md"]
    assert "BERT is a bidirectional transformer encoder" in result.answer
    assert len(tool_calls(result)) <= 6  # far fewer than the store's 25 files


def test_max_iterations_bounds_the_tool_calls(tech_agent):
    for budget in (1, 2, 4, 10):
        result = tech_agent.request("How does asyncio schedule coroutines?", max_iterations=budget)
        assert len(tool_calls(result)) <= budget
    assert (
        tech_agent.request("How does asyncio schedule coroutines?", max_iterations=1).answer
        == NOT_FOUND_ANSWER
    )
    answered = tech_agent.request("How does asyncio schedule coroutines?", max_iterations=4)
    assert answered.sources == ["programming/python/python_asyncio_event_loop.md"]


def test_a_single_directory_store_is_navigated(python_agent):
    result = python_agent.request("What does the GIL do?")
    assert result.sources == ["python/python_gil_threading.md"]
    assert result.dirs_explored == ["/", "/python"]
    assert result.confidence > 0.5


def test_an_empty_store_answers_not_found(tmp_path):
    result = make_agent(build_store(tmp_path / "empty", {}, shared_embedder())).request(
        "What is BERT?"
    )
    assert (result.answer, result.confidence, result.sources) == (NOT_FOUND_ANSWER, 0.0, [])
    assert result.files_read == ["README.md"]


def test_a_question_embeds_only_the_question(tech_store):
    encoder = CountingEncoder()
    agent = make_agent(tech_store, encoder)
    agent.request("Compare CNNs and RNNs")  # the first question also embeds the READMEs once
    before = encoder.texts
    agent.request("How does multi-head attention work?")
    assert encoder.texts - before == 1


def test_question_entities_and_terms():
    assert question_entities("What is BERT?") == ["BERT"]
    assert question_entities("Compare CNNs and RNNs") == ["CNNs", "RNNs"]
    assert question_entities("How does Rust's borrow checker work?") == ["Rust"]
    assert question_entities('What happened in 2018 to "masked language modeling"?') == [
        "masked language modeling",
        "2018",
    ]
    assert question_entities("Who shot a film in Leland, North Carolina?") == [
        "Leland",
        "North Carolina",
    ]
    assert question_entities("BERT or GPT: which uses useState and asyncio.gather?") == [
        "BERT",
        "GPT",
        "useState",
        "asyncio.gather",
    ]
    assert content_terms("How do React hooks work?") == ["react", "hook"]
    assert content_terms("Why were CNNs published?") == ["cnn", "publish"]
    evidence = frozenset(stem_words(["hook", "published", "python"]))
    assert term_coverage(content_terms("hooks published in Rust"), evidence) == pytest.approx(2 / 3)


def test_confidence_grows_with_similarity_and_coverage():
    assert calibrate_confidence(0.1, 0.0) == 0.0
    assert calibrate_confidence(0.8, 1.0) == 1.0
    assert (
        calibrate_confidence(0.4, 0.5)
        < calibrate_confidence(0.5, 0.5)
        < calibrate_confidence(0.5, 1.0)
    )
    assert calibrate_confidence(0.5, None) == pytest.approx((0.5 - 0.2) / 0.35)


def _sentences(chunk: int, texts: list[str]) -> list[AnswerSentence]:
    return [
        AnswerSentence(chunk, number, text, np.zeros(3, dtype=np.float32), 0.0, frozenset())
        for number, text in enumerate(texts)
    ]


def test_a_lead_in_brings_the_list_it_announces():
    bert = _sentences(
        0,
        [
            "BERT was released by Google in 2018.",
            "It came in two sizes:",
            "- BERT-Base: 12 layers.",
            "- BERT-Large: 24 layers.",
            "BERT was pre-trained on Wikipedia.",
        ],
    )
    other = _sentences(1, ["Steps:", "First mix the flour.", "Then wait."])
    everything = bert + other
    completed = complete_lead_ins([bert[0], bert[1], other[0]], everything)
    assert [(s.chunk, s.number) for s in completed] == [
        (0, 0),
        (0, 1),
        (1, 0),
        (0, 2),
        (0, 3),
        (1, 1),
    ]
    # Items already chosen are not repeated, and a chunk's end stops the list.
    assert len(complete_lead_ins([bert[1], bert[2]], bert[:3])) == 2
    assert answer_text([s.text for s in bert[:4]]) == (
        "BERT was released by Google in 2018. It came in two sizes:\n"
        "- BERT-Base: 12 layers.\n- BERT-Large: 24 layers."
    )


def test_section_titles_are_not_answer_sentences(tmp_path):
    store = build_store(
        tmp_path / "titled",
        {
            "/baking": (
                "Baking notes",
                [
                    Note(
                        "sourdough_starter",
                        ("sourdough", "starter"),
                        "## Sourdough starter\n\nA sourdough starter is fed flour and water every day and "
                        "kept at 24 degrees. It rises within eight hours.",
                    ),
                ],
            ),
        },
        shared_embedder(),
    )
    result = make_agent(store).request("What about the sourdough starter?")
    assert "24 degrees" in result.answer
    assert "#" not in result.answer


BRIDGE_STORE = {
    "/places": (
        "Towns and their history.",
        [
            Note(
                "leland_north_carolina",
                ("leland", "north carolina", "town"),
                "Leland\n\nLeland is a town in Brunswick County, North Carolina. Several movies, such as "
                "Maximum Overdrive (1986), were shot in or around Leland.",
            ),
            Note(
                "wilmington_port",
                ("wilmington", "port"),
                "Wilmington\n\nWilmington is a port city in North Carolina with a film studio and a "
                "historic riverfront.",
            ),
            Note(
                "asheville_mountains",
                ("asheville", "mountains"),
                "Asheville\n\nAsheville is a city in the Blue Ridge Mountains of western North Carolina.",
            ),
        ],
    ),
    "/films": (
        "Films and their makers.",
        [
            Note(
                "maximum_overdrive",
                ("horror", "comedy"),
                "Maximum Overdrive\n\nMaximum Overdrive is an American science fiction horror comedy "
                "written and directed by Stephen King, about machines that come to life.",
            ),
            Note(
                "the_shining",
                ("horror", "kubrick"),
                "The Shining\n\nThe Shining is a psychological horror film produced and directed by "
                "Stanley Kubrick.",
            ),
            Note(
                "jaws",
                ("thriller", "spielberg"),
                "Jaws\n\nJaws is a thriller film directed by Steven Spielberg about a great white shark.",
            ),
        ],
    ),
}


def test_the_second_hop_of_a_bridge_question_is_read_and_quoted(tmp_path):
    agent = make_agent(build_store(tmp_path / "bridge", BRIDGE_STORE, shared_embedder()))
    result = agent.request(
        "Who directed the film that was shot in or around Leland, North Carolina in 1986?"
    )
    assert any(path.endswith("leland_north_carolina.md") for path in result.sources)
    assert any(path.endswith("maximum_overdrive.md") for path in result.sources)
    assert "Stephen King" in result.answer


class OppositeEncoder:
    """Question vectors pointing away from the real ones: every README scores below zero."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return -shared_embedder().encode(texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return shared_embedder().encode_passages(texts)


def test_the_descent_keeps_its_best_directory_when_every_readme_scores_below_zero(tech_store):
    result = make_agent(tech_store, encoder=OppositeEncoder()).request("warm up")
    descended = [s for s in result.steps if s.action == "descend"]
    assert descended, "the descent chose no directory"
