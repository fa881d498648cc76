"""The local sentence-embedding model and whole-chunk encodings.

all-MiniLM-L6-v2 reads at most 256 word-pieces and silently truncates the rest, so a 1,000-token
chunk embedded whole would be represented by its first quarter. `Embedder.encode_chunks` instead
packs each chunk's sentences into windows that fit the model, runs one forward pass over all the
windows of a batch and derives two things from it: the chunk vector (the token-weighted mean of
its window vectors) and one vector per sentence (the mean of that sentence's contextual token
embeddings). Embedding a chunk therefore costs about one forward pass over its tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
from scipy import sparse

from memory_bank.config import EmbeddingConfig
from memory_bank.index.minilm import EMBEDDING_DIM, MAX_SEQ_LENGTH, TokenModel
from memory_bank.text.sentences import Span, split_sentence_spans

__all__ = [
    "EMBEDDING_DIM",
    "ChunkEncoding",
    "Embedder",
    "TextEncoder",
    "l2_normalize",
    "load_token_model",
]

_SPECIAL_TOKENS_PER_WINDOW = 2  # [CLS] ... [SEP]


class TextEncoder(Protocol):
    """What search needs from the embedding model (`Embedder` or a test double): questions are
    embedded with `encode`, short passages such as READMEs with `encode_passages` (the model
    that embedded the store's other passages, where queries run another precision)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...

    def encode_passages(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)  # eq=False: numpy arrays have no single truth value
class ChunkEncoding:
    """The embedding of one chunk: the whole-chunk vector plus one vector per sentence."""

    vector: np.ndarray  # (384,) float32, L2-normalized
    sentence_spans: list[Span]  # character offsets into the chunk text
    sentence_vectors: np.ndarray  # (len(sentence_spans), 384) float32, L2-normalized


def load_token_model(config: EmbeddingConfig, for_queries: bool = False) -> TokenModel:
    """The packaged MiniLM on the configured runtime (torch or ONNX Runtime) and precision
    (`query_precision` when `for_queries`)."""
    if config.runtime == "onnx":
        from memory_bank.index.minilm_onnx import OnnxMiniLM

        return OnnxMiniLM(
            config.num_threads, onnx_precision(config, for_queries), config.onnx_cache_dir
        )
    from memory_bank.index.minilm_torch import TorchMiniLM

    return TorchMiniLM(config.num_threads, config.precision)


def onnx_precision(
    config: EmbeddingConfig, for_queries: bool = False
) -> Literal["float32", "int8"]:
    """The ONNX model file that embeds passages, or queries when `for_queries`."""
    if for_queries and config.runtime == "onnx" and config.query_precision in ("auto", "int8"):
        return "int8"
    return "int8" if config.precision == "int8" else "float32"


@dataclass(frozen=True, eq=False)
class _TokenizedChunk:
    spans: list[Span]
    input_ids: np.ndarray  # (n,) word-piece ids without special tokens
    token_sentence: np.ndarray  # (n,) index into `spans` of the sentence holding each token
    windows: list[tuple[int, int]]  # token ranges [start, end) fed to the model one by one


class Embedder:
    """Embeds queries and chunks with lazily loaded models (torch or ONNX Runtime): one model,
    or with `query_precision` another precision of it for queries."""

    def __init__(
        self,
        config: EmbeddingConfig,
        model: TokenModel | None = None,
        query_model: TokenModel | None = None,
    ) -> None:
        self.config = config
        self._model = model
        self._query_model = query_model

    @property
    def model(self) -> TokenModel:
        if self._model is None:
            self._model = load_token_model(self.config)
        return self._model

    @property
    def query_model(self) -> TokenModel:
        if self._query_model is None:
            if onnx_precision(self.config, for_queries=True) != onnx_precision(self.config):
                self._query_model = load_token_model(self.config, for_queries=True)
            else:
                self._query_model = self.model
        return self._query_model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed queries (and other short texts) as a (n, 384) float32 L2-normalized array,
        with the query model.

        Text past the model's 256 word-pieces is ignored; use `encode_chunks` for long text.
        """
        if onnx_precision(self.config, for_queries=True) == "int8" and len(texts) > 1:
            # Dynamic int8 quantization scales a batch's activations together, so the other
            # texts of a batch and their padding would move a query's vector: one at a time,
            # a question gets the same vector however it arrives.
            return np.concatenate([self._encode_short(self.query_model, [t]) for t in texts])
        return self._encode_short(self.query_model, texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        """Embed passages (READMEs) with the passage model: stored beside the chunk vectors."""
        return self._encode_short(self.model, texts, release=True)

    def load(self) -> None:
        """Load the passage model now rather than on the first chunk. The query model (another
        precision of it, by default) loads on the first question: an ingest never asks one."""
        _ = self.model

    def _encode_short(
        self, model: TokenModel, texts: list[str], release: bool = False
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        limit = MAX_SEQ_LENGTH - _SPECIAL_TOKENS_PER_WINDOW
        pieces = [ids[:limit] for ids, _ in model.tokenizer.pieces(texts)]
        vectors = np.zeros((len(texts), EMBEDDING_DIM), dtype=np.float32)
        # Longest first, as sentence-transformers does, so each batch pads little.
        order = np.argsort([-len(ids) for ids in pieces], kind="stable")
        start = 0
        while start < len(order):
            width = len(pieces[order[start]]) + _SPECIAL_TOKENS_PER_WINDOW
            batch = order[start : start + self._rows_per_batch(width)]
            start += len(batch)
            input_ids, attention_mask = self._padded([pieces[i] for i in batch])
            hidden = model.token_embeddings(
                input_ids, attention_mask, last=release and start >= len(order)
            )
            vectors[batch] = _mean_pool(hidden, attention_mask)
        return l2_normalize(vectors)

    def _rows_per_batch(self, width: int) -> int:
        """Rows of `width` word-pieces per forward pass: `batch_size`, fewer for texts longer
        than a chunk's windows, so that a batch's attention (rows x width^2) needs no more
        memory than a batch of windows (the arena would otherwise grow again for READMEs)."""
        window = min(self.config.window_tokens, MAX_SEQ_LENGTH - _SPECIAL_TOKENS_PER_WINDOW)
        budget = self.config.batch_size * (window + _SPECIAL_TOKENS_PER_WINDOW) ** 2
        return max(1, min(self.config.batch_size, budget // width**2))

    def _padded(self, rows: list) -> tuple[np.ndarray, np.ndarray]:
        """[CLS] ids [SEP] per row, padded to the longest: int64 ids and attention mask."""
        tokenizer = self.model.tokenizer
        width = max(len(ids) for ids in rows) + _SPECIAL_TOKENS_PER_WINDOW
        input_ids = np.full((len(rows), width), tokenizer.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, ids in enumerate(rows):
            input_ids[row, 0] = tokenizer.cls_id
            input_ids[row, 1 : len(ids) + 1] = ids
            input_ids[row, len(ids) + 1] = tokenizer.sep_id
            attention_mask[row, : len(ids) + _SPECIAL_TOKENS_PER_WINDOW] = 1
        return input_ids, attention_mask

    def encode_chunks(self, texts: list[str]) -> list[ChunkEncoding]:
        """Embed whole chunks: one vector per chunk plus one per sentence, from one forward pass."""
        if not texts:
            return []
        chunks = self._tokenize(texts)
        sentence_base = np.cumsum([0] + [len(chunk.spans) for chunk in chunks])
        token_global_sentence = [
            chunk.token_sentence + sentence_base[i] for i, chunk in enumerate(chunks)
        ]
        windows = [
            (chunk_index, start, end)
            for chunk_index, chunk in enumerate(chunks)
            for start, end in chunk.windows
        ]
        window_vectors, sentence_sums = self._forward_windows(
            chunks, token_global_sentence, windows, total_sentences=int(sentence_base[-1])
        )

        # The chunk vector weights each window by its size, so a short tail window counts little.
        window_chunk = np.array([chunk_index for chunk_index, _, _ in windows])
        window_weight = np.array([max(end - start, 1) for _, start, end in windows], np.float32)
        chunk_sums = np.zeros((len(chunks), EMBEDDING_DIM), dtype=np.float32)
        np.add.at(chunk_sums, window_chunk, window_vectors * window_weight[:, None])
        chunk_vectors = l2_normalize(chunk_sums)

        token_counts = np.bincount(
            np.concatenate(token_global_sentence), minlength=int(sentence_base[-1])
        )
        encodings = []
        for i, chunk in enumerate(chunks):
            rows = slice(sentence_base[i], sentence_base[i + 1])
            sums = sentence_sums[rows]
            # A sentence of characters the tokenizer drops has no tokens: it stands for the chunk.
            sums[token_counts[rows] == 0] = chunk_vectors[i]
            encodings.append(
                ChunkEncoding(
                    vector=chunk_vectors[i],
                    sentence_spans=chunk.spans,
                    sentence_vectors=l2_normalize(sums),
                )
            )
        return encodings

    def _tokenize(self, texts: list[str]) -> list[_TokenizedChunk]:
        """Tokenize every chunk once; windows are later cut from these ids, never re-tokenized.

        Cutting at sentence starts gives the same word-pieces as tokenizing each window's text
        on its own, because WordPiece never joins characters across whitespace.
        """
        window_size = min(self.config.window_tokens, MAX_SEQ_LENGTH - _SPECIAL_TOKENS_PER_WINDOW)
        chunks = []
        for text, (ids, offsets) in zip(texts, self.model.tokenizer.pieces(texts), strict=True):
            spans = split_sentence_spans(text) or [Span(0, len(text))]
            span_starts = np.array([span.start for span in spans])
            token_starts = np.array([start for start, _ in offsets], dtype=np.int64)
            token_sentence = np.clip(
                np.searchsorted(span_starts, token_starts, side="right") - 1, 0, None
            )
            sentence_first_token = np.searchsorted(token_starts, span_starts, side="left")
            chunks.append(
                _TokenizedChunk(
                    spans=spans,
                    input_ids=np.asarray(ids, dtype=np.int64),
                    token_sentence=token_sentence,
                    windows=_pack_windows(sentence_first_token, len(ids), window_size),
                )
            )
        return chunks

    def _forward_windows(
        self,
        chunks: list[_TokenizedChunk],
        token_global_sentence: list[np.ndarray],
        windows: list[tuple[int, int, int]],
        total_sentences: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Run the model over all windows; return window vectors and per-sentence token sums."""
        window_vectors = np.zeros((len(windows), EMBEDDING_DIM), dtype=np.float32)
        sentence_sums = np.zeros((total_sentences, EMBEDDING_DIM), dtype=np.float32)
        # Longest first, like SentenceTransformer.encode, so each batch pads little.
        lengths = np.array([end - start for _, start, end in windows])
        order = np.argsort(-lengths, kind="stable")
        for batch_start in range(0, len(order), self.config.batch_size):
            batch = order[batch_start : batch_start + self.config.batch_size]
            last = batch_start + self.config.batch_size >= len(order)
            rows = []
            for window_index in batch:
                chunk_index, start, end = windows[window_index]
                rows.append(chunks[chunk_index].input_ids[start:end])
            input_ids, attention_mask = self._padded(rows)
            # Global sentence id of each position; -1 marks [CLS], [SEP] and padding.
            position_sentence = np.full(input_ids.shape, -1, dtype=np.int64)
            for row, window_index in enumerate(batch):
                chunk_index, start, end = windows[window_index]
                position_sentence[row, 1 : end - start + 1] = token_global_sentence[chunk_index][
                    start:end
                ]
            hidden = self.model.token_embeddings(input_ids, attention_mask, last=last)
            window_vectors[batch] = _mean_pool(hidden, attention_mask)
            flat_sentence = position_sentence.reshape(-1)
            content = np.flatnonzero(flat_sentence >= 0)
            # Sum each sentence's token vectors: a (sentences x positions) 0/1 matrix product.
            membership = sparse.csr_matrix(
                (np.ones(len(content), np.float32), (flat_sentence[content], content)),
                shape=(total_sentences, flat_sentence.size),
            )
            sentence_sums += membership @ hidden.reshape(-1, EMBEDDING_DIM)
        return window_vectors, sentence_sums


def _pack_windows(
    sentence_first_token: np.ndarray, token_count: int, window_size: int
) -> list[tuple[int, int]]:
    """Cut [0, token_count) into ranges of at most `window_size` tokens that break between
    sentences, except inside a sentence longer than a window, which is cut where it must be."""
    if token_count == 0:
        return [(0, 0)]  # an empty text still gets the model's embedding of [CLS] [SEP]
    boundaries = np.unique(np.concatenate(([0], sentence_first_token, [token_count])))
    windows = []
    start = 0
    while start < token_count:
        limit = start + window_size
        furthest = boundaries[np.searchsorted(boundaries, limit, side="right") - 1]
        end = int(furthest) if furthest > start else min(limit, token_count)
        windows.append((start, end))
        start = end
    return windows


def _mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The mean of each row's token vectors where the mask is 1 (the model's own pooling)."""
    mask = attention_mask[:, :, None].astype(np.float32)
    return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
