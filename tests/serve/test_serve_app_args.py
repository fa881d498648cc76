"""The Serve app builder's arguments and the domain-error statuses, without Ray."""

from __future__ import annotations

import pytest

from actors.serve_app import build_app, error_status
from memory_bank.errors import ConfigError, LLMError, StoreError, ToolError


def test_build_app_refuses_a_missing_store(tmp_path):
    with pytest.raises(StoreError, match="no memory store"):
        build_app({"store": str(tmp_path / "absent")})


@pytest.mark.parametrize(
    "args",
    [{}, {"store": "x", "replicas": 2}, {"store": "x", "num_replicas": 0}],
    ids=["no store", "unknown key", "zero replicas"],
)
def test_build_app_rejects_bad_arguments(args):
    with pytest.raises(ConfigError, match="invalid serve arguments"):
        build_app(args)


def test_build_app_reports_an_unreadable_config(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        build_app({"store": str(tmp_path), "config": str(tmp_path / "missing.yaml")})


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (StoreError("store replaced"), 503),
        (ToolError("path escapes the store"), 400),
        (ConfigError("bad alpha"), 400),
        (LLMError("backend down"), 500),
    ],
)
def test_domain_errors_map_to_http_statuses(error, status):
    assert error_status(error) == status


def test_command_line_arguments_arrive_as_strings_and_are_coerced():
    # `serve run actors.serve_app:build_app store=DIR num_replicas=2` passes every value as text.
    from actors.serve_app import AppArgs

    assert AppArgs.model_validate({"store": "s", "num_replicas": "2"}).num_replicas == 2
