"""Live conversation memory: working memory within budget, bounded recursive summary, recall
of old facts, durability across processes, torn tails, and resolved relative dates."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig, ConversationConfig
from memory_bank.conversation.log import TURNS_FILE, VECTORS_FILE
from memory_bank.conversation.memory import (
    ConversationMemory,
    Conversations,
    conversations_directory,
)
from memory_bank.errors import ToolError
from memory_bank.ingest.executor import LocalExecutor
from tests.fakes import HashingEmbedder

REPO = Path(__file__).resolve().parents[2]
START = datetime(2023, 5, 8, 13, 56)
TOPICS = [
    "The quarterly budget review moved to Thursday because the finance team is short-staffed.",
    "I repotted the tomato seedlings and moved them to the south-facing window.",
    "The train to Edinburgh was delayed by forty minutes near Newcastle this morning.",
    "We should try the new ramen place on Elm Street, the broth is supposed to be excellent.",
    "My laptop battery drains quickly since the last operating system update.",
    "The book club picked a novel about a lighthouse keeper on a remote Scottish island.",
    "Remember to renew the car insurance before the end of the month.",
    "The marathon training plan adds two kilometres to the long run every week.",
    "Our neighbour's cat keeps sleeping on the garden shed roof in the afternoon sun.",
    "The museum has an exhibition of Japanese woodblock prints until September.",
]
FACT = "My sister Priya adopted a retired greyhound named Biscuit from the shelter in Leeds."


def _conversation_turns(count: int) -> list[tuple[str, str, datetime]]:
    """`count` turns of two speakers over varied topics; the fact is turn 3."""
    turns = []
    for number in range(count):
        speaker = "Ana" if number % 2 == 0 else "Ben"
        text = FACT if number == 3 else f"{TOPICS[number % len(TOPICS)]} (note {number})"
        turns.append((speaker, text, START + timedelta(minutes=number)))
    return turns


def test_three_hundred_turns_stay_within_budget_and_turn_three_is_recalled(
    tmp_path: Path, embedder
) -> None:
    config = ConversationConfig(working_tokens=400, summary_tokens=150)
    memory = ConversationMemory(tmp_path / "talk", embedder, config)
    for speaker, text, when in _conversation_turns(300):
        memory.add_turn(speaker, text, when)
        assert memory.working_tokens() <= config.working_tokens
        assert sum(unit.tokens for unit in memory.state.summary) <= config.summary_tokens

    info = memory.info()
    assert info.turns == 300 and info.episodic_turns + info.working_turns == 300
    assert info.evictions > 10 and info.summary  # the summary of summaries kept being rebuilt
    assert info.episodic_turns > 3  # turn 3 left the working memory long ago

    recalled = memory.recall("What is the name of the greyhound Priya adopted?", max_tokens=300)
    assert recalled.tokens <= 300
    assert 3 in [turn.turn_id for turn in recalled.turns[:2]]
    fact = next(turn for turn in recalled.turns if turn.turn_id == 3)
    assert fact.tier == "episodic" and "Biscuit" in fact.text and fact.speaker == "Ben"
    # The summary speaks only for turns that did not fit: its lines are no recalled turn's.
    recalled_ids = {turn.turn_id for turn in recalled.turns}
    lines = {unit.text: unit.turn_id for unit in memory.state.summary}
    assert all(lines[line] not in recalled_ids for line in recalled.summary.splitlines())


def test_summary_lines_stand_in_for_hits_that_do_not_fit(tmp_path: Path) -> None:
    config = ConversationConfig(working_tokens=200, summary_tokens=1000, summary_share=1.0)
    memory = ConversationMemory(tmp_path / "talk", HashingEmbedder(), config)
    long_fact = (
        "The lighthouse keeper logged every ship that passed the reef. "
        + "He kept the logbook in a drawer of the oak desk by the stairs. " * 6
    )
    memory.add_turn("Ana", long_fact, START)
    for number in range(10):
        memory.add_turn("Ben", f"{TOPICS[number % len(TOPICS)]} (note {number})", START)
    line = next(unit for unit in memory.state.summary if unit.turn_id == 0)
    assert memory.turns[0].tokens > 60 > line.tokens
    recalled = memory.recall("Which ships did the lighthouse keeper log?", max_tokens=60)
    assert 0 not in {turn.turn_id for turn in recalled.turns}  # the whole turn does not fit
    assert line.text in recalled.summary and recalled.tokens <= 60


def test_a_question_lifts_the_turns_that_can_answer_it(tmp_path: Path) -> None:
    memory = ConversationMemory(tmp_path / "talk", HashingEmbedder())
    said = [
        ("Ana", "I finally tried the pottery class at the community centre.", START),
        ("Ben", "Ana told me the pottery class was fun.", START),
        ("Ben", "The pottery class was full when I asked in March.", datetime(2023, 3, 14)),
        ("Ana", "We glazed the pottery bowls yesterday.", datetime(2023, 5, 20)),
        ("Ben", "The pottery bowls came out of the kiln.", datetime(2023, 5, 20)),
    ]
    for speaker, text, when in said:
        memory.add_turn(speaker, text, when)

    def best(question: str) -> int:
        return memory.recall(question, max_tokens=2000).turns[0].turn_id

    # Whose: a question about Ana is answered by what Ana said.
    assert best("What did Ana think of the pottery class at the community centre?") == 0
    # When it was said: a question naming March 2023 by the turn said then.
    assert best("Why was the pottery class a problem in March 2023?") == 2
    # When: a "when" question by the turn that says when.
    assert best("When were the pottery bowls glazed?") == 3


def test_neighbouring_turns_of_a_hit_are_lifted(tmp_path: Path, embedder) -> None:
    memory = ConversationMemory(tmp_path / "talk", embedder, ConversationConfig())
    lines = [
        ("Ana", "Did you book anything for the holiday yet?"),
        ("Ben", "Yes, the cabin near Lake Bled, for the second week of August."),
        ("Ana", "Lovely. And the flights?"),
        ("Ben", "Ljubljana, arriving on the Saturday morning."),
    ] + [("Ana" if i % 2 else "Ben", TOPICS[i % len(TOPICS)]) for i in range(30)]
    for speaker, text in lines:
        memory.add_turn(speaker, text)
    plain = ConversationMemory(
        tmp_path / "talk", embedder, ConversationConfig(contiguity=0.0, recency=0.0)
    )
    query = "Where is the cabin we booked near Lake Bled?"
    with_contiguity = {t.turn_id: t.score for t in memory.recall(query, 2000).turns}
    without = {t.turn_id: t.score for t in plain.recall(query, 2000).turns}
    assert max(with_contiguity, key=with_contiguity.get) == 1
    # Turns 0 and 2, the question before and the reply after, gain from their neighbour.
    assert with_contiguity[0] - without[0] > 0.05 and with_contiguity[2] - without[2] > 0.05


_WRITER = textwrap.dedent(
    """
    import sys
    from datetime import datetime
    sys.path.insert(0, {repo!r})
    from memory_bank.config import ConversationConfig
    from memory_bank.conversation.memory import ConversationMemory
    from tests.fakes import HashingEmbedder
    memory = ConversationMemory({directory!r}, HashingEmbedder(),
                                ConversationConfig(working_tokens=120, summary_tokens=60))
    for number in range({count}):
        memory.add_turn("Ana", f"Turn {{number}}: the boat to Mull leaves at {{number}} o'clock.",
                        datetime(2024, 1, 1, 9, number % 60))
    print(memory.state.evicted, memory.state.evictions, flush=True)
    """
)


def test_eviction_is_durable_across_a_process_restart(tmp_path: Path) -> None:
    directory = tmp_path / "talk"
    script = _WRITER.format(repo=str(REPO), directory=str(directory), count=60)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    evicted, evictions = map(int, done.stdout.split())
    assert evicted > 0 and evictions > 0

    reopened = ConversationMemory(
        directory, HashingEmbedder(), ConversationConfig(working_tokens=120)
    )
    assert len(reopened.turns) == 60
    assert reopened.state.evicted == evicted and reopened.state.evictions == evictions
    assert reopened.summary  # the summary written at the last eviction
    assert [record.turn_id for record in reopened.turns] == list(range(60))
    assert reopened.index.vectors.shape == (60, 384)
    # The reopened memory goes on from where the other process stopped.
    record = reopened.add_turn("Ben", "And the ferry back is at six.")
    assert record.turn_id == 60


def test_a_torn_tail_is_repaired_and_a_missing_vector_recomputed(tmp_path: Path) -> None:
    directory = tmp_path / "talk"
    memory = ConversationMemory(directory, HashingEmbedder())
    for number in range(5):
        memory.add_turn("Ana", f"Line {number} about the garden fence and the new gate.")
    with open(directory / TURNS_FILE, "ab") as handle:
        handle.write(b'{"turn_id": 5, "speaker": "Ana", "te')  # a crash mid-append
    with open(directory / VECTORS_FILE, "r+b") as handle:
        handle.truncate(4 * 384 * 4 + 100)  # the last vector torn off, part of one left

    reopened = ConversationMemory(directory, HashingEmbedder())
    assert [record.turn_id for record in reopened.turns] == list(range(5))
    assert (directory / VECTORS_FILE).stat().st_size == 5 * 384 * 4
    assert reopened.add_turn("Ben", "The gate needs oil.").turn_id == 5


def test_two_writers_on_one_conversation_keep_one_order(tmp_path: Path) -> None:
    first = ConversationMemory(tmp_path / "talk", HashingEmbedder())
    second = ConversationMemory(tmp_path / "talk", HashingEmbedder())
    first.add_turn("Ana", "First words.")
    second.add_turn("Ben", "Second words, from another process.")
    first.add_turn("Ana", "Third words.")
    assert [(r.turn_id, r.speaker) for r in first.turns] == [(0, "Ana"), (1, "Ben"), (2, "Ana")]
    second.sync()
    assert len(second.turns) == 3


def test_bad_turns_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    memory = ConversationMemory(tmp_path / "talk", HashingEmbedder())
    with pytest.raises(ToolError, match="non-empty"):
        memory.add_turn("Ana", "   ")
    with pytest.raises(ToolError, match="timestamp"):
        memory.add_turn("Ana", "Hello", "not a date at all")
    conversations = Conversations(tmp_path / "store", HashingEmbedder())
    for bad in ("../escape", "", "a/b", ".hidden"):
        with pytest.raises(ToolError, match="conversation id"):
            conversations.get(bad)
    assert memory.info().turns == 0  # nothing half-added
    record = memory.add_turn("Ana", "I saw the dentist yesterday.", "2024-03-01T10:00:00")
    assert record.dates[0].value == "2024-02-29"  # a leap year's February
    assert "yesterday (2024-02-29)" in record.rendered()


def test_relative_dates_of_turns_are_stored_and_recalled(tmp_path: Path, embedder) -> None:
    memory = ConversationMemory(tmp_path / "talk", embedder)
    memory.add_turn(
        "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful.", START
    )
    memory.add_turn("Melanie", "We are going camping next month, can't wait!", START)
    recalled = memory.recall("When did Caroline go to the support group?")
    best = recalled.turns[0]
    assert best.turn_id == 0 and "yesterday (2023-05-07)" in best.text
    assert "next month (2023-06)" in memory.turns[1].rendered()


LOCOMO_STYLE = {
    "sessions": [
        {
            "session_id": "1",
            "date_time": "1:56 pm on 8 May, 2023",
            "turns": [
                {
                    "speaker": "Caroline",
                    "text": "I went to a LGBTQ support group yesterday and it was so powerful.",
                },
                {"speaker": "Melanie", "text": "That's great! What happened there?"},
                {
                    "speaker": "Caroline",
                    "text": "The transgender stories were so inspiring, I felt accepted.",
                },
            ],
        },
        {
            "session_id": "2",
            "date_time": "11:12 am on 2 January, 2024",
            "turns": [
                {
                    "speaker": "Melanie",
                    "text": "I ran a charity race last Friday for mental health.",
                },
                {"speaker": "Caroline", "text": "Wow, how did it go? I am proud of you."},
            ],
        },
    ]
}


def test_a_conversation_source_keeps_session_dates_and_answers_when(
    tmp_path: Path, embedder
) -> None:
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps(LOCOMO_STYLE), encoding="utf-8")
    bank = MemoryBank(
        tmp_path / "store",
        config=AppConfig(),
        executor=lambda c: LocalExecutor(c, embedder),
        embedder=embedder,
    )
    bank.add(files=[source])

    answer = bank.request("When did Caroline go to the support group?").answer
    assert "2023-05-07" in answer
    race = bank.research("When did Melanie run the charity race?").answer
    assert "2023-12-29" in race  # the Friday before Tuesday 2 January 2024


def test_evicted_turns_flow_into_the_store_by_the_add_path(tmp_path: Path, embedder) -> None:
    config = AppConfig(conversation=ConversationConfig(working_tokens=200, summary_tokens=80))
    bank = MemoryBank(
        tmp_path / "store",
        config=config,
        executor=lambda c: LocalExecutor(c, embedder),
        embedder=embedder,
    )
    memory = bank.conversation("weekly")
    for speaker, text, when in _conversation_turns(40):
        memory.add_turn(speaker, text, when)
    assert memory.directory.parent == conversations_directory(bank.store)
    evicted = memory.state.evicted
    assert memory.consolidate() == evicted > 3
    assert memory.consolidate() == 0  # nothing new to hand over

    hits = bank.search("greyhound adopted by Priya", top_k=1)
    assert hits and "Biscuit" in hits[0].text
    assert bank.verify().ok
    assert bank.conversation("weekly") is memory
