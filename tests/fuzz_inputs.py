"""Hostile inputs for the property-based tests and bench/fuzz.py, and what each must never do.

Source readers get random bytes, text in many encodings, random JSON and file names (spaces,
control characters, right-to-left marks, emoji, leading dashes): a file becomes a document or
is skipped with a `SourceError`, nothing else. The HTTP API gets random JSON, unicode edge cases
(lone surrogates, NUL, BOM, 4-byte characters), wrong types, bytes that are not JSON or not
UTF-8, and random path segments: every answer is a JSON status below 500 with no traceback.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import strategies as st

from memory_bank.errors import SourceError
from memory_bank.text.sources import load_file

# --- text --------------------------------------------------------------------------------------

EDGE_CHARACTERS = (
    "\ud800",  # a lone high surrogate: valid JSON ("\\ud800"), no valid UTF-8
    "\udfff",
    "\x00",
    "\ufeff",  # byte order mark
    "\u202e",  # right-to-left override
    "\u2028",  # line separator
    "\r\n",
    "\U0001f600",
    "\U0001d4b3",
    "é",
    "\x85",
    "\t",
    "#",
    "---",
    "```",
)
# Any code point, surrogates included (Hypothesis leaves them out by default).
any_character = st.characters(exclude_categories=())
any_text = st.text(any_character, max_size=200) | st.lists(
    st.sampled_from(EDGE_CHARACTERS) | st.text(any_character, max_size=8), max_size=30
).map("".join)
valid_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=200)

ENCODINGS = (
    "utf-8",
    "utf-8-sig",
    "utf-16",
    "utf-16-be",
    "utf-32",
    "latin-1",
    "cp1252",
    "shift_jis",
    "gb18030",
    "koi8-r",
    "iso-8859-7",
    "big5",
)


def _encoded(text: str, encoding: str) -> bytes:
    return codecs.encode(text, encoding, errors="replace")


encoded_text = st.builds(_encoded, valid_text, st.sampled_from(ENCODINGS))

# --- JSON --------------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(any_text, children, max_size=5)
    ),
    max_leaves=20,
)


def json_bytes(value: Any) -> bytes:
    """JSON as a client would send it (lone surrogates escaped as \\ud800)."""
    return json.dumps(value, ensure_ascii=True).encode("ascii")


conversation_turn = st.fixed_dictionaries(
    {"speaker": any_text, "text": any_text},
    optional={"timestamp": any_text | st.integers() | st.none(), "role": any_text},
)
conversation_json = st.one_of(
    st.lists(conversation_turn, max_size=6),
    st.fixed_dictionaries({"turns": st.lists(conversation_turn, max_size=6)}),
    st.fixed_dictionaries(
        {"sessions": st.lists(st.fixed_dictionaries({"turns": st.lists(conversation_turn)}))}
    ),
    json_values,
)

# --- files -------------------------------------------------------------------------------------

SUFFIXES = (".txt", ".md", ".markdown", ".pdf", ".json", ".jsonl", ".TXT", ".Md", "", ".csv")
_NAME_CHARACTERS = st.characters(exclude_categories=("Cs",), exclude_characters="/\x00")
file_stems = st.text(_NAME_CHARACTERS, min_size=1, max_size=40).filter(
    lambda stem: stem not in (".", "..") and len(stem.encode("utf-8")) < 200
)
pdf_like = st.builds(
    lambda body, tail: b"%PDF-1." + body + tail,
    st.binary(max_size=2048),
    st.sampled_from([b"", b"\n%%EOF", b"\ntrailer<</Root 1 0 R>>\n%%EOF"]),
)
file_contents = st.one_of(
    st.binary(max_size=4096),
    encoded_text,
    valid_text.map(lambda text: text.encode("utf-8")),
    conversation_json.map(json_bytes),
    st.lists(conversation_json.map(lambda value: json.dumps(value)), max_size=5).map(
        lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
    ),
    pdf_like,
)


@dataclass
class Tally:
    """What a run of hostile inputs came to: counts, and the first failures in full."""

    inputs: int = 0
    accepted: int = 0
    refused: int = 0  # skipped with a reason, or an HTTP status below 500
    server_errors: int = 0  # HTTP 5xx
    tracebacks: int = 0  # an exception nobody turned into a reason, or a traceback in a body
    failures: list[str] = field(default_factory=list)

    def fail(self, what: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(what)


def read_hostile_file(
    directory: Path, stem: str, suffix: str, content: bytes, tally: Tally
) -> None:
    """Write one hostile file and read it: a Document or a SourceError, never anything else."""
    path = directory / f"{stem}{suffix}"
    try:
        path.write_bytes(content)
    except OSError:
        return  # a name this file system refuses is no input to the reader
    tally.inputs += 1
    try:
        load_file(path)
        tally.accepted += 1
    except SourceError:
        tally.refused += 1
    except Exception:  # the property under test: nothing but SourceError escapes
        tally.tracebacks += 1
        tally.fail(f"{path.name!r} ({len(content)} bytes): {traceback.format_exc()}")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


# --- HTTP --------------------------------------------------------------------------------------

QUERY_MODES = st.sampled_from(["navigate", "research", "hybrid", "bm25", "vector", "tree", ""])
small_ints = st.integers(min_value=-3, max_value=200) | st.none() | any_text
request_bodies = {
    "/query": st.fixed_dictionaries(
        {"question": any_text},
        optional={"mode": QUERY_MODES, "max_iterations": small_ints, "system_prompt": any_text},
    ),
    "/search": st.fixed_dictionaries(
        {"query": any_text},
        optional={
            "mode": QUERY_MODES,
            "top_k": small_ints,
            "within": st.lists(any_text, max_size=3),
            "under": any_text,
        },
    ),
    "/sessions": st.fixed_dictionaries({"task_goal": any_text}),
    "/sessions/{session}/intercept": st.fixed_dictionaries(
        {"context": any_text},
        optional={
            "task_type": st.sampled_from(["normal", "cross_validate", "x"]),
            "attachments": st.lists(st.tuples(any_text, any_text), max_size=2),
            "metadata": st.dictionaries(any_text, json_values, max_size=3),
        },
    ),
    "/conversations/{conversation}/turns": st.fixed_dictionaries(
        {"speaker": any_text, "text": any_text}, optional={"timestamp": any_text}
    ),
    "/conversations/{conversation}/recall": st.fixed_dictionaries(
        {"query": any_text}, optional={"max_tokens": small_ints}
    ),
}
raw_bodies = st.one_of(
    json_values.map(json_bytes),
    st.binary(max_size=512),
    any_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
)
GET_PATHS = (
    "/sessions/{segment}",
    "/sessions/{segment}/prompt",
    "/memory/{segment}",
    "/conversations/{segment}",
)
path_segments = any_text.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe=""))


@st.composite
def http_requests(draw, session: str = "s-none", conversation: str = "fuzz") -> tuple:
    """(method, path, body bytes or None): near-valid bodies, random JSON, raw bytes, paths."""
    kind = draw(st.sampled_from(["body", "body", "raw", "get"]))
    if kind == "get":
        template = draw(st.sampled_from(GET_PATHS))
        segment = draw(path_segments | st.just(session))
        return "GET", template.format(segment=segment or "x"), None
    template = draw(st.sampled_from(sorted(request_bodies)))
    path = template.format(session=session, conversation=conversation)
    if kind == "raw":
        return "POST", path, draw(raw_bodies)
    body = draw(request_bodies[template] | json_values)
    return "POST", path, json_bytes(body)


def send_hostile_request(http: httpx.Client, request: tuple, tally: Tally) -> None:
    """One hostile request: any status below 500, a JSON body, no traceback in it."""
    method, path, body = request
    tally.inputs += 1
    try:
        response = http.request(
            method, path, content=body, headers={"content-type": "application/json"}
        )
    except httpx.HTTPError as exc:
        tally.server_errors += 1
        tally.fail(f"{method} {path}: no response ({exc!r})")
        return
    if "Traceback" in response.text:
        tally.tracebacks += 1
        tally.fail(f"{method} {path} {body!r:.200}: traceback in the body: {response.text[:500]}")
    if response.status_code >= 500:
        tally.server_errors += 1
        tally.fail(f"{method} {path} {body!r:.200}: {response.status_code} {response.text[:300]}")
        return
    tally.accepted += response.status_code < 300
    tally.refused += response.status_code >= 300
