"""The settings the API and the workers share: one pydantic-settings base class, prefix ``REASONLAB_``.

A worker needs only these (where the home folder, the broker, the artifact root and the API are, its
token, the heartbeat timing); ``backend.settings.Settings`` subclasses this class and adds what only the
API uses (the database URL, the signing key, the dispatcher's and reaper's periods, MLflow: the API
mirrors runs to it, workers never talk to it, ...).

Embedded mode (the default) keeps everything under one home folder (``./.reasonlab``): Celery's
filesystem broker and the artifact root. Server mode (compose, scale-out) points the URLs at Redis and
refuses a placeholder worker token.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, InitSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

PLACEHOLDER_SECRETS = {"", "change-me", "changeme", "secret", "reasonlab-embedded-secret"}


def is_weak_secret(value: str) -> bool:
    """A placeholder (``change-me``, ...) or shorter than 16 characters: refused in server mode."""
    return value.strip().lower() in PLACEHOLDER_SECRETS or len(value) < 16


# Settings a worker took out of its environment before it started (worker/runtime/environment.py: the worker
# re-executes itself with an allow-listed environment and hands these over a pipe), by field name. They
# rank above the environment, so a worker reads its token and broker URL from here, and no process it
# forks finds them in its environment.
_SEALED: dict[str, str] = {}


def seal(values: dict[str, str]) -> None:
    """Settings this process holds in memory only (``REASONLAB_<NAME>`` -> ``name``)."""
    _SEALED.clear()
    _SEALED.update({k.removeprefix("REASONLAB_").lower(): v for k, v in values.items()})
    get_settings.cache_clear()


class SharedSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REASONLAB_", env_file=None, extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sealed = InitSettingsSource(settings_cls, init_kwargs=dict(_SEALED))
        return (init_settings, sealed, env_settings, dotenv_settings, file_secret_settings)

    mode: Literal["embedded", "server"] = "embedded"
    home: Path = Field(Path(".reasonlab"), description="embedded mode's folder for everything")

    broker_url: str = Field("", description="default: Celery filesystem broker under home")
    artifact_root: str = Field("", description="checkpoints and artifacts; default: home/artifacts")

    api_url: str = Field("http://127.0.0.1:8000", description="where workers and the CLI reach the API")
    worker_token: str = Field("", description="shared token workers authenticate with")

    heartbeat_interval: float = Field(5.0, gt=0, description="seconds between worker heartbeats")
    heartbeat_timeout: float = Field(60.0, gt=0, description="a running run silent this long is reaped")
    system_metrics: bool = Field(
        True,
        description="workers log each run's CPU, memory and GPU use as system/* metrics at every heartbeat",
    )
    worker_preload: bool = Field(
        True,
        description="a worker imports every kind (and torch's compiler stack) before it forks job processes, "
        "so a run claims within milliseconds; off, the worker starts on less than half the CPU (3 s instead of "
        "7 s) and each run's process imports what its kind needs",
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
        if not self.artifact_root:
            self.artifact_root = str(home / "artifacts")
        if self.mode == "server" and is_weak_secret(self.worker_token):
            raise ValueError(
                "REASONLAB_WORKER_TOKEN is a placeholder or shorter than 16 characters: set a real token in server mode"
            )
        return self

    @property
    def broker_folder(self) -> Path:
        """The filesystem broker's exchange folder (embedded mode)."""
        return self.home / "broker"

    # --- What a spec may reach (docs/spec-confinement.md) -------------------------------------------------
    # Read from the environment by worker.specs.confine (the API at submission, the worker before a run and
    # at connect time: that layer may import nothing but pydantic, so it reads the same variables); declared
    # here so they are documented and typed in one place. Both must be the same on the API and the workers.
    # Files: a spec names them relative to the offline data store (<REASONLAB_CACHE>/data) or the model store
    # (<REASONLAB_CACHE>/models); no setting widens that.
    outbound_allow: str = Field(
        "",
        description="comma-separated hosts a spec's endpoint URL may name: exact names (api.openai.com), "
        "*.domain (names below it), IP addresses or networks (203.0.113.7, 10.1.0.0/16, [::1]), or * (any "
        "host whose addresses are all public); empty = no outbound endpoint at all. Metadata, link-local, "
        "unspecified, multicast and reserved addresses are refused whatever is listed",
    )
    outbound_allow_private: bool = Field(
        False,
        description="admin opt-in: loopback and private addresses may be reached where the address (or its "
        "network) itself is listed in outbound_allow (a host name on the list is not enough); for a local "
        "model server or test fakes; never on by default",
    )


@lru_cache(maxsize=1)
def get_settings() -> SharedSettings:
    """The shared settings of this process, read once from the environment (a worker's settings)."""
    return SharedSettings()
