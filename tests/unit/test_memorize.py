"""The offline memorize role, on real sentence embeddings (seed 000 §11.1 "Memory generation")."""

from __future__ import annotations

import pytest

from memory_bank.config import EmbeddingConfig, MemorizeConfig
from memory_bank.index.embedding import Embedder
from memory_bank.memorize.extractive import memorize_offline
from memory_bank.schemas import Chunk, MemorizedChunk
from memory_bank.text.lexicon import is_valid_name
from memory_bank.text.sentences import split_sentences

GIL_PARAGRAPH = (
    "Python's Global Interpreter Lock (GIL) prevents true multi-threading in CPython. "
    "The GIL is a mutex that allows only one thread to execute Python bytecode at a time. "
    "As a result, CPU-bound programs do not speed up when more threads are added. "
    "I/O-bound programs still benefit from threads because the GIL is released while waiting "
    "for input or output. "
    "For CPU-bound work, developers use the multiprocessing module, which runs separate "
    "interpreter processes."
)

FACTS = [
    "Construction began in January 1887 and was completed in March 1889, in time for the "
    "World's Fair.",
    "The tower is 330 metres tall, about the same height as an 81-storey building.",
    "It was the tallest man-made structure in the world for 41 years, until the Chrysler "
    "Building in New York City was finished in 1930.",
    "The top level's upper platform is 276 m above the ground, the highest observation deck "
    "accessible to the public in the European Union.",
    "The tower was almost demolished in 1909, but it was saved because it was useful as a radio "
    "transmission antenna.",
]
VAGUE = [
    "It is often said that the structure is interesting to look at from many different angles.",
    "Visitors generally enjoy the experience and many of them like to take pictures.",
    "Things like this are usually remembered for a long time by the people who see them.",
    "In general, the view from the top is considered quite nice by most observers.",
]
EIFFEL_SECTION = f"""## Construction

The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. \
It is named after the engineer Gustave Eiffel, whose company designed and built the tower. \
{VAGUE[0]} {FACTS[0]} Some artists and intellectuals criticised the design at first, but it \
soon became popular.

{FACTS[1]} {FACTS[2]} {VAGUE[1]} The tower has three levels for visitors, with restaurants on \
the first and second levels. {FACTS[3]} Tickets can be purchased to ascend by stairs or lift to \
the first and second levels.

{VAGUE[2]} The tower is repainted every seven years, and each repainting uses about 60 tonnes \
of paint. {VAGUE[3]} {FACTS[4]}"""


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(EmbeddingConfig())


def _chunk(text: str, token_count: int, **fields) -> Chunk:
    values = dict(
        chunk_id="0123456789abcdef-00002",
        document_id="0123456789abcdef",
        source="docs/notes.md",
        position=2,
        text=text,
        token_count=token_count,
        start_char=1000,
        end_char=1000 + len(text),
    )
    values.update(fields)
    return Chunk(**values)


def _memorize(
    embedder: Embedder, chunk: Chunk, config: MemorizeConfig | None = None
) -> MemorizedChunk:
    encoding = embedder.encode_chunks([chunk.text])[0]
    return memorize_offline(chunk, encoding, index=7, config=config or MemorizeConfig())


def _assert_valid_title(title: str) -> None:
    assert is_valid_name(title), title


def _assert_one_sentence(tldr: str) -> None:
    assert "\n" not in tldr
    assert tldr.endswith((".", "!", "?", "。"))
    assert len(split_sentences(tldr)) == 1, tldr


def test_gil_paragraph_memory_title_and_tldr(embedder: Embedder) -> None:
    chunk = _chunk(GIL_PARAGRAPH, token_count=92)
    memorized = _memorize(embedder, chunk)
    assert memorized.memory == GIL_PARAGRAPH  # short: kept whole
    _assert_valid_title(memorized.title)
    assert 3 <= len(memorized.title.split("_")) <= 5
    assert "gil" in memorized.title.split("_") or "interpreter" in memorized.title
    _assert_one_sentence(memorized.tldr)
    assert "GIL" in memorized.tldr
    assert "gil" in memorized.keywords
    assert memorized.index == 7

    # Forced to extract, the memory still keeps the GIL fact.
    extract = _memorize(embedder, chunk, MemorizeConfig(short_chunk_tokens=0))
    assert len(extract.memory) < len(GIL_PARAGRAPH)
    assert "GIL" in extract.memory and "thread" in extract.memory


def test_long_chunk_keeps_facts_and_drops_vague_sentences(embedder: Embedder) -> None:
    chunk = _chunk(EIFFEL_SECTION, token_count=390, section="Construction")
    memory = _memorize(embedder, chunk).memory
    assert 0.25 <= len(memory) / len(EIFFEL_SECTION) <= 0.55
    assert sum(fact in memory for fact in FACTS) >= 3
    assert not any(vague in memory for vague in VAGUE)
    assert "## Construction" not in memory  # headers are titles, not memory text
    assert memory.startswith("The Eiffel Tower is a wrought-iron lattice tower")  # section lead
    assert "\n\n" in memory  # sentences from different paragraphs stay in separate paragraphs
    kept = [sentence for sentence in split_sentences(EIFFEL_SECTION) if sentence in memory]
    assert sorted(kept, key=memory.index) == kept  # original order


def test_short_chunk_is_kept_whole(embedder: Embedder) -> None:
    text = "Rye flour forms little gluten.\n\nSo rye breads are dense."
    memorized = _memorize(embedder, _chunk(text, token_count=14))
    assert memorized.memory == text


def test_list_items_stay_on_their_own_lines(embedder: Embedder) -> None:
    text = (
        "Release checklist for version 2.4 of the billing service:\n"
        "- Run the full migration suite against a copy of production data from March.\n"
        "- Ask Dana Whitfield to approve the change to the invoice numbering scheme.\n"
        "- Nothing else really matters very much in the end anyway.\n"
        "- Tag the release as v2.4.0 and publish the notes on the status page."
    )
    memorized = _memorize(embedder, _chunk(text, 70), MemorizeConfig(short_chunk_tokens=0))
    lines = memorized.memory.split("\n")
    assert len(lines) >= 2
    assert all(line.strip() in text for line in lines)


def test_memorize_is_deterministic(embedder: Embedder) -> None:
    chunk = _chunk(EIFFEL_SECTION, token_count=390, section="Construction")
    first = _memorize(embedder, chunk)
    second = _memorize(embedder, chunk)
    assert first.model_dump() == second.model_dump()


def test_metadata_and_context_of_a_document_chunk(embedder: Embedder) -> None:
    chunk = _chunk(EIFFEL_SECTION, token_count=390, section="Construction")
    memorized = _memorize(embedder, chunk)
    assert memorized.context == "Construction — notes.md"
    assert memorized.metadata == {
        "source": "docs/notes.md",
        "document_id": "0123456789abcdef",
        "chunk_id": "0123456789abcdef-00002",
        "token_count": 390,
        "start_char": 1000,
        "end_char": 1000 + len(EIFFEL_SECTION),
        "section": "Construction",
    }
    _assert_valid_title(memorized.title)
    assert "eiffel" in memorized.title
    _assert_one_sentence(memorized.tldr)
    assert len(memorized.tldr.split()) <= 31


def test_japanese_chunk_gets_valid_title_and_keywords(embedder: Embedder) -> None:
    text = (
        "東京タワーは1958年に完成した電波塔です。高さは333メートルで、東京のシンボルとして"
        "知られています。東京タワーの展望台からは富士山が見えることもあります。"
    )
    memorized = _memorize(embedder, _chunk(text, token_count=80))
    _assert_valid_title(memorized.title)
    assert memorized.title.startswith("東京タワー")  # its key terms, in Japanese
    assert memorized.keywords and memorized.keywords[0] == "東京タワー"
    _assert_one_sentence(memorized.tldr)


def test_conversation_chunk_context_names_the_speakers(embedder: Embedder) -> None:
    text = (
        "Alice: Did you book the flight to Lisbon?\n"
        "Bob: Yes, I booked it for March 3rd, it cost 420 euros.\n"
        "Alice: Great, I'll reserve the hotel near Alfama then."
    )
    chunk = _chunk(
        text,
        token_count=45,
        source="chats/trip.json",
        speakers=["Alice", "Bob", "Alice"],
        timestamps=["2024-03-01 09:00", "2024-03-01 09:02", "2024-03-01 09:05"],
        first_turn=11,
        last_turn=13,
    )
    memorized = _memorize(embedder, chunk)
    assert memorized.context == (
        "conversation between Alice and Bob, turns 12-14, 2024-03-01 09:00 to 2024-03-01 09:05"
        " — trip.json"
    )
    assert memorized.metadata["speakers"] == ["Alice", "Bob"]
    assert (memorized.metadata["first_turn"], memorized.metadata["last_turn"]) == (11, 13)
    assert "lisbon" in memorized.keywords
    _assert_valid_title(memorized.title)


MEETING = (
    "Project Manager: Um {disfmarker} uh , yeah , um {vocalsound} I think so , yeah .\n"
    "Industrial Designer: Uh {disfmarker} um , yeah , uh , mm - hmm , um {disfmarker} right .\n"
    "Marketing: The remote control should have big rubber buttons and a scroll wheel , "
    "because our survey said users lose small buttons .\n"
    "Project Manager: Mm - hmm . Uh {gap} um {vocalsound} yeah .\n"
    "User Interface: The battery lasts two years if the LCD screen stays off .\n"
    "Industrial Designer: Sure , of course , maybe a little bit , you know , sure .\n"
    "Marketing: Of course . Maybe a bit , sure , of course .\n"
)


def _meeting_chunk(text: str = MEETING) -> Chunk:
    speakers = [line.partition(":")[0] for line in text.splitlines()]
    return _chunk(text, token_count=120, source="meetings/remote.json", speakers=speakers)


def test_a_transcripts_markup_and_hesitations_are_no_key_terms(embedder: Embedder) -> None:
    memorized = _memorize(embedder, _meeting_chunk())
    words = {word for keyword in memorized.keywords for word in keyword.split()}
    assert not words & {"disfmarker", "vocalsound", "gap", "um", "uh", "yeah", "mm"}
    # What speakers fill sentences with: "of course", "a bit", "sure", "maybe".
    assert not words & {"course", "bit", "sure", "maybe", "know"}
    assert "buttons" in words
    assert not {"disfmarker", "um", "uh"} & set(memorized.title.split("_"))
    _assert_valid_title(memorized.title)


def test_a_transcripts_tldr_is_a_turn_that_says_something_without_markup(
    embedder: Embedder,
) -> None:
    memorized = _memorize(embedder, _meeting_chunk())
    assert "{" not in memorized.tldr
    assert "buttons" in memorized.tldr or "battery" in memorized.tldr, memorized.tldr
    # The memory is an extract: the turns it keeps are quoted as said, markup included.
    assert "Marketing: The remote control should have big rubber buttons" in memorized.memory


def test_a_transcripts_tldr_quotes_the_turn_in_clean_verbatim(embedder: Embedder) -> None:
    text = MEETING.replace(
        "Marketing: The remote control should",
        "Marketing: Uh {disfmarker} the the remote remote control , uh , should",
    )
    memorized = _memorize(embedder, _meeting_chunk(text))
    assert memorized.tldr.startswith("Marketing: The remote control should have big rubber")
    assert " uh" not in memorized.tldr.lower() and " ," not in memorized.tldr
    # The memory quotes the turn as said.
    assert "Marketing: Uh {disfmarker} the the remote remote control" in memorized.memory


def test_markup_shapes_outside_a_conversation_are_left_alone(embedder: Embedder) -> None:
    text = "Read the [PostgreSQL manual] before tuning the planner . " * 3
    memorized = _memorize(embedder, _chunk(text, token_count=40))
    assert any("postgresql" in keyword for keyword in memorized.keywords)
