"""The vectors of recently embedded texts, so that a text seen again skips the model."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

Encode = Callable[[list[str]], np.ndarray]


class TextVectorCache:
    """`encode` with the last `size` distinct texts' vectors kept (least recently used out).
    Vectors are read-only: every caller of the same text shares one. Safe across threads."""

    def __init__(self, encode: Encode, size: int) -> None:
        self._encode = encode
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode_many(self, texts: Sequence[str]) -> None:
        """Embed the uncached ones of `texts` in one forward pass and keep them."""
        with self._lock:
            missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            for text, vector in zip(missing, self._encode(missing), strict=True):
                self._keep(text, vector)

    def vector(self, text: str) -> np.ndarray:
        with self._lock:
            cached = self._vectors.get(text)
            if cached is not None:
                self._vectors.move_to_end(text)
                return cached
        return self._keep(text, self._encode([text])[0])

    def __call__(self, texts: list[str]) -> np.ndarray:
        """The vectors of `texts`, one row each (an `encode` that remembers)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        self.encode_many(texts)
        return np.stack([self.vector(text) for text in texts])

    def _keep(self, text: str, vector: np.ndarray) -> np.ndarray:
        vector = np.array(vector, dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self._vectors[text] = vector
            if len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return vector
