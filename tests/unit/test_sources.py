"""Reading sources into Documents: each kind, conversations, bad input, discovery, dedup."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

from memory_bank.errors import SourceError
from memory_bank.text.inputs import discover_files, load_sources
from memory_bank.text.sources import document_from_text, load_file


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def make_pdf(path: Path, pages: list[str], title: str | None = None, image: bool = True) -> Path:
    pdf = canvas.Canvas(str(path))
    if title:
        pdf.setTitle(title)
    png = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 30, 30)).save(png, format="PNG")
    png.seek(0)
    for page_text in pages:
        if image:
            pdf.drawImage(ImageReader(png), 72, 500, width=64, height=64)
        y = 760
        for line in page_text.split("\n"):
            pdf.drawString(72, y, line)
            y -= 16
        pdf.showPage()
    pdf.save()
    return path


# ------------------------------------------------------------------------------ kinds


def test_text_file(tmp_path):
    raw = "First line.\r\nSecond\tline.\x07\r\n\r\nNew paragraph.\n"
    path = write(tmp_path / "meeting_notes-2024.txt", raw)
    doc = load_file(path)
    assert doc.kind == "text"
    assert doc.title == "Meeting notes 2024"
    assert doc.text == "First line.\nSecond\tline.\n\nNew paragraph."
    assert doc.document_id == hashlib.sha256(doc.text.encode()).hexdigest()[:16]
    assert doc.source == str(path)
    assert doc.turns == [] and doc.turn_offsets == []


def test_markdown_title_is_first_top_level_header(tmp_path):
    path = write(tmp_path / "guide.md", "## Not this\n\n# The Real Title\n\nBody.\n\n# Later\n")
    doc = load_file(path)
    assert (doc.kind, doc.title) == ("markdown", "The Real Title")


def test_markdown_without_header_uses_file_stem(tmp_path):
    doc = load_file(write(tmp_path / "release_notes.markdown", "Just text, no header."))
    assert (doc.kind, doc.title) == ("markdown", "Release notes")


def test_utf8_bom_is_accepted(tmp_path):
    doc = load_file(write(tmp_path / "bom.txt", "\ufeffcafé au lait".encode()))
    assert doc.text == "café au lait"


def test_pdf_with_image_and_metadata_title(tmp_path):
    pages = ["Revenue grew by 12 percent.", "Costs fell in March."]
    path = make_pdf(tmp_path / "report.pdf", pages, title="Quarterly Report")
    doc = load_file(path)
    assert doc.kind == "pdf"
    assert doc.title == "Quarterly Report"
    assert "Revenue grew by 12 percent." in doc.text
    assert "Costs fell in March." in doc.text
    assert doc.text.index("Revenue") < doc.text.index("Costs")


def test_pdf_without_title_uses_file_stem(tmp_path):
    doc = load_file(make_pdf(tmp_path / "annual_summary.pdf", ["Some text."]))
    assert doc.title == "Annual summary"  # reportlab's placeholder "untitled" is ignored


def test_pdf_with_a_broken_page_keeps_the_other_pages(tmp_path):
    pdf = make_pdf(
        tmp_path / "two_pages.pdf", ["Readable first page.", "Second page text."], image=False
    )
    data = pdf.read_bytes()
    # Overwrite the second page's compressed content stream with bytes that do not decompress.
    second = data.index(b"stream\n", data.index(b"stream\n") + 1) + len(b"stream\n")
    end = data.index(b"endstream", second)
    pdf.write_bytes(data[:second] + b"!" * (end - second) + data[end:])
    doc = load_file(pdf)
    assert "Readable first page." in doc.text
    assert "Second page" not in doc.text


def test_raw_text():
    doc = document_from_text("  Notes from the call\r\nWe agreed on Friday.  ")
    assert doc is not None
    assert (doc.source, doc.kind, doc.title) == ("<text>", "text", "Notes from the call")
    assert doc.text == "Notes from the call\nWe agreed on Friday."
    assert document_from_text("Same", source="<text:3>").source == "<text:3>"


@pytest.mark.parametrize("blank", ["", "   ", "\n\t\r\n", "\x00\x07"])
def test_raw_text_blank_is_none(blank):
    assert document_from_text(blank) is None


def test_raw_text_long_first_line_is_shortened_for_the_title():
    doc = document_from_text("word " * 100)
    assert doc is not None and len(doc.title) <= 81 and doc.title.endswith("…")


# ---------------------------------------------------------------------- conversations

TURNS = [
    {"speaker": "Ann", "text": "Shall we meet on Monday?", "timestamp": "2024-05-01 09:00"},
    {"speaker": "Bob", "text": "Monday works.\n\nMorning is best."},
]


def check_turns(doc, expected_speakers):
    assert doc.kind == "conversation"
    assert [turn.speaker for turn in doc.turns] == expected_speakers
    assert len(doc.turn_offsets) == len(doc.turns)
    for turn, offset in zip(doc.turns, doc.turn_offsets, strict=True):
        prefix = f"[{turn.timestamp}] " if turn.timestamp else ""
        assert doc.text.startswith(f"{prefix}{turn.speaker}: {turn.text}", offset)


def test_conversation_list_of_turns(tmp_path):
    doc = load_file(write(tmp_path / "chat_log.json", json.dumps(TURNS)))
    check_turns(doc, ["Ann", "Bob"])
    assert doc.text == (
        "[2024-05-01 09:00] Ann: Shall we meet on Monday (2024-05-06)?\n\nBob: Monday works.\n\nMorning is best."
    )
    assert doc.title == "Chat log"


def test_conversation_turns_object(tmp_path):
    doc = load_file(write(tmp_path / "c.json", json.dumps({"turns": TURNS})))
    check_turns(doc, ["Ann", "Bob"])
    assert "## Session" not in doc.text


@pytest.mark.parametrize("wrap", [lambda s: s, lambda s: {"sessions": s}])
def test_conversation_sessions(tmp_path, wrap):
    sessions = [
        {"session_id": "kickoff", "turns": TURNS},
        {"turns": [{"speaker": "Cy", "text": "Late reply."}]},
    ]
    doc = load_file(write(tmp_path / "s.json", json.dumps(wrap(sessions))))
    check_turns(doc, ["Ann", "Bob", "Cy"])
    assert doc.text.startswith("## Session kickoff\n\n[2024-05-01 09:00] Ann:")
    assert "\n\n## Session 2\n\nCy: Late reply." in doc.text


def test_conversation_jsonl_with_openai_aliases(tmp_path):
    lines = [
        {"role": "user", "content": "What is Ray?"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "A framework."}, {"type": "image_url"}],
        },
        {"role": "user", "content": "   "},  # blank turns are dropped
    ]
    path = write(tmp_path / "openai.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n\n")
    doc = load_file(path)
    check_turns(doc, ["user", "assistant"])
    assert doc.text == "user: What is Ray?\n\nassistant: A framework."


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.txt", b"", "empty"),
        ("blank.md", b" \n\t\n", "empty"),
        ("nul.txt", b"text\x00with nul", "binary"),
        ("controls.txt", bytes(range(1, 9)) * 50, "binary"),
        ("corrupt.pdf", b"%PDF-1.4\nthis is not really a pdf", "PDF"),
        ("invalid.json", b'[{"speaker": "a", "text": ', "invalid JSON"),
        ("wrong_top.json", b'{"messages": []}', "expected a list of turns"),
        ("no_text.json", b'[{"speaker": "a"}]', 'turn 1 has no "text"'),
        ("not_objects.json", b"[1, 2]", "turn 1 is a JSON int"),
        ("bad_session.json", b'{"sessions": [{"turns": []}, {"id": 2}]}', "session 2"),
        ("no_turns.json", b"[]", "no turns"),
        ("bad_line.jsonl", b'{"speaker": "a", "text": "ok"}\nnot json\n', "line 2"),
        ("notes.docx", b"PK\x03\x04", "unsupported file type .docx"),
    ],
)
def test_bad_input_is_refused_with_a_reason(tmp_path, name, content, reason):
    path = write(tmp_path / name, content)
    with pytest.raises(SourceError, match=reason) as caught:
        load_file(path)
    assert caught.value.source == str(path)


LEGACY_TEXTS = [
    (
        "cp1252",
        "Le café de la rue est fermé le dimanche. Nous avons mangé une crème brûlée à Paris.",
    ),
    ("latin-1", "café au lait, crème brûlée et pâtisserie française."),
    ("cp1252", "Grüße aus München: die Straße, die Größe und der Übermut."),
    ("shift_jis", "東京タワーは1958年に完成した。展望台から富士山が見える日もある。"),
    (
        "euc_jp",  # a sentence or two: shorter EUC-JP text reads as plausibly as EUC-KR
        "琵琶湖は滋賀県にある日本最大の湖で、面積は約670平方キロメートルである。"
        "湖の水は瀬田川から宇治川、淀川を経て大阪湾に流れ、近畿地方の水源となっている。",
    ),
    ("gb18030", "长城是中国古代修建的大型军事防御工程。"),
    ("cp1251", "Москва — столица России, крупнейший по численности населения город."),
    ("utf-16", "Text with a byte-order mark, as Windows Notepad saved it."),
]


@pytest.mark.parametrize(("encoding", "text"), LEGACY_TEXTS)
def test_legacy_encodings_are_decoded_and_recorded(tmp_path, encoding, text):
    document = load_file(write(tmp_path / "legacy.txt", text.encode(encoding)))
    assert document.text == text
    assert document.encoding != "utf-8"
    assert load_file(write(tmp_path / "plain.txt", text)).encoding == "utf-8"


def test_a_short_legacy_text_is_not_read_as_utf16(tmp_path):
    # Four bytes without NULs could be two UTF-16 characters; text in UTF-16 is full of NULs.
    assert load_file(write(tmp_path / "short.txt", "café".encode("latin-1"))).text == "café"


def test_the_ingest_summary_names_decoded_sources(tmp_path):
    from memory_bank.ingest.stages import read_inputs

    write(tmp_path / "docs" / "legacy.txt", LEGACY_TEXTS[3][1].encode("shift_jis"))
    write(tmp_path / "docs" / "plain.txt", "Plain UTF-8 text about lighthouses.")
    loaded = read_inputs([tmp_path / "docs"], None)
    assert {Path(d.source).name: d.encoding for d in loaded.documents} == {
        "legacy.txt": "cp932",
        "plain.txt": "utf-8",
    }


def test_image_only_pdf_is_refused(tmp_path):
    path = make_pdf(tmp_path / "scan.pdf", [""])
    with pytest.raises(SourceError, match="no extractable text"):
        load_file(path)


def test_file_above_size_limit_is_refused(tmp_path):
    path = write(tmp_path / "big.txt", "x" * 2000)
    with pytest.raises(SourceError, match="too large"):
        load_file(path, max_bytes=1000)
    assert load_file(path, max_bytes=2000).text == "x" * 2000


def test_missing_file_is_refused(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        load_file(tmp_path / "gone.txt")


# ---------------------------------------------------------------------------- discovery


def test_discover_walks_directories_sorted_and_skips_hidden_and_unsupported(tmp_path):
    root = tmp_path / "docs"
    for relative in [
        "b.md",
        "a.txt",
        "sub/c.pdf",
        "sub/deeper/d.json",
        "z.jsonl",
        "image.png",
        ".hidden.md",
        ".git/config.md",
        "sub/.cache/e.txt",
    ]:
        write(root / relative, "x")
    found = discover_files([root])
    assert [path.relative_to(root).as_posix() for path in found] == [
        "a.txt",
        "b.md",
        "sub/c.pdf",
        "sub/deeper/d.json",
        "z.jsonl",
    ]
    assert all(str(path).startswith(str(root)) for path in found)


def test_discover_does_not_follow_symlinks_out_of_the_tree(tmp_path):
    outside = write(tmp_path / "outside" / "secret.txt", "secret")
    root = tmp_path / "root"
    inside = write(root / "real.txt", "real")
    (root / "link_out.txt").symlink_to(outside)
    (root / "link_in.txt").symlink_to(inside)
    (root / "linked_dir").symlink_to(outside.parent, target_is_directory=True)
    names = [path.name for path in discover_files([root])]
    assert "link_out.txt" not in names and "secret.txt" not in names
    # A link to a file inside the tree is the same file: listed once.
    assert len(names) == 1 and names[0] in {"real.txt", "link_in.txt"}


def test_discover_errors(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        discover_files([tmp_path / "missing"])
    with pytest.raises(SourceError, match="unsupported"):
        discover_files([write(tmp_path / "data.csv", "a,b")])


def test_discover_lists_each_file_once(tmp_path):
    file = write(tmp_path / "d" / "a.txt", "x")
    assert discover_files([tmp_path / "d", file]) == [tmp_path / "d" / "a.txt"]


def test_load_sources_collects_documents_and_skips_bad_files(tmp_path):
    root = tmp_path / "corpus"
    write(root / "a.md", "# Alpha\n\nAlpha text.")
    write(root / "b.txt", b"")
    write(root / "c.json", b'{"nope": 1}')
    write(root / "sub" / "copy_of_a.md", "# Alpha\n\nAlpha text.")
    write(root / "sub" / "d.txt", "Delta text.")
    result = load_sources([root, tmp_path / "missing.txt"])
    assert [doc.source for doc in result.documents] == [
        str(root / "a.md"),
        str(root / "sub" / "d.txt"),
    ]
    assert result.skipped[0] == f"{root / 'b.txt'}: empty"
    assert result.skipped[1].startswith(f"{root / 'c.json'}: not a conversation")
    assert result.skipped[2] == f"{root / 'sub' / 'copy_of_a.md'}: same content as {root / 'a.md'}"
    assert result.skipped[3] == f"{tmp_path / 'missing.txt'}: does not exist"
    assert len(result.skipped) == 4


def test_load_sources_accepts_a_single_path(tmp_path):
    path = write(tmp_path / "one.txt", "One.")
    assert [doc.text for doc in load_sources(str(path)).documents] == ["One."]
