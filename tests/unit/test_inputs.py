"""Finding the inputs of an ingest: symlink loops, broken links and links leaving the input are
skipped with a reason, never fatal; links inside the input are followed on request."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_bank.errors import SourceError
from memory_bank.text.inputs import discover, discover_files, load_sources
from memory_bank.text.sources import SkippedSource


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def hostile(tmp_path) -> Path:
    """A folder with good files beside a symlink loop, a broken link, links to system paths,
    a link back up the tree and a link to a sibling folder."""
    root = tmp_path / "input"
    write(root / "good.md", "# Good\n\nA good file.")
    write(root / "sub" / "also_good.txt", "Also good.")
    write(root / "other" / "third.txt", "A third file.")
    (root / "loop_a.md").symlink_to(root / "loop_b.md")
    (root / "loop_b.md").symlink_to(root / "loop_a.md")
    (root / "dangling.txt").symlink_to(root / "nowhere.txt")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    (root / "sub" / "up").symlink_to("..", target_is_directory=True)
    (root / "sub" / "to_other").symlink_to("../other", target_is_directory=True)
    return root


def reasons(entries) -> dict[str, str]:
    return {
        Path(entry.source).name: entry.reason
        for entry in entries
        if isinstance(entry, SkippedSource)
    }


def test_hostile_folder_lists_good_files_and_skips_each_bad_link_with_a_reason(hostile):
    entries = discover([hostile])
    files = [entry.relative_to(hostile).as_posix() for entry in entries if isinstance(entry, Path)]
    assert files == ["good.md", "other/third.txt", "sub/also_good.txt"]
    why = reasons(entries)
    assert set(why) == {
        "loop_a.md",
        "loop_b.md",
        "dangling.txt",
        "passwd.txt",
        "etc",
        "up",
        "to_other",
    }
    assert why["loop_a.md"].startswith("symlink loop")
    assert why["dangling.txt"].startswith("broken symlink")
    assert "outside the input (/etc/passwd)" in why["passwd.txt"]
    assert "a directory outside the input (/etc)" in why["etc"]
    assert why["up"].startswith("symlink loop: it leads back to")
    assert "--follow-links" in why["to_other"]


def test_follow_links_enters_directories_inside_the_input_once(hostile):
    entries = discover([hostile], follow_links=True)
    files = [entry.relative_to(hostile).as_posix() for entry in entries if isinstance(entry, Path)]
    # other/ is reached twice (directly and through sub/to_other): listed under one path only.
    assert sorted(Path(f).name for f in files) == ["also_good.txt", "good.md", "third.txt"]
    why = reasons(entries)
    assert "to_other" not in why  # followed
    assert {"loop_a.md", "dangling.txt", "passwd.txt", "etc", "up"} <= set(why)


def test_followed_link_to_a_directory_not_otherwise_walked_is_read(tmp_path):
    root = tmp_path / "input"
    write(root / ".hidden" / "kept.txt", "Only reachable through the link.")
    (root / "visible").symlink_to(root / ".hidden", target_is_directory=True)
    assert discover_files([root]) == []
    assert discover_files([root], follow_links=True) == [root / "visible" / "kept.txt"]


def test_load_sources_reads_the_good_files_and_reports_every_skip(hostile):
    loaded = load_sources([hostile])
    assert sorted(Path(doc.source).name for doc in loaded.documents) == [
        "also_good.txt",
        "good.md",
        "third.txt",
    ]
    assert len(loaded.skipped) == 7
    assert all(": " in line for line in loaded.skipped)


def test_named_links_that_cannot_be_followed_are_skipped_with_why(tmp_path):
    loop = tmp_path / "self.txt"
    loop.symlink_to(loop)
    broken = tmp_path / "broken.md"
    broken.symlink_to(tmp_path / "gone.md")
    loaded = load_sources([loop, broken])
    assert loaded.documents == []
    assert loaded.skipped[0].startswith(f"{loop}: symlink loop")
    assert loaded.skipped[1].startswith(f"{broken}: broken symlink")
    with pytest.raises(SourceError, match="symlink loop"):
        discover_files([loop])


def test_unreadable_directory_is_skipped_with_why(tmp_path, monkeypatch):
    root = tmp_path / "input"
    write(root / "a.txt", "A.")
    locked = root / "locked"
    write(locked / "b.txt", "B.")
    real_scandir = os.scandir

    def scandir(path):  # as for a directory without read permission (root reads them all)
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    entries = discover([root])
    assert [e for e in entries if isinstance(e, Path)] == [root / "a.txt"]
    assert reasons(entries)["locked"] == "cannot list this directory: Permission denied"
