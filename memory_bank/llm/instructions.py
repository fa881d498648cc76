"""The instructions each LLM role is prompted with, kept as Markdown in `llm/prompts/`."""

from __future__ import annotations

from importlib import resources


def role_instructions(role: str) -> str:
    """The instructions of `role`, from `llm/prompts/<role>.md`."""
    return resources.files("memory_bank.llm").joinpath(f"prompts/{role}.md").read_text("utf-8")
