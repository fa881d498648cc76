"""Reading benchmark files and writing corpus files for the dataset adapters."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory_bank.errors import ConfigError, SourceError

EVAL_DIR_ENV = "MEMORY_BANK_EVAL_DIR"
CORPUS_DIR_NAME = "corpus"
CORPUS_MARKER_NAME = "corpus.json"  # beside, not inside, the corpus: ingest must not read it


def development_eval_dir(repo: Path) -> Path:
    """Where the development datasets are: $MEMORY_BANK_EVAL_DIR, else `../shared/eval` beside
    the repository `repo`."""
    configured = os.environ.get(EVAL_DIR_ENV)
    return Path(configured) if configured else repo.resolve().parent / "shared" / "eval"


def slugify(text: str, max_length: int = 80) -> str:
    """A lowercase ASCII file-name stem: letters and digits joined by '-' ("untitled" if none)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_length].strip("-") or "untitled"


def unique_name(stem: str, suffix: str, taken: set[str]) -> str:
    """`stem + suffix`, with "-2", "-3", ... after the stem when already taken; records the name."""
    name = f"{stem}{suffix}"
    counter = 2
    while name in taken:
        name = f"{stem}-{counter}{suffix}"
        counter += 1
    taken.add(name)
    return name


def fresh_corpus_dir(work_dir: Path) -> Path:
    """An empty `work_dir/corpus`, replacing only a corpus that this harness wrote before."""
    corpus_dir = work_dir / CORPUS_DIR_NAME
    marker = work_dir / CORPUS_MARKER_NAME
    if corpus_dir.exists():
        if not marker.is_file():
            raise ConfigError(
                f"{corpus_dir} exists and was not written by the evaluation harness; use another work dir"
            )
        shutil.rmtree(corpus_dir)
    marker.unlink(missing_ok=True)  # written again once the corpus is complete
    corpus_dir.mkdir(parents=True)
    return corpus_dir


def data_root(dataset_dir: Path, split: str, holds_data: Callable[[Path], bool]) -> Path:
    """`dataset_dir` itself when it holds the data, else its `split` sub-folder."""
    for candidate in (dataset_dir, dataset_dir / split):
        if candidate.is_dir() and holds_data(candidate):
            return candidate
    raise ConfigError(f"no dataset files found in {dataset_dir} or its {split}/ folder")


def dataset_name(dataset_format: str, root: Path) -> str:
    """The dataset's display name: `fairytaleqa-val` for .../fairytaleqa/val, `hotpotqa` for .../hotpotqa."""
    return dataset_format if root.name == dataset_format else f"{dataset_format}-{root.name}"


def single_file(folder: Path, pattern: str, exclude: Path | None = None) -> Path:
    """The one file in `folder` matching `pattern` (other than `exclude`)."""
    matches = [path for path in sorted(folder.glob(pattern)) if path != exclude]
    if len(matches) != 1:
        raise ConfigError(f"expected exactly one {pattern} file in {folder}, found {len(matches)}")
    return matches[0]


def read_json(path: Path) -> Any:
    """Parsed JSON, or SourceError naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(str(path), f"cannot read JSON: {exc}") from exc


def read_csv(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    """CSV rows as dicts, or SourceError when unreadable or missing a required column."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise SourceError(str(path), f"cannot read CSV: {exc}") from exc
    if rows and (missing := [column for column in required if column not in rows[0]]):
        raise SourceError(str(path), f"missing columns {missing}")
    return rows


def parse_int(text: str, path: Path) -> int:
    """An integer field of `path`, or SourceError."""
    try:
        return int(text.strip())
    except ValueError as exc:
        raise SourceError(str(path), f"expected an integer, got {text!r}") from exc


def write_text(path: Path, text: str) -> None:
    """Write UTF-8 text, creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
