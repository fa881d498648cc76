"""Which embedder makes a store's vectors: the one a configuration asks for (`build_embedder`),
and the check that a store's vectors came from it (`check_store_embedder`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memory_bank.config import EmbedderIdentity, EmbeddingConfig, embedder_identity
from memory_bank.errors import StoreError
from memory_bank.index.embedding import Embedder
from memory_bank.index.remote_embedding import RemoteEmbedder


def build_embedder(config: EmbeddingConfig) -> Embedder | RemoteEmbedder:
    """The configured embedder: the packaged MiniLM (`Embedder`) or an endpoint's
    (`RemoteEmbedder`); both load lazily, on the first text."""
    if config.provider == "openai":
        return RemoteEmbedder(config)
    return Embedder(config)


def check_store_embedder(meta: Mapping[str, Any], config: EmbeddingConfig) -> None:
    """Raise `StoreError` naming both embedders when a store's vectors (its `meta`) were made by
    another embedder than `config` asks for: vectors of two models never share an index."""
    stored = EmbedderIdentity.from_meta(meta.get("embedder"))
    wanted = embedder_identity(config)
    if stored != wanted:
        raise StoreError(
            f"the store's vectors were made by {stored}, the configuration embeds with "
            f"{wanted}: vectors of two embedders cannot be mixed. Use the store's embedder "
            "settings, or move the store to the configured embedder with "
            "`memory-bank rebuild --reembed` (`python -m jobs.rebuild --reembed`)."
        )
