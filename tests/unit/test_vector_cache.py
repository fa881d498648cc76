"""The text-vector cache behind query vectors and the slot rules' masked sentences."""

from __future__ import annotations

import numpy as np

from memory_bank.index.vector_cache import TextVectorCache


class CountingEncoder:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray([[len(text), 1.0] for text in texts], dtype=np.float64)


def test_texts_seen_before_skip_the_model_and_new_ones_share_one_pass():
    encode = CountingEncoder()
    cache = TextVectorCache(encode, size=8)

    first = cache(["alpha", "be", "alpha"])
    again = cache(["be", "gamma"])

    assert encode.calls == [["alpha", "be"], ["gamma"]]
    assert first.dtype == np.float32 and first.tolist() == [[5, 1], [2, 1], [5, 1]]
    assert again.tolist() == [[2, 1], [5, 1]]
    assert not cache.vector("be").flags.writeable  # shared by every caller of the text


def test_the_least_recently_used_text_leaves_first():
    encode = CountingEncoder()
    cache = TextVectorCache(encode, size=2)
    cache.encode_many(["a", "b"])
    cache.vector("a")  # now "b" is the least recently used
    cache.vector("c")

    cache.vector("a")
    cache.vector("b")

    assert encode.calls == [["a", "b"], ["c"], ["b"]]
