"""The ledger of LLM calls: per role, how many requests, cache hits, tokens, retries, repairs,
fallbacks, seconds and the estimated cost. One per process, held by its `LLM`; thread-safe;
ledgers from other processes (Ray workers, the writer actor) are merged in as plain dicts."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from pydantic import BaseModel, Field

from memory_bank.config import LLMConfig


class RoleUsage(BaseModel):
    calls: int = 0  # requests sent to the endpoint
    cached: int = 0  # answered from the response cache, no request
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    repairs: int = 0  # re-prompts after a reply that did not validate
    format_downgrades: int = 0  # response_format refused: asked in a simpler format
    fallbacks: int = 0  # the role gave up and used its documented fallback
    seconds: float = 0.0
    cost: float = 0.0  # estimated, from the configured prices


class LedgerSummary(BaseModel):
    roles: dict[str, RoleUsage] = Field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(usage.calls for usage in self.roles.values())

    def merge(self, other: LedgerSummary | Mapping) -> None:
        if not isinstance(other, LedgerSummary):
            other = LedgerSummary.model_validate(other)
        for role, usage in other.roles.items():
            mine = self.roles.setdefault(role, RoleUsage())
            for field in RoleUsage.model_fields:
                setattr(mine, field, getattr(mine, field) + getattr(usage, field))


class Ledger:
    def __init__(self, config: LLMConfig) -> None:
        self._prices = (config.prompt_price_per_million, config.completion_price_per_million)
        self._summary = LedgerSummary()
        self._lock = threading.Lock()

    def record(
        self,
        role: str,
        *,
        cached: bool = False,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        seconds: float = 0.0,
    ) -> None:
        with self._lock:
            usage = self._summary.roles.setdefault(role, RoleUsage())
            if cached:
                usage.cached += 1
                return
            usage.calls += 1
            usage.prompt_tokens += prompt_tokens
            usage.completion_tokens += completion_tokens
            usage.seconds += seconds
            usage.cost += (
                prompt_tokens * self._prices[0] + completion_tokens * self._prices[1]
            ) / 1e6

    def count(self, role: str, event: str) -> None:
        """One more `event` (retries, repairs, format_downgrades, fallbacks) for `role`."""
        with self._lock:
            usage = self._summary.roles.setdefault(role, RoleUsage())
            setattr(usage, event, getattr(usage, event) + 1)

    def peek(self) -> LedgerSummary:
        """What was recorded since the last take (a copy; the ledger keeps it)."""
        with self._lock:
            return self._summary.model_copy(deep=True)

    def take(self) -> LedgerSummary:
        """What was recorded since the last take (and start afresh)."""
        with self._lock:
            summary, self._summary = self._summary, LedgerSummary()
        return summary

    def merge(self, other: LedgerSummary | Mapping) -> None:
        with self._lock:
            self._summary.merge(other)


def take_usage(llm: object) -> LedgerSummary:
    """What `llm` recorded since the last take; empty for None (the offline strategies make
    no calls)."""
    ledger = getattr(llm, "ledger", None)
    return ledger.take() if isinstance(ledger, Ledger) else LedgerSummary()


def add_usage(llm: object, usage: LedgerSummary | Mapping) -> None:
    """Merge usage recorded elsewhere (a Ray worker) into `llm`'s ledger, if there is one."""
    ledger = getattr(llm, "ledger", None)
    if isinstance(ledger, Ledger):
        ledger.merge(usage)
