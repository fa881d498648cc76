"""Size limits that keep the write path and the session layer readable: no function over 80
lines in the ingest and store packages, no class over 250 lines in the session package."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "memory_bank"
FUNCTION_LIMITS = {"ingest": 80, "store": 80}
CLASS_LIMITS = {"session": 250}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def oversized(source: str, kinds: tuple[type[ast.AST], ...], limit: int) -> Iterator[str]:
    """Each definition of `kinds` in `source` longer than `limit` lines (decorators included),
    as "line name (length)"."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, kinds):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = node.end_lineno - first + 1
            if length > limit:
                yield f"{first} {node.name} ({length} lines)"


def _violations(package: str, kinds: tuple[type[ast.AST], ...], limit: int) -> list[str]:
    found = []
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for where in oversized(path.read_text(encoding="utf-8"), kinds, limit):
            found.append(f"{path.relative_to(PACKAGE.parent)}:{where}")
    return found


@pytest.mark.parametrize(("package", "limit"), FUNCTION_LIMITS.items())
def test_no_function_is_longer_than_the_limit(package: str, limit: int) -> None:
    assert _violations(package, FUNCTIONS, limit) == []


@pytest.mark.parametrize(("package", "limit"), CLASS_LIMITS.items())
def test_no_class_is_longer_than_the_limit(package: str, limit: int) -> None:
    assert _violations(package, (ast.ClassDef,), limit) == []


def test_the_measure_counts_every_line_of_a_definition() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(3))
    source = f"@decorated\ndef long():\n{body}\n\nclass Short:\n    pass\n"
    assert list(oversized(source, FUNCTIONS, 4)) == ["1 long (5 lines)"]
    assert list(oversized(source, FUNCTIONS, 5)) == []
    assert list(oversized(source, (ast.ClassDef,), 1)) == ["8 Short (2 lines)"]
