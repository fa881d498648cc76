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


# --- binding, the API key and the Serve config, still without Ray ----------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("myhost.example.com", False),
    ],
)
def test_loopback_addresses(host, loopback):
    from actors.serve_run import is_loopback

    assert is_loopback(host) is loopback


def test_a_non_loopback_bind_needs_an_api_key(tmp_path):
    from actors.serve_run import require_api_key_off_loopback, run_blocking

    require_api_key_off_loopback("127.0.0.1", None)
    require_api_key_off_loopback("0.0.0.0", "a-key")
    # Refused before Ray is started or the store is looked at.
    with pytest.raises(ConfigError, match="not a loopback address.*--api-key"):
        run_blocking(tmp_path / "no-store", host="0.0.0.0", api_key="")


def test_the_serve_command_refuses_a_public_bind_without_a_key(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from memory_bank.cli.main import app

    monkeypatch.delenv("MEMORY_BANK_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["serve", "--store", str(tmp_path), "--host", "0.0.0.0"])

    assert result.exit_code == 1
    assert "refusing to serve on 0.0.0.0" in result.output
    assert "MEMORY_BANK_API_KEY" in result.output


def test_build_app_reads_the_key_from_the_named_variable_only(tmp_path, monkeypatch):
    monkeypatch.delenv("MB_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="MB_TEST_KEY, which is not set"):
        build_app({"store": str(tmp_path), "api_key_env": "MB_TEST_KEY"})


def test_configs_serve_yaml_is_a_valid_ray_serve_config_for_this_app():
    from pathlib import Path

    import yaml
    from ray.serve.schema import ServeDeploySchema

    from actors.serve_app import MemoryBankIngress
    from actors.serve_model import MemoryBankModel

    path = Path(__file__).resolve().parents[2] / "configs" / "serve.yaml"
    schema = ServeDeploySchema.model_validate(yaml.safe_load(path.read_text()))

    (application,) = schema.applications
    overridden = {deployment.name: deployment for deployment in application.deployments}
    assert set(overridden) <= {MemoryBankModel.name, MemoryBankIngress.name}
    replicas = overridden[MemoryBankModel.name]
    assert (
        replicas.autoscaling_config["min_replicas"] <= replicas.autoscaling_config["max_replicas"]
    )
    # The line is kept at the ingress (serve.max_queued_requests), never in Serve's router.
    assert "max_queued_requests" not in replicas.model_dump(exclude_unset=True)


def test_autoscaling_bounds_are_checked():
    from memory_bank.config import AppConfig

    with pytest.raises(ValueError, match="min_replicas must not exceed max_replicas"):
        AppConfig.model_validate({"serve": {"autoscaling": {"min_replicas": 3, "max_replicas": 2}}})


def test_the_ingress_lets_out_as_many_calls_as_the_replicas_admit():
    from actors.serve_app import model_capacity
    from memory_bank.config import AppConfig

    fixed = AppConfig.model_validate({"serve": {"num_replicas": 2, "max_ongoing_requests": 8}})
    scaled = AppConfig.model_validate(
        {
            "serve": {
                "max_ongoing_requests": 8,
                "autoscaling": {"min_replicas": 0, "max_replicas": 4},
            }
        }
    )

    assert model_capacity(fixed.serve) == 16
    assert model_capacity(fixed.serve, num_replicas=3) == 24  # `--replicas` wins
    # Autoscaling: the fewest replicas' worth (at least one), so nothing waits in Serve's router.
    assert model_capacity(scaled.serve) == 8
