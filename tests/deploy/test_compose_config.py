"""``docker compose config`` parses docker-compose.yml with the secrets set and refuses without any of
them; every service is probed and started in order; a missing Compose is a clear message."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.conftest import (
    COMPOSE_FILE,
    REPO,
    SECRETS,
    SERVICES,
    WORKERS,
    ComposeUnavailable,
    find_compose,
    run_compose,
    service_env,
)


def test_compose_config_parses_with_the_secrets(config: dict[str, Any]) -> None:
    assert set(config["services"]) == SERVICES
    assert {"pgdata", "redisdata", "mlflow-artifacts", "artifacts"} <= set(config["volumes"])


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_refuses_to_start_without_each_secret(
    compose: list[str], tmp_path: Path, missing: str
) -> None:
    for value in (None, ""):  # unset, and set but empty (a copied, unedited .env.example)
        env = {k: v for k, v in SECRETS.items() if k != missing}
        if value is not None:
            env[missing] = value
        out = run_compose(compose, tmp_path, env, "config", "--quiet")
        assert out.returncode != 0, f"compose accepted a config without {missing}"
        assert missing in out.stderr and ".env" in out.stderr, out.stderr


def test_env_example_names_every_required_variable_empty() -> None:
    """Copying .env.example unedited leaves every secret empty, so compose refuses to start."""
    required = set(re.findall(r"\$\{(\w+):\?", COMPOSE_FILE.read_text()))
    assert required == set(SECRETS)
    example = (REPO / ".env.example").read_text()
    for name in required:
        assert re.search(rf"^{name}=$", example, re.M), f".env.example must list {name}= with an empty value"


def test_healthchecks_and_start_order(config: dict[str, Any]) -> None:
    services = config["services"]

    def probe(name: str) -> str:
        return " ".join(services[name]["healthcheck"]["test"])

    assert "pg_isready" in probe("postgres")
    assert "redis-cli ping" in probe("redis")
    assert "127.0.0.1:5000/health" in probe("mlflow")
    assert "127.0.0.1:8000/api/v1/health" in probe("api")
    assert "127.0.0.1:8000/api/v1/health" in probe("ingest")
    assert "127.0.0.1:8000/api/v1/health" in probe("proxy")  # through nginx to the api
    wants = {
        "mlflow": {"postgres"},
        "api": {"postgres", "redis"},
        "ingest": {"api"},  # once the api has migrated the database
        "proxy": {"api", "ingest"},
        "worker": {"ingest", "redis", "mlflow"},
        "worker-cpu": {"ingest", "redis", "mlflow"},
    }
    for name, deps in wants.items():
        depends = services[name]["depends_on"]
        assert set(depends) == deps, name
        assert all(d["condition"] == "service_healthy" for d in depends.values()), name
    # every probed service has a healthcheck, so service_healthy can be met
    for dep in {d for deps in wants.values() for d in deps}:
        assert services[dep].get("healthcheck", {}).get("test"), dep


def test_the_api_healthcheck_path_is_the_health_route() -> None:
    from backend.health.routes import router
    from backend.main import API_PREFIX

    paths = {getattr(r, "path", "") for r in router.routes}
    assert API_PREFIX == "/api/v1" and "/health" in paths


def test_missing_compose_is_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(
        ComposeUnavailable, match=r"no `docker` binary on PATH.*Install the Docker Compose plugin"
    ):
        find_compose(str(tmp_path), python_package=False)


def test_no_artifact_volume_is_shared_with_the_workers(config: dict[str, Any]) -> None:
    """Artifacts reach the API's store over REST (worker/tracking/artifacts.py); only the api mounts the
    `artifacts` volume (its store, file://<root>/store). A worker's artifact root is its own working copy:
    an anonymous volume per container, never a named volume or a host folder another service sees."""
    services = config["services"]
    api_root = service_env(config, "api")["REASONLAB_ARTIFACT_ROOT"]
    api_mounts = [v for v in services["api"]["volumes"] if v["target"] == api_root]
    assert len(api_mounts) == 1 and api_mounts[0]["type"] == "volume", "the api's store needs a volume"
    store = api_mounts[0]["source"]
    assert store == "artifacts"
    for name in WORKERS:
        root = service_env(config, name)["REASONLAB_ARTIFACT_ROOT"]
        mounts = services[name].get("volumes") or []
        assert all(v.get("source") != store for v in mounts), f"{name} mounts the api's artifact store"
        at_root = [v for v in mounts if v["target"] == root]
        assert len(at_root) == 1, f"{name}: {root} should be its own anonymous volume"
        assert at_root[0]["type"] == "volume" and not at_root[0].get("source"), (
            f"{name}: {root} must not be shared ({at_root[0]})"
        )
