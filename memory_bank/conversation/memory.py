"""A live conversation in three tiers (seed 004): working, episodic and semantic memory.

- working: the most recent turns, at most `conversation.working_tokens` tokens. When a new turn
  takes it past the budget, its oldest quarter (`evict_fraction`) is evicted, again until it
  fits: those turns become episodic and the recursive summary is updated from them
  (`summary.py`: the summary of summaries stays within `summary_tokens`).
- episodic: every evicted turn in full (speaker, timestamp, resolved dates, embedding), on disk
  in an append-only log (`log.py`); each turn is appended durably when it is added, eviction
  only moves the boundary (written atomically with the summary).
- semantic: `consolidate(add)` hands the evicted turns not yet consolidated, as a JSON
  conversation, to the store's normal add path (`MemoryBank.add`), which memorizes, embeds and
  places them in the taxonomy like any other source.

`recall(query)` returns the summary plus the turns of both tiers that are relevant to the query
(`recall.py`), within a token budget. Several processes may share a conversation directory:
each change takes the directory's lock and first reads what others appended.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from memory_bank.config import ConversationConfig
from memory_bank.conversation.log import TurnLog
from memory_bank.conversation.recall import RecallFocus, RecallWeights, TurnIndex
from memory_bank.conversation.records import (
    ConversationInfo,
    ConversationState,
    DateNote,
    RecalledTurn,
    RecallResult,
    SummaryUnit,
    TurnRecord,
)
from memory_bank.conversation.summary import summary_text, update_summary
from memory_bank.errors import ToolError
from memory_bank.index.embedding import TextEncoder
from memory_bank.store.atomic import atomic_write_text
from memory_bank.text.dates import (
    named_periods,
    parse_timestamp,
    period_of,
    resolve_relative_dates,
)
from memory_bank.text.tokens import count_tokens

EVICTION_TIMES_KEPT = 10_000
CONVERSATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
SEGMENTS_DIR = "segments"


def check_conversation_id(conversation_id: str) -> str:
    if not CONVERSATION_ID.fullmatch(conversation_id or "") or ".." in conversation_id:
        raise ToolError(
            f"invalid conversation id {conversation_id!r}: use 1-128 letters, digits, '_', '-' "
            "or '.', starting with a letter or digit"
        )
    return conversation_id


class ConversationMemory:
    """One conversation's tiers, kept in `directory` (see the module docstring)."""

    def __init__(
        self,
        directory: str | Path,
        encoder: TextEncoder,
        config: ConversationConfig | None = None,
        conversation_id: str | None = None,
        add_to_store: Callable[[list[Path]], object] | None = None,
    ) -> None:
        """`add_to_store(files)` is the store's add path the semantic tier flows into
        (`MemoryBank.add`); without it `consolidate` needs one passed in."""
        self.directory = Path(directory)
        self.conversation_id = check_conversation_id(conversation_id or self.directory.name)
        self.encoder = encoder
        self.config = config or ConversationConfig()
        self.weights = RecallWeights(
            alpha=self.config.alpha,
            contiguity=self.config.contiguity,
            recency=self.config.recency,
            half_life=self.config.recency_half_life,
        )
        self.add_to_store = add_to_store
        self.log = TurnLog(self.directory)
        self.turns: list[TurnRecord] = []
        self.index = TurnIndex()
        self.state = ConversationState(conversation_id=self.conversation_id)
        self._log_bytes = 0
        self._state_mtime = 0
        # Seconds each of the last evictions took (summary update and state write).
        self.eviction_seconds: deque[float] = deque(maxlen=EVICTION_TIMES_KEPT)
        self.sync()

    # --- reading ------------------------------------------------------------------------------

    def sync(self) -> None:
        """Read what other processes appended or evicted since this object last looked."""
        if self.log.size() != self._log_bytes:
            records, vectors, self._log_bytes = self.log.load(
                len(self.turns), self._log_bytes, self._embed
            )
            for record, vector in zip(records, vectors, strict=True):
                self._append(record, vector)
        mtime = self.log.state_path.stat().st_mtime_ns if self.log.state_path.exists() else 0
        if mtime != self._state_mtime:
            self.state = self.log.read_state(self.conversation_id)
            self._state_mtime = mtime

    @property
    def summary(self) -> str:
        return summary_text(self.state.summary)

    def working(self) -> list[TurnRecord]:
        return self.turns[self.state.evicted :]

    def episodic(self) -> list[TurnRecord]:
        return self.turns[: self.state.evicted]

    def working_tokens(self) -> int:
        return sum(record.tokens for record in self.working())

    def info(self) -> ConversationInfo:
        self.sync()
        return ConversationInfo(
            conversation_id=self.conversation_id,
            turns=len(self.turns),
            working_turns=len(self.working()),
            working_tokens=self.working_tokens(),
            episodic_turns=self.state.evicted,
            consolidated_turns=self.state.consolidated,
            summary=self.summary,
            summary_tokens=sum(unit.tokens for unit in self.state.summary),
            evictions=self.state.evictions,
        )

    # --- writing ------------------------------------------------------------------------------

    def add_turn(
        self, speaker: str, text: str, timestamp: str | datetime | None = None
    ) -> TurnRecord:
        """Append a turn (durably) and evict from the working memory if it is over budget.
        `timestamp`: an ISO 8601 string or a datetime; relative dates in `text` are resolved
        against it."""
        return self.add_turns([(speaker, text, timestamp)])[0]

    def add_turns(
        self, turns: Sequence[tuple[str, str, str | datetime | None]]
    ) -> list[TurnRecord]:
        """`add_turn` for several turns in order (speaker, text, timestamp), embedded in one
        batch (a transcript replayed); each is appended and may evict as it would alone.
        Every turn is checked before any is added."""
        prepared = [_prepare(speaker, text, timestamp) for speaker, text, timestamp in turns]
        vectors = self._embed([record.rendered() for record in prepared]) if prepared else []
        with self.log.locked():
            self.sync()
            added = [
                record.model_copy(update={"turn_id": len(self.turns) + number})
                for number, record in enumerate(prepared)
            ]
            # Every turn is on disk before any eviction the batch causes is recorded.
            if added:
                self._log_bytes = self.log.append(added, np.asarray(vectors))
            for record, vector in zip(added, vectors, strict=True):
                self._append(record, vector)
                while (
                    self.working_tokens() > self.config.working_tokens and len(self.working()) > 1
                ):
                    self._evict()
        every = self.config.consolidate_turns
        if every and self.add_to_store and self.state.evicted - self.state.consolidated >= every:
            self.consolidate()
        return added

    def _append(self, record: TurnRecord, vector: np.ndarray) -> None:
        said = parse_timestamp(record.timestamp).date() if record.timestamp else None
        periods = [period_of(note.value) for note in record.dates] + named_periods(record.text)
        self.turns.append(record)
        self.index.add(record.text, vector, record.speaker, said, periods)

    def _evict(self) -> None:
        """Move the oldest quarter of the working memory into the episodic tier and the
        recursive summary; the new boundary and summary are written atomically."""
        began = time.perf_counter()
        working = self.working()
        count = max(1, math.ceil(len(working) * self.config.evict_fraction))
        count = min(count, len(working) - 1)  # the newest turn always stays
        evicted = working[:count]
        summary = update_summary(
            self.state.summary,
            evicted,
            self.index.vector,
            self.config.summary_tokens,
            count_tokens,
        )
        self.state = self.state.model_copy(
            update={
                "evicted": self.state.evicted + count,
                "summary": summary,
                "evictions": self.state.evictions + 1,
            }
        )
        self.log.write_state(self.state)
        self._state_mtime = self.log.state_path.stat().st_mtime_ns
        self.eviction_seconds.append(time.perf_counter() - began)

    # --- recall -------------------------------------------------------------------------------

    def recall(
        self, query: str, max_tokens: int | None = None, include_working: bool = True
    ) -> RecallResult:
        """The turns most relevant to `query`, and the summary lines that stand for those that
        do not fit, within `max_tokens` (default `conversation.recall_tokens`).

        Summary and turns share the budget by relevance: turns come as episodes, each hit best
        first with the `context_turns` turns on each side of it (nearest first), as far as the
        budget goes; where a hit itself no longer fits, the summary's line extracted from it
        (if the summary kept one) stands in for it, the summary taking at most `summary_share`
        of the budget. `turns` lists them hit by hit, each hit before its neighbours."""
        if not query.strip():
            raise ToolError("the query must not be empty")
        budget = self.config.recall_tokens if max_tokens is None else max_tokens
        if budget < 1:
            raise ToolError(f"max_tokens must be at least 1, got {budget}")
        self.sync()
        query_vector = self._embed([query])[0]
        limit = len(self.turns) if include_working else self.state.evicted
        focus = RecallFocus.of(query, self.index.speakers)
        scores = self.index.scores(query, query_vector, self.weights, focus)[:limit]
        lines = {unit.turn_id: unit for unit in self.state.summary}
        summary_budget = int(budget * self.config.summary_share)
        chosen: dict[int, RecalledTurn] = {}
        stand_ins: list[SummaryUnit] = []
        used = summary_used = 0
        for hit in _best_first(scores, MAX_CANDIDATES):
            hit = int(hit)
            if hit in chosen:
                continue
            line = lines.get(hit)
            if (
                used + self.turns[hit].tokens > budget
                and line is not None
                and summary_used + line.tokens <= summary_budget
                and used + line.tokens <= budget
            ):
                stand_ins.append(line)
                used += line.tokens
                summary_used += line.tokens
            for turn_id in _episode(hit, self.config.context_turns, limit):
                record = self.turns[turn_id]
                if turn_id in chosen or used + record.tokens > budget:
                    continue
                used += record.tokens
                chosen[turn_id] = self._recalled(turn_id, float(scores[turn_id]))
            if budget - used < MIN_USEFUL_TOKENS:
                break
        stand_ins.sort(key=lambda unit: unit.turn_id)
        return RecallResult(
            query=query, summary=summary_text(stand_ins), turns=list(chosen.values()), tokens=used
        )

    def _recalled(self, turn_id: int, score: float) -> RecalledTurn:
        record = self.turns[turn_id]
        return RecalledTurn(
            turn_id=turn_id,
            speaker=record.speaker,
            text=record.rendered(),
            timestamp=record.timestamp,
            score=round(score, 6),
            tier="working" if turn_id >= self.state.evicted else "episodic",
            tokens=record.tokens,
        )

    # --- the semantic tier --------------------------------------------------------------------

    def consolidate(self, add: Callable[[list[Path]], object] | None = None) -> int:
        """Hand the evicted turns not yet consolidated to the store's add path (`add(files)`,
        default `add_to_store`) as one JSON conversation file; returns how many."""
        add = add or self.add_to_store
        if add is None:
            raise ToolError("this conversation has no store to consolidate into")
        with self.log.locked():
            self.sync()
            start, end = self.state.consolidated, self.state.evicted
            if end <= start:
                return 0
            name = f"{self.conversation_id}_turns_{start:06d}-{end - 1:06d}.json"
            segment = self.directory / SEGMENTS_DIR / name
            turns = [
                {"speaker": record.speaker, "text": record.text, "timestamp": record.timestamp}
                if record.timestamp
                else {"speaker": record.speaker, "text": record.text}
                for record in self.turns[start:end]
            ]
            atomic_write_text(segment, json.dumps(turns, ensure_ascii=False, indent=1) + "\n")
            add([segment])  # raises on failure: the boundary stays, nothing is lost
            self.state = self.state.model_copy(update={"consolidated": end})
            self.log.write_state(self.state)
            self._state_mtime = self.log.state_path.stat().st_mtime_ns
            return end - start

    def _embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.encoder.encode(texts), dtype=np.float32)


# A recall stops looking once less than this many tokens of its budget are left, and looks at
# no more than MAX_CANDIDATES turns.
MIN_USEFUL_TOKENS = 8
MAX_CANDIDATES = 1000


def _episode(hit: int, context: int, limit: int) -> list[int]:
    """A hit and its `context` neighbours on each side within 0..limit-1, nearest first."""
    around = [hit]
    for distance in range(1, context + 1):
        around += [turn for turn in (hit - distance, hit + distance) if 0 <= turn < limit]
    return around


def _best_first(scores: np.ndarray, count: int) -> np.ndarray:
    if len(scores) > count:
        top = np.argpartition(-scores, count - 1)[:count]
        return top[np.lexsort((top, -scores[top]))]
    return np.argsort(-scores, kind="stable")


def _prepare(speaker: str, text: str, timestamp: str | datetime | None) -> TurnRecord:
    """A turn checked and dated (its number is given when it is appended)."""
    speaker, text = (speaker or "").strip(), (text or "").strip()
    if not speaker or not text:
        raise ToolError("a turn needs a non-empty speaker and text")
    when = None
    if timestamp is not None and timestamp != "":
        try:
            when = parse_timestamp(timestamp)
        except ValueError as exc:
            raise ToolError(f"invalid timestamp: {exc}") from exc
    dates = [
        DateNote(
            expression=found.expression,
            start=found.start,
            end=found.end,
            value=found.value,
            granularity=found.granularity,
        )
        for found in (resolve_relative_dates(text, when) if when is not None else [])
    ]
    record = TurnRecord(
        turn_id=0,
        speaker=speaker,
        text=text,
        timestamp=when.isoformat(timespec="seconds") if when is not None else None,
        dates=dates,
        tokens=0,
    )
    return record.model_copy(update={"tokens": count_tokens(record.rendered())})


def conversations_directory(store: str | Path) -> Path:
    """Where the conversations of a store live: beside it (`.NAME.conversations/`), not inside
    it, since the store path is a link each commit moves to a new version directory."""
    path = Path(store)
    return path.parent / f".{path.name}.conversations"


class Conversations:
    """The live conversations of one store, opened on first use and kept (thread-safe)."""

    def __init__(
        self,
        store: str | Path,
        encoder: TextEncoder,
        config: ConversationConfig | None = None,
        add_to_store: Callable[[list[Path]], object] | None = None,
    ) -> None:
        self.directory = conversations_directory(store)
        self.encoder = encoder
        self.config = config or ConversationConfig()
        self.add_to_store = add_to_store
        self._open: dict[str, ConversationMemory] = {}
        self._lock = threading.Lock()

    def get(self, conversation_id: str) -> ConversationMemory:
        check_conversation_id(conversation_id)
        with self._lock:
            memory = self._open.get(conversation_id)
            if memory is None:
                memory = ConversationMemory(
                    self.directory / conversation_id,
                    self.encoder,
                    self.config,
                    conversation_id,
                    self.add_to_store,
                )
                self._open[conversation_id] = memory
            return memory

    def ids(self) -> list[str]:
        if not self.directory.is_dir():
            return []
        return sorted(
            path.name
            for path in self.directory.iterdir()
            if path.is_dir() and CONVERSATION_ID.fullmatch(path.name)
        )
