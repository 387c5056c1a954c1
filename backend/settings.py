"""ReasonLab's settings: one pydantic-settings class, environment prefix ``REASONLAB_``.

Embedded mode (the default) keeps everything under one home folder (``./.reasonlab``): a SQLite database,
Celery's filesystem broker, MLflow's sqlite store and the artifact root. Server mode (compose, scale-out)
points the URLs at Postgres, Redis and an MLflow server and refuses placeholder secrets.
"""

from __future__ import annotations

import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = {"", "change-me", "changeme", "secret", "reasonlab-embedded-secret"}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REASONLAB_", env_file=None, extra="ignore")

    mode: Literal["embedded", "server"] = "embedded"
    home: Path = Field(Path(".reasonlab"), description="embedded mode's folder for everything")

    database_url: str = Field("", description="default: sqlite under home")
    broker_url: str = Field("", description="default: Celery filesystem broker under home")
    mlflow_tracking_uri: str = Field("", description="default: sqlite MLflow store under home")
    artifact_root: str = Field("", description="checkpoints and artifacts; default: home/artifacts")

    api_url: str = Field("http://127.0.0.1:8000", description="where workers and the CLI reach the API")
    secret_key: str = Field("reasonlab-embedded-secret", description="JWT signing key")
    worker_token: str = Field("", description="shared token workers authenticate with")
    jwt_ttl_seconds: int = 12 * 3600

    heartbeat_interval: float = Field(5.0, gt=0, description="seconds between worker heartbeats")
    heartbeat_timeout: float = Field(60.0, gt=0, description="a running run silent this long is reaped")
    reaper_interval: float = Field(5.0, gt=0)
    dispatch_interval: float = Field(1.0, gt=0, description="outbox poll period")
    redispatch_after: float = Field(
        6 * 3600.0,
        gt=0,
        description="a run still queued this long after it was sent is sent again (a lost broker message); "
        "the claim refuses the duplicate",
    )
    broker_visibility_timeout: int = Field(
        7 * 24 * 3600, gt=0, description="Redis: seconds before an unacknowledged message is redelivered"
    )
    default_max_attempts: int = Field(3, ge=1)
    max_metric_batch: int = 10_000
    max_runs_per_experiment: int = 10_000
    run_background_loops: bool = Field(True, description="dispatcher and reaper inside the API process")
    static_dir: Path | None = Field(None, description="built dashboard to serve at /")

    @model_validator(mode="after")
    def _resolve_defaults(self) -> Settings:
        home = self.home.expanduser().resolve()
        self.home = home
        if not self.database_url:
            self.database_url = f"sqlite:///{home / 'reasonlab.db'}"
        if not self.broker_url:
            self.broker_url = "filesystem://"
        if not self.mlflow_tracking_uri:
            self.mlflow_tracking_uri = f"sqlite:///{home / 'mlflow.db'}"
        if not self.artifact_root:
            self.artifact_root = str(home / "artifacts")
        if self.mode == "embedded" and self.secret_key in PLACEHOLDER_SECRETS:
            self.secret_key = _embedded_secret(home)
        weak_token = self.worker_token.strip().lower() in PLACEHOLDER_SECRETS or len(self.worker_token) < 16
        if self.mode == "server" and weak_token:
            raise ValueError(
                "REASONLAB_WORKER_TOKEN is a placeholder or shorter than 16 characters: set a real token in server mode"
            )
        return self

    def require_api_secrets(self) -> None:
        """The API signs logins with ``secret_key``: in server mode it must be a real secret.
        (Workers never sign anything, so only the API process checks this.)"""
        if self.mode == "server" and (
            self.secret_key.strip().lower() in PLACEHOLDER_SECRETS or len(self.secret_key) < 16
        ):
            raise ValueError(
                "REASONLAB_SECRET_KEY is a placeholder or shorter than 16 characters: set a real secret in server mode"
            )

    @property
    def broker_folder(self) -> Path:
        """The filesystem broker's exchange folder (embedded mode)."""
        return self.home / "broker"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _embedded_secret(home: Path) -> str:
    """Embedded mode keeps a random signing key in home/secret.key (mode 600), made on first use."""
    path = home / "secret.key"
    if path.is_file():
        return path.read_text().strip()
    home.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process of this home made it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(key)
    return key


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
