"""Test doubles that keep the real interfaces: a hashing embedder with no model to load."""

from __future__ import annotations

import hashlib
import re

import numpy as np

from memory_bank.index.embedding import EMBEDDING_DIM, ChunkEncoding
from memory_bank.text.sentences import split_sentence_spans

_WORD = re.compile(r"\w+")


def _bag_of_words_vector(text: str) -> np.ndarray:
    """Texts sharing words get similar vectors, which is all the taxonomy needs from a fake."""
    vector = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "little") % EMBEDDING_DIM] += 1.0
    norm = np.linalg.norm(vector)
    if norm == 0:
        vector[0] = 1.0
        return vector
    return vector / norm


class HashingEmbedder:
    """Stands in for `Embedder` where the model's cost would dominate a test (huge inputs)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        return np.stack([_bag_of_words_vector(text) for text in texts])

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def encode_chunks(self, texts: list[str]) -> list[ChunkEncoding]:
        encodings = []
        for text in texts:
            spans = split_sentence_spans(text) or []
            sentence_vectors = (
                np.stack([_bag_of_words_vector(text[s.start : s.end]) for s in spans])
                if spans
                else np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
            )
            encodings.append(
                ChunkEncoding(
                    vector=_bag_of_words_vector(text),
                    sentence_spans=list(spans),
                    sentence_vectors=sentence_vectors,
                )
            )
        return encodings
