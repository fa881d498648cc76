"""A conversation's files: the append-only turn log, its vectors, the state, and the lock.

    <directory>/
      turns.jsonl     one TurnRecord per line, appended and fsynced before add_turn returns
      vectors.f32     one float32 row (the turn's embedding) per turn, appended the same way
      state.json      the tiers' boundaries and the recursive summary (atomic replace)
      .lock           flock: one writer at a time, across processes (Serve replicas, a CLI)

The log is the source of truth; every turn is durable once acknowledged, whichever tier it is
in. A crash between the two appends leaves a turn without its vector or a partial last line:
`TurnLog.load` keeps the complete records, truncates a torn tail, and re-embeds a turn whose
vector is missing. Vectors are raw float32 rows, not pickle.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from memory_bank.conversation.records import ConversationState, TurnRecord
from memory_bank.errors import StoreError
from memory_bank.index.embedding import EMBEDDING_DIM
from memory_bank.store.atomic import atomic_write_text, fsync_directory

TURNS_FILE = "turns.jsonl"
VECTORS_FILE = "vectors.f32"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
_ROW_BYTES = EMBEDDING_DIM * 4


class TurnLog:
    """The turns and vectors of one conversation on disk (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.turns_path = directory / TURNS_FILE
        self.vectors_path = directory / VECTORS_FILE
        self.state_path = directory / STATE_FILE

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive access to the conversation for one change (blocks while another holds it)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / LOCK_FILE, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def size(self) -> int:
        """Bytes in the turn log now (a cheap way to see whether another process appended)."""
        try:
            return self.turns_path.stat().st_size
        except FileNotFoundError:
            return 0

    def load(
        self, start: int, known_bytes: int, embed: Callable[[list[str]], np.ndarray]
    ) -> tuple[list[TurnRecord], np.ndarray, int]:
        """Turns from number `start` on (their log begins at byte `known_bytes`), their vectors,
        and the log's size after them. Repairs a torn tail (see the module docstring)."""
        if not self.turns_path.exists():
            return [], np.zeros((0, EMBEDDING_DIM), dtype=np.float32), 0
        with open(self.turns_path, "rb") as handle:
            handle.seek(known_bytes)
            data = handle.read()
        records: list[TurnRecord] = []
        consumed = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # a torn last line: the append never completed
            try:
                record = TurnRecord.model_validate_json(line)
            except ValidationError as exc:
                raise StoreError(
                    f"conversation log {self.turns_path} is corrupt at turn {start + len(records)}: {exc}"
                ) from exc
            if record.turn_id != start + len(records):
                raise StoreError(
                    f"conversation log {self.turns_path}: expected turn {start + len(records)}, "
                    f"found {record.turn_id}"
                )
            records.append(record)
            consumed += len(line)
        if consumed < len(data):
            self._truncate(self.turns_path, known_bytes + consumed)
        vectors = self._read_vectors(start, len(records))
        if len(vectors) < len(records):  # appended turns whose vectors never reached the disk
            missing = records[len(vectors) :]
            fresh = np.asarray(embed([record.rendered() for record in missing]), dtype=np.float32)
            self._append_vectors(fresh)
            vectors = np.concatenate([vectors, fresh])
        return records, vectors, known_bytes + consumed

    def append(self, records: list[TurnRecord], vectors: np.ndarray) -> int:
        """Append turns and their vectors durably (one fsync per file); returns the log's new
        size."""
        self.directory.mkdir(parents=True, exist_ok=True)
        created = not self.turns_path.exists()
        lines = "".join(record.model_dump_json() + "\n" for record in records).encode("utf-8")
        with open(self.turns_path, "ab") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())
            size = handle.tell()
        self._append_vectors(np.asarray(vectors, dtype=np.float32).reshape(-1, EMBEDDING_DIM))
        if created:
            fsync_directory(self.directory)
        return size

    def read_state(self, conversation_id: str) -> ConversationState:
        if not self.state_path.exists():
            return ConversationState(conversation_id=conversation_id)
        try:
            return ConversationState.model_validate_json(self.state_path.read_text("utf-8"))
        except (ValidationError, json.JSONDecodeError) as exc:
            raise StoreError(f"conversation state {self.state_path} is unreadable: {exc}") from exc

    def write_state(self, state: ConversationState) -> None:
        atomic_write_text(self.state_path, state.model_dump_json(indent=1) + "\n")

    # --- vectors ------------------------------------------------------------------------------

    def _read_vectors(self, start: int, count: int) -> np.ndarray:
        rows = 0
        if self.vectors_path.exists():
            size = self.vectors_path.stat().st_size
            whole = size // _ROW_BYTES
            if whole * _ROW_BYTES != size:  # a torn row
                self._truncate(self.vectors_path, whole * _ROW_BYTES)
            rows = max(0, min(count, whole - start))
            if whole > start + count:  # vectors of turns whose log line was torn off
                self._truncate(self.vectors_path, (start + count) * _ROW_BYTES)
        if rows == 0:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        with open(self.vectors_path, "rb") as handle:
            handle.seek(start * _ROW_BYTES)
            data = handle.read(rows * _ROW_BYTES)
        return np.frombuffer(data, dtype=np.float32).reshape(rows, EMBEDDING_DIM).copy()

    def _append_vectors(self, vectors: np.ndarray) -> None:
        with open(self.vectors_path, "ab") as handle:
            handle.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
            handle.flush()
            os.fsync(handle.fileno())

    @staticmethod
    def _truncate(path: Path, size: int) -> None:
        with open(path, "r+b") as handle:
            handle.truncate(size)
            os.fsync(handle.fileno())
