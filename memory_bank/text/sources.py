"""Read sources into `Document`s: text, Markdown, PDF, JSON conversations and raw strings.

Supported files: `.txt`, `.md` / `.markdown`, `.pdf` (text only; images are ignored, a page whose
extraction fails is skipped with a warning), `.json` / `.jsonl` conversations.

Conversation files
------------------
A `.json` conversation is one of:

* a list of turns: ``[{"speaker": "Ann", "text": "Hi", "timestamp": "2024-05-01 10:00"}, ...]``
* ``{"turns": [...]}``
* a list of sessions: ``[{"session_id": "s1", "turns": [...]}, ...]`` (``session_id`` optional)
* ``{"sessions": [...]}``

A `.jsonl` conversation holds one turn object per line. ``role`` / ``content`` are accepted for
``speaker`` / ``text`` (OpenAI chat messages), ``content`` may also be a list of
``{"type": "text", "text": ...}`` parts, ``timestamp`` is optional and turns with blank text are
dropped. The document text renders each turn as ``[timestamp] speaker: text`` (or
``speaker: text``), turns separated by a blank line; in the session forms every session starts
with a ``## Session <id>`` header line. A session object may carry its date (``timestamp``,
``date_time``, ``date`` or ``session_date``): its turns without a timestamp of their own keep it.
Relative dates said in a turn with a readable timestamp are resolved against it and written
after them ("yesterday (2023-05-07)", `text.dates`), so the memories hold the dates. `Document.turns` / `turn_offsets` record the turns and
where each starts, so chunking can cut on turn boundaries.

Text is normalized on the way in: line breaks become ``\\n`` and control characters other than
``\\n`` and ``\\t`` are removed (they break YAML frontmatter and Markdown). Files that are not
UTF-8 are decoded in the encoding charset-normalizer detects (Shift-JIS, GB18030, cp1252, UTF-16
with a byte-order mark, ...); `Document.encoding` records it and the ingest summary lists them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pypdf import PdfReader

from memory_bank.errors import SourceError
from memory_bank.schemas import Document, DocumentKind, Turn
from memory_bank.text.dates import annotate_dates, parse_timestamp
from memory_bank.text.lexicon import markdown_title

logger = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 200 * 1024 * 1024
SUPPORTED_SUFFIXES: dict[str, DocumentKind] = {
    ".txt": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".pdf": "pdf",
    ".json": "conversation",
    ".jsonl": "conversation",
}

_LINE_BREAKS = re.compile(r"\r\n?|[\v\f\x85\u2028\u2029]")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# JSON may escape half of a surrogate pair ("\\ud800"): no UTF-8 text can hold it.
_LONE_SURROGATES = re.compile("[\ud800-\udfff]")
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")
_CONVERSATION_SHAPES = (
    'a list of turns {"speaker", "text", "timestamp"?}, {"turns": [...]}, '
    'a list of sessions [{"session_id"?, "turns": [...]}] or {"sessions": [...]}'
)
_MAX_CONTROL_SHARE = 0.05  # above this share of control characters a "text" file is binary
_TITLE_CHARS = 80
_COMMON_LEGACY = "cp1252"  # the legacy encoding most text in Latin script was written in


class SkippedSource(BaseModel):
    """A source that could not be read, and why."""

    source: str
    reason: str

    def __str__(self) -> str:
        return f"{self.source}: {self.reason}"


FileOutcome = Document | SkippedSource
# Reads files into documents, in the given order; `read_files_serially` in-process, a parallel
# version (one task per batch of files) under Ray.
FileReader = Callable[[Sequence[Path]], list[FileOutcome]]


def read_files_serially(
    paths: Sequence[Path], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[FileOutcome]:
    """Each path read with `load_file`; an unreadable one becomes a `SkippedSource`."""
    outcomes: list[FileOutcome] = []
    for path in paths:
        try:
            outcomes.append(load_file(path, max_bytes=max_bytes))
        except SourceError as exc:
            outcomes.append(SkippedSource(source=exc.source, reason=exc.reason))
    return outcomes


def load_file(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Document:
    """Read one supported file into a `Document`; raises `SourceError` saying what is wrong."""
    source = str(path)
    path = Path(path)
    kind = SUPPORTED_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise SourceError(source, unsupported_reason(path))
    try:
        if not path.is_file():
            raise SourceError(source, "does not exist" if not path.exists() else "not a file")
        size = path.stat().st_size
        if size == 0:
            raise SourceError(source, "empty")
        if size > max_bytes:
            raise SourceError(
                source,
                f"too large ({size / 2**20:.1f} MB, the limit is {max_bytes / 2**20:.1f} MB)",
            )
        if kind == "pdf":
            return _load_pdf(path, source)
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(source, f"cannot read: {exc.strerror or exc}") from exc
    text, encoding = _decode_text(data, source)
    if kind == "conversation":
        document = _load_conversation(text, source, jsonl=path.suffix.lower() == ".jsonl")
        return document.model_copy(update={"encoding": encoding})
    text = _clean(text).strip()
    if not text:
        raise SourceError(source, "empty")  # nothing but control characters
    title = (markdown_title(text) if kind == "markdown" else None) or _humanize(path.stem)
    return _document(text=text, source=source, title=title, kind=kind, encoding=encoding)


def document_from_text(
    text: str, source: str = "<text>", title: str | None = None
) -> Document | None:
    """A `Document` for raw text; None when the text is empty or blank."""
    cleaned = _clean(text).strip()
    if not cleaned:
        return None
    title = title or markdown_title(cleaned) or _first_line_title(cleaned)
    return _document(text=cleaned, source=source, title=title, kind="text")


def _document(*, text: str, source: str, title: str, kind: DocumentKind, **extra: Any) -> Document:
    document_id = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return Document(
        document_id=document_id, source=source, title=title, kind=kind, text=text, **extra
    )


def unsupported_reason(path: Path) -> str:
    suffix = path.suffix or "(no suffix)"
    return f"unsupported file type {suffix} (supported: {', '.join(SUPPORTED_SUFFIXES)})"


def _decode_text(data: bytes, source: str) -> tuple[str, str]:
    """The text of `data` and the encoding it was read in: UTF-8 when it is valid UTF-8 (the
    common case, exact), else what charset-normalizer detects (UTF-16 with a byte-order mark,
    Shift-JIS, GB18030, cp1252, ...)."""
    if not data.strip():
        raise SourceError(source, "empty")
    has_bom = data.startswith(_UTF16_32_BOMS)
    if b"\x00" in data and not has_bom:
        raise SourceError(source, "binary file (contains NUL bytes)")
    if has_bom:
        text, encoding = _decode_legacy(data, source, "a UTF-16/UTF-32 byte-order mark")
    else:
        try:
            text, encoding = data.decode("utf-8-sig"), "utf-8"
        except UnicodeDecodeError as exc:
            where = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
            text, encoding = _decode_legacy(data, source, where)
    if not text.strip():
        raise SourceError(source, "empty")
    sample = text[:65536]
    if len(_CONTROL_CHARS.findall(sample)) > _MAX_CONTROL_SHARE * len(sample):
        raise SourceError(source, "binary file (mostly control characters)")
    return text, encoding


def _decode_legacy(data: bytes, source: str, why_not_utf8: str) -> tuple[str, str]:
    """Decode text that is not UTF-8 in the encoding charset-normalizer finds most plausible.
    UTF-16/32 without a byte-order mark is never guessed (text in them is full of NUL bytes,
    refused above); among equally plausible single-byte encodings the most common one, cp1252
    (a superset of Latin-1), wins, as in the French "brûlée" that cp1250 reads as "brűlée"."""
    from charset_normalizer import from_bytes

    bom = data.startswith(_UTF16_32_BOMS)
    matches = [
        match
        for match in from_bytes(data)
        if bom or not match.encoding.startswith(("utf_16", "utf_32"))
    ]
    if not matches:
        raise SourceError(source, f"not text in any known encoding (not UTF-8: {why_not_utf8})")
    best = matches[0]
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    common = next((m for m in tied if _COMMON_LEGACY in m.could_be_from_charset), None)
    if common is not None:
        return data.decode(_COMMON_LEGACY), _COMMON_LEGACY
    return str(best), best.encoding


def _clean(text: str) -> str:
    text = _LONE_SURROGATES.sub("\ufffd", text)
    return _CONTROL_CHARS.sub("", _LINE_BREAKS.sub("\n", text))


def _humanize(stem: str) -> str:
    words = re.sub(r"[\s_.-]+", " ", stem).strip()
    return (words[:1].upper() + words[1:]) if words else stem


def _first_line_title(text: str) -> str:
    line = text.lstrip().split("\n", 1)[0].strip()
    if len(line) <= _TITLE_CHARS:
        return line
    shortened = line[:_TITLE_CHARS].rsplit(" ", 1)[0] or line[:_TITLE_CHARS]
    return shortened.rstrip() + "…"


# ---------------------------------------------------------------------------------------- PDF


def _load_pdf(path: Path, source: str) -> Document:
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise SourceError(source, "encrypted PDF (a password is needed)")
        pages = list(reader.pages)
    except SourceError:
        raise
    except Exception as exc:  # pypdf raises many exception types on malformed files
        raise SourceError(
            source, f"corrupt or unreadable PDF ({type(exc).__name__}: {exc})"
        ) from exc
    page_texts: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            page_text = page.extract_text()
        except Exception as exc:  # one broken page should not cost the rest of the document
            logger.warning(
                "%s: skipping page %d, its text could not be extracted: %s", source, number, exc
            )
            continue
        page_text = _clean(page_text or "").strip()
        if page_text:
            page_texts.append(page_text)
    if not page_texts:
        raise SourceError(source, "no extractable text (a scanned or image-only PDF?)")
    text = "\n\n".join(page_texts)
    return _document(
        text=text, source=source, title=_pdf_title(reader) or _humanize(path.stem), kind="pdf"
    )


def _pdf_title(reader: PdfReader) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception as exc:  # broken metadata is no reason to lose the document
        logger.info("%s: unreadable PDF metadata (%s); using the file name as title", reader, exc)
        return None
    title = _clean(str(title or "")).strip()
    # reportlab and some other writers store a placeholder rather than leaving the title out.
    return title if title and title.lower() not in {"untitled", "(anonymous)"} else None


# ------------------------------------------------------------------------------ conversations


class _NotAConversation(ValueError):
    """The JSON parsed but does not have one of the documented conversation shapes."""


def _load_conversation(text: str, source: str, *, jsonl: bool) -> Document:
    try:
        sessions, with_headers = _parse_jsonl(text) if jsonl else _parse_json(text)
        parsed = [
            (session_id, _parse_turns(raw_turns, where))
            for session_id, raw_turns, where in sessions
        ]
    except _NotAConversation as exc:
        raise SourceError(
            source, f"not a conversation: {exc}; expected {_CONVERSATION_SHAPES}"
        ) from exc
    blocks: list[str] = []
    turns: list[Turn] = []
    offsets: list[int] = []
    length = 0
    for number, (session_id, session_turns) in enumerate(parsed, start=1):
        if with_headers and session_turns:
            blocks.append(f"## Session {session_id or number}")
            length += len(blocks[-1]) + 2
        for turn in session_turns:
            prefix = f"[{turn.timestamp}] " if turn.timestamp else ""
            # The turn keeps the text the document holds, so its offset still points at it.
            turn = turn.model_copy(update={"text": annotate_dates(turn.text, _turn_date(turn))})
            blocks.append(f"{prefix}{turn.speaker}: {turn.text}")
            turns.append(turn)
            offsets.append(length)
            length += len(blocks[-1]) + 2
    if not turns:
        raise SourceError(source, "empty (the conversation has no turns with text)")
    return _document(
        text="\n\n".join(blocks),
        source=source,
        title=_humanize(Path(source).stem),
        kind="conversation",
        turns=turns,
        turn_offsets=offsets,
    )


_Session = tuple[str | None, Any, str]  # (session id, raw turns, where it is, for messages)
# Keys a session object may give its date under (LoCoMo-style exports say "date_time").
_SESSION_TIME_KEYS = ("timestamp", "date_time", "date", "session_date")


def _parse_json(text: str) -> tuple[list[_Session], bool]:
    """Returns the sessions and whether the file used the session form (headers wanted)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _NotAConversation(
            f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    if isinstance(data, dict) and "sessions" in data:
        return _parse_sessions(data["sessions"]), True
    if isinstance(data, dict) and "turns" in data:
        return [(_optional_str(data.get("session_id")), data["turns"], "")], False
    if (
        isinstance(data, list)
        and data
        and all(isinstance(item, dict) and "turns" in item for item in data)
    ):
        return _parse_sessions(data), True
    if isinstance(data, list):
        return [(None, data, "")], False
    raise _NotAConversation(f"the top level is a JSON {type(data).__name__}")


def _parse_sessions(raw_sessions: Any) -> list[_Session]:
    if not isinstance(raw_sessions, list):
        raise _NotAConversation('"sessions" is not a list')
    sessions: list[_Session] = []
    for number, raw in enumerate(raw_sessions, start=1):
        if not isinstance(raw, dict) or "turns" not in raw:
            raise _NotAConversation(f'session {number} is not an object with "turns"')
        session_time = next(
            (raw[key] for key in _SESSION_TIME_KEYS if _optional_str(raw.get(key))), None
        )
        turns = raw["turns"]
        if session_time is not None and isinstance(turns, list):
            # Turns keep their session's timestamp unless they carry their own.
            turns = [
                {**turn, "timestamp": session_time}
                if isinstance(turn, dict) and not _optional_str(turn.get("timestamp"))
                else turn
                for turn in turns
            ]
        sessions.append((_optional_str(raw.get("session_id")), turns, f"session {number}, "))
    return sessions


def _parse_jsonl(text: str) -> tuple[list[_Session], bool]:
    raw_turns: list[Any] = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw_turns.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise _NotAConversation(f"line {line_number} is not valid JSON: {exc.msg}") from exc
    return [(None, raw_turns, "")], False


def _parse_turns(raw_turns: Any, where: str) -> list[Turn]:
    if not isinstance(raw_turns, list):
        raise _NotAConversation(f"{where or 'the '}turns are not a list")
    turns = [
        _parse_turn(raw, f"{where}turn {number}") for number, raw in enumerate(raw_turns, start=1)
    ]
    return [turn for turn in turns if turn is not None]


def _parse_turn(raw: Any, where: str) -> Turn | None:
    if not isinstance(raw, dict):
        raise _NotAConversation(f"{where} is a JSON {type(raw).__name__}, not an object")
    speaker = raw.get("speaker", raw.get("role"))
    content = raw.get("text", raw.get("content"))
    if not isinstance(speaker, str) or not speaker.strip():
        raise _NotAConversation(f'{where} has no "speaker" (or "role") string')
    text = _content_text(content)
    if text is None:
        raise _NotAConversation(f'{where} has no "text" (or "content") string')
    text = _clean(text).strip()
    if not text:
        return None
    speaker = " ".join(_clean(speaker).split())
    return Turn(speaker=speaker, text=text, timestamp=_optional_str(raw.get("timestamp")))


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts; non-text parts (images) are ignored
        parts = [
            part.get("text")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        if all(isinstance(part, str) for part in parts):
            return "\n".join(parts)
    return None


def _turn_date(turn: Turn) -> datetime | None:
    """The date a turn was said, when its timestamp can be read (else None: its relative dates
    stay as said)."""
    if not turn.timestamp:
        return None
    try:
        return parse_timestamp(turn.timestamp)
    except ValueError:
        return None


def _optional_str(value: Any) -> str | None:
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = " ".join(_clean(str(value)).split())
        return text or None
    return None
