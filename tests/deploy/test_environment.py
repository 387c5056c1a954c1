"""The API's compose environment makes a valid server-mode ``Settings``; placeholder secrets are
refused. The workers' environment points at compose services and shares the API's token; the API alone
holds the artifact store (test_compose_config.py: no artifact volume is shared with a worker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy.conftest import SECRETS, WORKERS, run_compose, service_env


def _settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Any:
    from backend.settings import Settings

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    settings.require_api_secrets()  # what create_app() checks when the API starts
    return settings


def test_api_environment_is_a_valid_server_settings(
    config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    from backend.db import make_engine

    env = service_env(config, "api")
    settings = _settings_from(env, clean_env)
    assert settings.mode == "server"
    assert settings.secret_key == SECRETS["REASONLAB_SECRET_KEY"]
    assert settings.worker_token == SECRETS["REASONLAB_WORKER_TOKEN"]
    assert not settings.is_sqlite
    db = urlsplit(settings.database_url)
    assert db.scheme == "postgresql" and db.hostname == "postgres" and db.path == "/reasonlab"
    assert db.password == SECRETS["POSTGRES_PASSWORD"]
    assert make_engine(settings.database_url).dialect.driver == "psycopg"  # the driver the image installs
    assert settings.broker_url == "redis://redis:6379/0"
    assert settings.mlflow_tracking_uri == "http://mlflow:5000"
    assert settings.artifact_root == "/data/artifacts"
    assert settings.run_background_loops  # the dispatcher and the reaper run in the api container


@pytest.mark.parametrize("name", ["REASONLAB_SECRET_KEY", "REASONLAB_WORKER_TOKEN"])
@pytest.mark.parametrize("placeholder", ["change-me", "CHANGEME", "secret", "too-short"])
def test_the_api_refuses_placeholder_secrets(
    compose: list[str], tmp_path: Path, clean_env: pytest.MonkeyPatch, name: str, placeholder: str
) -> None:
    """Compose only checks that the secrets are set; the API (server mode) refuses placeholders."""
    out = run_compose(compose, tmp_path, {**SECRETS, name: placeholder}, "config", "--format", "json")
    assert out.returncode == 0, out.stderr
    env = service_env(json.loads(out.stdout), "api")
    assert env[name] == placeholder
    with pytest.raises(ValueError, match=name):
        _settings_from(env, clean_env)


def test_worker_environment_is_valid_and_points_at_the_services(
    config: dict[str, Any], clean_env: pytest.MonkeyPatch
) -> None:
    services = config["services"]
    api_env = service_env(config, "api")
    for name in WORKERS:
        env = service_env(config, name)
        assert not any(k in env for k in ("REASONLAB_DATABASE_URL", "REASONLAB_SECRET_KEY")), (
            f"{name}: workers never open the database nor sign logins"
        )
        for key, value in env.items():
            clean_env.setenv(key, value)
        from backend.settings import Settings

        settings = Settings()
        assert settings.worker_token == api_env["REASONLAB_WORKER_TOKEN"]
        assert settings.broker_url == api_env["REASONLAB_BROKER_URL"]
        assert not any("MLFLOW" in k for k in env), f"{name}: workers never talk to MLflow (the API mirrors)"
        assert settings.artifact_root == api_env["REASONLAB_ARTIFACT_ROOT"]
        assert settings.heartbeat_interval < float(api_env["REASONLAB_HEARTBEAT_TIMEOUT"])
        for url in (settings.api_url, settings.broker_url):
            assert urlsplit(url).hostname in services, f"{name}: {url} names no compose service"
        assert urlsplit(settings.api_url).port == 8000


def test_every_service_keeps_its_artifact_root_on_a_volume(config: dict[str, Any]) -> None:
    """The api's root holds the artifact store (the named volume `artifacts`); each worker's, its own
    working copies of checkpoints and outputs (an anonymous volume, not the container's layer)."""
    sources = set()
    for name in ("api", *WORKERS):
        root = service_env(config, name)["REASONLAB_ARTIFACT_ROOT"]
        mounts = [v for v in config["services"][name]["volumes"] if v["target"] == root]
        assert len(mounts) == 1 and mounts[0]["type"] == "volume", f"{name}: {root} is not a volume"
        sources.add(mounts[0].get("source"))
    assert sources == {"artifacts", None}, f"only the api names a volume for its artifacts, got {sources}"
