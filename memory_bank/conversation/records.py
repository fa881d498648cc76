"""What a live conversation keeps and returns: turns, resolved dates, recall results, state."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class DateNote(BaseModel):
    """A relative date said in a turn and what it means ("yesterday" -> "2023-05-07")."""

    expression: str
    start: int  # character span in the turn's text
    end: int
    value: str
    granularity: Literal["day", "week", "month", "season", "year"]


class TurnRecord(BaseModel):
    """One turn, as appended to the conversation's log (never changed afterwards)."""

    model_config = ConfigDict(extra="forbid")

    turn_id: int  # 0, 1, 2, ... in the order the turns were added
    speaker: str
    text: str  # as said
    timestamp: str | None = None  # ISO 8601, as given or read from the given form
    dates: list[DateNote] = Field(default_factory=list)
    tokens: int  # of `rendered()`, what the working memory counts against its budget

    def rendered(self) -> str:
        """The turn as context: "[timestamp] speaker: text", each relative date followed by
        what it means."""
        parts, position = [], 0
        for note in sorted(self.dates, key=lambda note: note.start):
            parts += [self.text[position : note.end], f" ({note.value})"]
            position = note.end
        text = "".join([*parts, self.text[position:]])
        prefix = f"[{self.timestamp}] " if self.timestamp else ""
        return f"{prefix}{self.speaker}: {text}"


class RecalledTurn(BaseModel):
    turn_id: int
    speaker: str
    text: str  # rendered: timestamp, speaker and resolved dates included
    timestamp: str | None = None
    score: float
    tier: Literal["working", "episodic"]
    tokens: int


class RecallResult(BaseModel):
    """What `recall(query)` returns: the running summary and the turns relevant to the query,
    best first, within a token budget (the summary counts against it)."""

    query: str
    summary: str
    turns: list[RecalledTurn]
    tokens: int  # summary plus turns

    def context(self) -> str:
        """Summary, then the recalled turns in the order they were said."""
        parts = [f"Summary of earlier conversation:\n{self.summary}"] if self.summary else []
        parts += [turn.text for turn in sorted(self.turns, key=lambda turn: turn.turn_id)]
        return "\n\n".join(parts)


class SummaryUnit(BaseModel):
    """One line of the recursive summary: an extract of an evicted turn, standing for
    `weight` evicted turns (those it was chosen over, at this and earlier evictions)."""

    turn_id: int
    text: str
    weight: float = 1.0
    tokens: int


class ConversationState(BaseModel):
    """The tiers' boundaries, written atomically after every eviction."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: str
    evicted: int = 0  # turns 0 .. evicted-1 have left the working memory (episodic tier)
    consolidated: int = 0  # turns 0 .. consolidated-1 have been added to the store
    summary: list[SummaryUnit] = Field(default_factory=list)
    evictions: int = 0


class ConversationInfo(BaseModel):
    conversation_id: str
    turns: int
    working_turns: int
    working_tokens: int
    episodic_turns: int
    consolidated_turns: int
    summary: str
    summary_tokens: int
    evictions: int
