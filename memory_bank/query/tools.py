"""Navigation tools over one store, confined to it (seed 000 §6.3).

Every path a tool receives is store-relative ("/" and "" mean the store root; a leading "/" is
the store root, as in "Directory path relative to GAM root"). Paths are resolved and checked:
`..`, paths that resolve outside the store (an absolute path elsewhere, a symlink pointing out)
and hidden entries (`.bank/`, `.gam_meta.json`) are refused with a ToolError. Hidden entries are
also left out of `ls` and `grep`: they are machine state, not memory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory_bank.errors import StoreError, ToolError
from memory_bank.index.grep_corpus import GrepCorpus
from memory_bank.schemas import SearchHit
from memory_bank.store.layout import META_FILE, is_store

if TYPE_CHECKING:
    from memory_bank.index.search import Searcher
    from memory_bank.store.reader import StoreReader

DEFAULT_MAX_GREP_MATCHES = 100
MAX_RESOLVED_PATHS = 4096  # paths whose resolution a committed store keeps


class Entry(BaseModel):
    """One item of a directory listing."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: Literal["dir", "file"]
    size: int  # bytes, as reported by stat


class GrepMatch(BaseModel):
    """One matching line: store-relative file path, 1-based line number, the line itself."""

    model_config = ConfigDict(frozen=True)

    file: str
    line_number: int
    line: str


class ToolAnswer(BaseModel):
    """The final answer of an exploration, with the store files that informed it."""

    text: str
    confidence: float = Field(ge=0.0, le=1.0)
    sources: list[str] = Field(default_factory=list)


class StoreTools:
    """`ls`, `cat`, `grep`, `bm25_search`, `vector_search`, `deep_retrieval` and `answer`.

    `reader` (for `deep_retrieval` and the searches) and `searcher` (for the searches) are
    opened on first use when not given; plain directories work for `ls`, `cat` and `grep`.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike[str],
        reader: StoreReader | None = None,
        searcher: Searcher | None = None,
        max_grep_matches: int = DEFAULT_MAX_GREP_MATCHES,
    ) -> None:
        self.root = Path(store_dir).expanduser().resolve()
        if not self.root.is_dir():
            raise ToolError(f"no store directory at {self.root}")
        self._reader = reader
        self._searcher = searcher
        self.max_grep_matches = max_grep_matches
        # Lowercased text of every visible file, reused while the store's meta file is the same.
        self._grep_corpus: GrepCorpus | None = None
        self._grep_corpus_key: tuple[int, int, int] | None = None
        self._chunk_texts: dict[str, str] | None = None
        # A committed store version never changes (a commit writes a new one), so what a path
        # resolves to can be kept; a plain directory may change under us, so there it cannot.
        self._resolved: dict[str, Path] | None = {} if is_store(self.root) else None

    # --- filesystem tools -------------------------------------------------------------------

    def ls(self, path: str = "/") -> list[Entry]:
        """Directories and files in `path`, sorted by name, with their types and sizes."""
        directory = self.resolve(path)
        if not directory.is_dir():
            raise ToolError(f"ls: not a directory: {path!r}")
        entries = []
        for child in sorted(directory.iterdir(), key=lambda item: item.name):
            if child.name.startswith(".") or not self._is_inside(child):
                continue
            kind = "dir" if child.is_dir() else "file" if child.is_file() else None
            if kind is not None:
                entries.append(Entry(name=child.name, type=kind, size=child.stat().st_size))
        return entries

    def cat(self, file: str) -> str:
        """The exact content of a file."""
        target = self.resolve(file)
        if not target.is_file():
            raise ToolError(f"cat: no such file: {file!r}")
        try:
            with target.open(encoding="utf-8", newline="") as handle:  # keep "\r\n" as written
                return handle.read()
        except UnicodeDecodeError as exc:
            raise ToolError(f"cat: {file!r} is not UTF-8 text") from exc
        except OSError as exc:
            raise ToolError(f"cat: cannot read {file!r}: {exc}") from exc

    def grep(
        self,
        pattern: str,
        path: str = "/",
        max_matches: int | None = None,
        whole_word: bool = False,
    ) -> list[GrepMatch]:
        """Lines containing `pattern` (case-insensitive substring, not a regex) under `path`;
        with `whole_word`, only where no letter, digit or "_" touches it on either side.

        Files are searched in sorted path order; at most `max_matches` lines are returned.
        """
        if not pattern:
            raise ToolError("grep: the pattern must not be empty")
        scope = self.resolve(path)
        if not scope.exists():
            raise ToolError(f"grep: no such file or directory: {path!r}")
        limit = self.max_grep_matches if max_matches is None else max_matches
        needle = pattern.lower()
        corpus = self._corpus()
        scope_path, scope_is_dir = self._relative(scope), scope.is_dir()
        whole = re.compile(rf"(?<!\w){re.escape(pattern)}(?!\w)", re.IGNORECASE)
        find = corpus.files_with_word if whole_word else corpus.files_containing
        matches: list[GrepMatch] = []
        for file in find(needle, scope_path, scope_is_dir):
            if len(matches) >= limit:
                break
            for number, line in enumerate(corpus.texts[file].splitlines(), start=1):
                if needle in line.lower() and (not whole_word or whole.search(line)):
                    matches.append(
                        GrepMatch(file=corpus.paths[file], line_number=number, line=line)
                    )
                    if len(matches) >= limit:
                        break
        return matches

    def warm_up(self) -> None:
        """Read every file for `grep`, and index its words, now rather than on the first grep."""
        self._corpus().build_word_index()

    # --- search tools -----------------------------------------------------------------------

    def bm25_search(self, query: str, top_k: int = 5) -> list[SearchHit]:
        """Full-text BM25 search over the memories, best first."""
        return self._search(query, top_k, "bm25")

    def vector_search(self, query: str, top_k: int = 5) -> list[SearchHit]:
        """Embedding (cosine) search over the memories, best first."""
        return self._search(query, top_k, "vector")

    def deep_retrieval(self, chunk_id: str) -> str:
        """The raw source text of a chunk (what its memory was made from)."""
        if self._chunk_texts is None:
            chunks = self.reader.chunks()
            ids, texts = chunks.column("chunk_id").to_pylist(), chunks.column("text").to_pylist()
            self._chunk_texts = dict(zip(ids, texts, strict=True))
        text = self._chunk_texts.get(chunk_id)
        if text is None:
            raise ToolError(f"deep_retrieval: no chunk with id {chunk_id!r} in this store")
        return text

    def answer(
        self, text: str, confidence: float = 0.5, sources: list[str] | None = None
    ) -> ToolAnswer:
        """Package a final answer; every source must be a readable file of this store."""
        if not text.strip():
            raise ToolError("answer: the answer text must not be empty")
        checked = []
        for source in sources or []:
            target = self.resolve(source)
            if not target.is_file():
                raise ToolError(f"answer: source {source!r} is not a file of this store")
            checked.append(self._relative(target))
        return ToolAnswer(text=text, confidence=min(max(confidence, 0.0), 1.0), sources=checked)

    # --- plumbing ---------------------------------------------------------------------------

    @property
    def reader(self) -> StoreReader:
        if self._reader is None:
            from memory_bank.store.reader import StoreReader

            try:
                self._reader = StoreReader(self.root)
            except StoreError as exc:
                raise ToolError(f"this directory is not a memory store: {exc}") from exc
        return self._reader

    @property
    def searcher(self) -> Searcher:
        if self._searcher is None:
            from memory_bank.index.corpus import StoreCorpus
            from memory_bank.index.hybrid import HybridSearch
            from memory_bank.index.search import Searcher

            # Without an embedder only BM25 works; callers that want vector search pass one.
            self._searcher = Searcher(HybridSearch(StoreCorpus(self.reader), embedder=None))
        return self._searcher

    def _search(self, query: str, top_k: int, mode: Literal["bm25", "vector"]) -> list[SearchHit]:
        if not query.strip():
            raise ToolError(f"{mode} search: the query must not be empty")
        if top_k < 1:
            raise ToolError(f"{mode} search: top_k must be at least 1, got {top_k}")
        if mode == "vector" and not self.searcher.has_embedder:
            raise ToolError(
                "vector search needs an embedding model: give StoreTools a Searcher with an Embedder"
            )
        return self.searcher.search(query, top_k=top_k, mode=mode)

    def resolve(self, path: str) -> Path:
        """The absolute path of a store path, refusing anything outside the store or hidden."""
        if self._resolved is not None and (known := self._resolved.get(path)) is not None:
            return known
        resolved = self._resolve(path)
        if self._resolved is not None and len(self._resolved) < MAX_RESOLVED_PATHS:
            self._resolved[path] = resolved
        return resolved

    def _resolve(self, path: str) -> Path:
        text = path.strip()
        if "\x00" in text:
            raise ToolError(f"invalid path (NUL byte): {path!r}")
        pure = PurePosixPath(text)
        if pure.is_absolute():
            # An absolute path inside the store is taken as is; any other leading "/" means root.
            literal = Path(os.path.normpath(text))
            if literal.is_relative_to(self.root):
                pure = PurePosixPath(literal.relative_to(self.root).as_posix())
            else:
                pure = PurePosixPath(*pure.parts[1:])
        if ".." in pure.parts:
            raise ToolError(f"path {path!r} is refused: '..' may not be used to leave the store")
        resolved = self.root.joinpath(*pure.parts).resolve()
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"path {path!r} is refused: it leads outside the store")
        if any(part.startswith(".") for part in resolved.relative_to(self.root).parts):
            raise ToolError(f"path {path!r} is refused: hidden entries are not part of the memory")
        return resolved

    def _is_inside(self, path: Path) -> bool:
        try:
            resolved = path.resolve()
        except OSError:
            return False
        return resolved.is_relative_to(self.root) and not any(
            part.startswith(".") for part in resolved.relative_to(self.root).parts
        )

    def _relative(self, path: Path) -> str:
        relative = path.relative_to(self.root).as_posix()
        return "" if relative == "." else relative

    def _corpus(self) -> GrepCorpus:
        """The text of every visible text file, as `cat` returns it and lowercased.

        A committed store changes only by being swapped for a new one with a new meta file, so
        the corpus is cached until the meta file's identity (inode, mtime, size) changes; a
        plain directory without a meta file is re-read on every call.
        """
        key = self._meta_file_key()
        if key is not None and key == self._grep_corpus_key and self._grep_corpus is not None:
            return self._grep_corpus
        files = []
        for relative in self._visible_files():
            try:
                with (self.root / relative).open(encoding="utf-8", newline="") as handle:
                    files.append((relative, handle.read()))
            except (UnicodeDecodeError, OSError):
                continue  # binary or vanished files have no lines to match
        corpus = GrepCorpus(files)
        if key is not None:
            self._grep_corpus, self._grep_corpus_key = corpus, key
        return corpus

    def _visible_files(self) -> list[str]:
        files = []
        for directory, dirnames, filenames in os.walk(self.root):  # symlinked dirs are not followed
            dirnames[:] = [name for name in dirnames if not name.startswith(".")]
            for name in filenames:
                path = Path(directory) / name
                if not name.startswith(".") and self._is_inside(path) and path.is_file():
                    files.append(self._relative(path))
        return sorted(files)

    def _meta_file_key(self) -> tuple[int, int, int] | None:
        try:
            stat = (self.root / META_FILE).stat()
        except OSError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size
