"""The provider seam: one small interface to a language model (`seam.LLM`: complete with a
schema, complete with tools), its OpenAI-compatible implementation (`endpoint`, over the
retrying, repairing, caching, accounting `client`), the ledger of calls, and the one agent loop
(`agent`) that tool-using roles share. Nothing here knows a capability: each capability owns its
roles, prompts and offline strategies, and is handed an `LLM` (or None: offline) by its root."""

from __future__ import annotations

from memory_bank.config import LLMConfig
from memory_bank.errors import ConfigError
from memory_bank.llm.seam import LLM


def open_llm(config: LLMConfig) -> LLM | None:
    """The LLM `config` names; None for the offline backend. Called by the root of a process
    (the `MemoryBank` facade; on Ray, once per worker), which passes it down."""
    if config.backend == "offline":
        return None
    if config.backend == "openai":
        from memory_bank.llm.endpoint import OpenAICompatible

        return OpenAICompatible(config)
    raise ConfigError(f"unknown llm.backend {config.backend!r}")


def check_llm(config: LLMConfig, llm: LLM | None) -> LLM | None:
    """`llm`, once it is what `config` names (an LLM, or None for the offline backend): a root
    that forgot to pass its LLM would otherwise answer offline without a word."""
    if (llm is None) != (config.backend == "offline"):
        given = "no LLM" if llm is None else "an LLM"
        raise ConfigError(f"llm.backend is {config.backend!r} but {given} was given")
    return llm
