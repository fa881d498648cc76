"""LLM roles: the contract (`roles`) and its backends (`offline`, the embedded default, and
`openai`, any OpenAI-compatible endpoint)."""

from __future__ import annotations

from memory_bank.config import LLMConfig
from memory_bank.errors import ConfigError
from memory_bank.llm.roles import LLMBackend


def backend_for(config: LLMConfig) -> LLMBackend:
    """The backend a config names."""
    if config.backend == "offline":
        from memory_bank.llm.offline import OfflineBackend

        return OfflineBackend()
    if config.backend == "openai":
        from memory_bank.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(config)
    raise ConfigError(f"unknown llm.backend {config.backend!r}")
