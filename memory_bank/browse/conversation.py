"""A conversation as a page shows it, read from its files without the embedding model: the
working tier's latest turns and the running summary (recall itself needs the model and is the
query replicas' work)."""

from __future__ import annotations

from collections import deque
from pathlib import Path

from pydantic import ValidationError

from memory_bank.browse.models import ConversationPage, ConversationSummary
from memory_bank.conversation.log import TurnLog
from memory_bank.conversation.memory import (
    CONVERSATION_ID,
    check_conversation_id,
    conversations_directory,
)
from memory_bank.conversation.records import TurnRecord
from memory_bank.conversation.summary import summary_text
from memory_bank.errors import StoreError

MAX_WORKING_SHOWN = 200
MAX_CONVERSATIONS_LISTED = 500


def conversation_list(store: str | Path) -> list[ConversationSummary]:
    """The store's conversations by id, each with its number of turns."""
    directory = conversations_directory(store)
    if not directory.is_dir():
        return []
    found = sorted(
        path.name
        for path in directory.iterdir()
        if path.is_dir() and CONVERSATION_ID.fullmatch(path.name)
    )
    return [
        ConversationSummary(conversation_id=name, turns=_complete_lines(directory / name))
        for name in found[:MAX_CONVERSATIONS_LISTED]
    ]


def conversation_page(
    store: str | Path, conversation_id: str, limit: int = 50
) -> ConversationPage | None:
    """The latest `limit` turns of the working tier, oldest first, and the summary of the
    evicted ones; None when the store has no such conversation."""
    directory = conversations_directory(store) / check_conversation_id(conversation_id)
    if not directory.is_dir():
        return None
    log = TurnLog(directory)
    state = log.read_state(conversation_id)
    limit = max(0, min(limit, MAX_WORKING_SHOWN))
    latest: deque[TurnRecord] = deque(maxlen=limit)
    turns = 0
    for turns, line in enumerate(_complete_log_lines(log.turns_path), start=1):
        if turns > state.evicted and limit:
            latest.append(_record(log.turns_path, line))
    return ConversationPage(
        conversation_id=conversation_id,
        turns=turns,
        working=list(latest),
        working_total=max(0, turns - state.evicted),
        episodic_turns=state.evicted,
        consolidated_turns=state.consolidated,
        summary=summary_text(state.summary),
        evictions=state.evictions,
    )


def _complete_log_lines(path: Path):
    """The turn log's complete lines (a torn last line is an append still under way)."""
    if not path.is_file():
        return
    with open(path, "rb") as handle:
        for line in handle:
            if line.endswith(b"\n"):
                yield line


def _complete_lines(directory: Path) -> int:
    return sum(1 for _ in _complete_log_lines(TurnLog(directory).turns_path))


def _record(path: Path, line: bytes) -> TurnRecord:
    try:
        return TurnRecord.model_validate_json(line)
    except ValidationError as exc:
        raise StoreError(f"conversation log {path} has a corrupt turn: {exc}") from exc
