"""The settings the API and the workers share: one pydantic-settings base class, prefix ``REASONLAB_``.

A worker needs only these (where the home folder, the broker, MLflow, the artifact root and the API are,
its token, the heartbeat timing); ``backend.settings.Settings`` subclasses this class and adds what only
the API uses (the database URL, the signing key, the dispatcher's and reaper's periods, ...).

Embedded mode (the default) keeps everything under one home folder (``./.reasonlab``): Celery's
filesystem broker, MLflow's sqlite store and the artifact root. Server mode (compose, scale-out) points
the URLs at Redis and an MLflow server and refuses a placeholder worker token.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = {"", "change-me", "changeme", "secret", "reasonlab-embedded-secret"}


def is_weak_secret(value: str) -> bool:
    """A placeholder (``change-me``, ...) or shorter than 16 characters: refused in server mode."""
    return value.strip().lower() in PLACEHOLDER_SECRETS or len(value) < 16


class SharedSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REASONLAB_", env_file=None, extra="ignore")

    mode: Literal["embedded", "server"] = "embedded"
    home: Path = Field(Path(".reasonlab"), description="embedded mode's folder for everything")

    broker_url: str = Field("", description="default: Celery filesystem broker under home")
    mlflow_tracking_uri: str = Field("", description="default: sqlite MLflow store under home")
    mlflow_ui_url: str = Field(
        "",
        description="where a browser opens MLflow's UI (the dashboard's 'Open in MLflow'); default: the "
        "tracking URI when it is an http(s) server, else none; 'none' hides the link",
    )
    artifact_root: str = Field("", description="checkpoints and artifacts; default: home/artifacts")

    api_url: str = Field("http://127.0.0.1:8000", description="where workers and the CLI reach the API")
    worker_token: str = Field("", description="shared token workers authenticate with")

    heartbeat_interval: float = Field(5.0, gt=0, description="seconds between worker heartbeats")
    heartbeat_timeout: float = Field(60.0, gt=0, description="a running run silent this long is reaped")
    system_metrics: bool = Field(
        True,
        description="workers log each run's CPU, memory and GPU use as system/* metrics at every heartbeat",
    )
    broker_visibility_timeout: int = Field(
        7 * 24 * 3600, gt=0, description="Redis: seconds before an unacknowledged message is redelivered"
    )

    @model_validator(mode="after")
    def _resolve_shared_defaults(self) -> SharedSettings:
        home = self.home.expanduser().resolve()
        self.home = home
        if not self.broker_url:
            self.broker_url = "filesystem://"
        if not self.mlflow_tracking_uri:
            self.mlflow_tracking_uri = f"sqlite:///{home / 'mlflow.db'}"
        if not self.artifact_root:
            self.artifact_root = str(home / "artifacts")
        if self.mode == "server" and is_weak_secret(self.worker_token):
            raise ValueError(
                "REASONLAB_WORKER_TOKEN is a placeholder or shorter than 16 characters: set a real token in server mode"
            )
        return self

    @property
    def mlflow_ui(self) -> str | None:
        """MLflow's UI for browsers, or None where there is none (an embedded sqlite store that nothing
        serves: ``reasonlab up`` starts ``mlflow server`` on it and sets REASONLAB_MLFLOW_UI_URL)."""
        url = self.mlflow_ui_url.strip()
        if url.lower() == "none":
            return None
        if url:
            return url.rstrip("/")
        if self.mlflow_tracking_uri.startswith(("http://", "https://")):
            return self.mlflow_tracking_uri.rstrip("/")
        return None

    @property
    def broker_folder(self) -> Path:
        """The filesystem broker's exchange folder (embedded mode)."""
        return self.home / "broker"


@lru_cache(maxsize=1)
def get_settings() -> SharedSettings:
    """The shared settings of this process, read once from the environment (a worker's settings)."""
    return SharedSettings()
