"""docs/configuration.md is generated from the settings models and must match them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from memory_bank.config import AppConfig
from memory_bank.config_reference import nested_model, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def settings_models(model: type[BaseModel] = AppConfig) -> Iterator[type[BaseModel]]:
    for info in model.model_fields.values():
        inner = nested_model(info.annotation)
        if inner is not None:
            yield inner
            yield from settings_models(inner)


def test_the_committed_reference_is_what_the_models_give():
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is out of date: run "
        "`python -m memory_bank.config_reference > docs/configuration.md`"
    )


def test_every_key_has_a_description_and_a_row():
    page = render()
    for model in settings_models():
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no description"
            assert f"| `{name}` |" in page, f"{model.__name__}.{name} is not on the page"
