"""The text of every visible store file, kept in memory for `grep`.

Substring search joins the lowercased texts into one string, so finding the files that contain a
pattern is a few `str.find` scans rather than a Python loop over every file. A whole-word search
(what the navigation agent greps entities with) first narrows the files through an index of the
words each file holds, so it costs a few posting-list intersections instead of a scan of the whole
corpus per pattern; the matching lines then come from the kept texts.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from collections.abc import Iterable, Iterator

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer

# The words of the index: maximal runs of \w, the characters a whole-word match may not touch.
_WORD = re.compile(r"\w+")


class GrepCorpus:
    _SEPARATOR = "\x00"  # never inside a pattern, so no match spans two files

    def __init__(self, files: list[tuple[str, str]]) -> None:
        self.paths = [path for path, _ in files]  # sorted, so a directory is a contiguous range
        self.texts = [text for _, text in files]
        # Lowercased file by file: lowering may change a text's length, so the offsets of the
        # joined string are those of the lowered texts, used only to find files.
        lowered = [text.lower() for text in self.texts]
        self.text = self._SEPARATOR.join(lowered)
        self.starts = list(
            itertools.accumulate((len(text) + 1 for text in lowered[:-1]), initial=0)
        )
        self._words: dict[str, int] | None = None
        self._postings: sparse.csc_matrix | None = None  # files x words, 1 where the file has it
        self._index_lock = threading.Lock()

    def files_containing(self, needle: str, scope: str, scope_is_dir: bool) -> Iterator[int]:
        """Positions in `paths` (ascending) of the files in `scope` whose lowered text contains
        `needle`."""
        first, stop = self._range(scope, scope_is_dir)
        if first >= stop or self._SEPARATOR in needle:
            return
        end = self.starts[stop] if stop < len(self.starts) else len(self.text)
        position = self.text.find(needle, self.starts[first], end)
        while position != -1:
            file = bisect.bisect_right(self.starts, position) - 1
            yield file
            if file + 1 >= stop:
                return
            position = self.text.find(needle, self.starts[file + 1], end)

    def files_with_word(self, needle: str, scope: str, scope_is_dir: bool) -> Iterable[int]:
        """Positions in `paths` (ascending) of the files in `scope` that may hold `needle` (lower
        case) as a whole word: a superset, to be checked line by line. A whole-word match holds
        every \\w-run of the needle as a word of the file, so only files with all of them are
        candidates."""
        words = _WORD.findall(needle)
        if not words:  # nothing to look up ("++"): every file with the substring
            return self.files_containing(needle, scope, scope_is_dir)
        first, stop = self._range(scope, scope_is_dir)
        candidates = self._files_with_all(words)
        low, high = np.searchsorted(candidates, [first, stop])
        # Lazily, so grep stops at its match limit; a file whose words are all there but not
        # the needle itself ("new" and "york" apart) is dropped by one C-level find.
        return (
            file
            for file in map(int, candidates[low:high])
            if self.text.find(needle, self.starts[file], self._end(file)) != -1
        )

    def build_word_index(self) -> None:
        """Index the words of every file (done once, on first use or at warm-up)."""
        with self._index_lock:
            if self._postings is not None:
                return
            vectorizer = CountVectorizer(
                lowercase=False, token_pattern=r"(?u)\w+", binary=True, dtype=np.int8
            )
            try:
                matrix = vectorizer.fit_transform(self._lowered_texts())
                self._words = vectorizer.vocabulary_
            except ValueError:  # no file has a single word
                matrix, self._words = sparse.csr_matrix((len(self.paths), 0), dtype=np.int8), {}
            self._postings = matrix.tocsc()
            self._postings.sort_indices()  # each word's files ascending, as intersect1d keeps them

    def _end(self, file: int) -> int:
        """End of the file's lowered text in the joined string (before the separator)."""
        return self.starts[file + 1] - 1 if file + 1 < len(self.starts) else len(self.text)

    def _lowered_texts(self) -> Iterator[str]:
        """Each file's lowered text, cut out of the joined string (one file at a time)."""
        for file in range(len(self.paths)):
            yield self.text[self.starts[file] : self._end(file)]

    def _files_with_all(self, words: list[str]) -> np.ndarray:
        self.build_word_index()
        assert self._postings is not None and self._words is not None
        found: np.ndarray | None = None
        for word in sorted(set(words), key=len, reverse=True):  # longer words: shorter lists
            column = self._words.get(word)
            if column is None:
                return np.zeros(0, dtype=np.int64)
            files = self._postings.indices[
                self._postings.indptr[column] : self._postings.indptr[column + 1]
            ]
            found = files if found is None else np.intersect1d(found, files, assume_unique=True)
            if not len(found):
                break
        assert found is not None
        return found

    def _range(self, scope: str, scope_is_dir: bool) -> tuple[int, int]:
        if not scope_is_dir:
            first = bisect.bisect_left(self.paths, scope)
            return first, first + int(first < len(self.paths) and self.paths[first] == scope)
        if not scope:
            return 0, len(self.paths)
        # "0" is the character after "/": every path under "scope/" sorts between the two.
        return bisect.bisect_left(self.paths, f"{scope}/"), bisect.bisect_left(
            self.paths, f"{scope}0"
        )
