"""Refusing a request larger than the configured limits (`LimitsConfig`), before any work.

The query service and the session service check what they are given, so the limits hold for the
Python API and over HTTP alike (where an `InputTooLargeError` is a 413).
"""

from __future__ import annotations

from memory_bank.config import LimitsConfig
from memory_bank.errors import InputTooLargeError


def check_question(limits: LimitsConfig, text: str, what: str = "question") -> None:
    _check(what, len(text), limits.max_question_chars, "characters", "max_question_chars")


def check_context(limits: LimitsConfig, text: str, what: str = "context") -> None:
    _check(what, len(text), limits.max_context_chars, "characters", "max_context_chars")


def check_files(limits: LimitsConfig, count: int, what: str = "files") -> None:
    _check(what, count, limits.max_files, "entries", "max_files")


def _check(what: str, size: int, limit: int, unit: str, setting: str) -> None:
    if size > limit:
        raise InputTooLargeError(
            f"the {what} has {size:,} {unit}, more than the {limit:,} accepted (limits.{setting})"
        )
