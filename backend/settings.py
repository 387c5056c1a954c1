"""ReasonLab's API settings: ``common.settings.SharedSettings`` (what the workers need too) plus the
fields only the API uses; environment prefix ``REASONLAB_``.

Embedded mode (the default) keeps everything under one home folder (``./.reasonlab``): a SQLite database,
Celery's filesystem broker, MLflow's sqlite store and the artifact root. Server mode (compose, scale-out)
points the URLs at Postgres, Redis and an MLflow server and refuses placeholder secrets.
"""

from __future__ import annotations

import os
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator
from pydantic_settings import NoDecode

from common.settings import PLACEHOLDER_SECRETS, SharedSettings, is_weak_secret

__all__ = ["PLACEHOLDER_SECRETS", "Settings", "get_settings"]


class Settings(SharedSettings):
    database_url: str = Field("", description="default: sqlite under home")
    secret_key: str = Field("reasonlab-embedded-secret", description="JWT signing key")
    jwt_ttl_seconds: int = 12 * 3600
    start_nonce: str = Field(
        "",
        max_length=64,
        description="set by `reasonlab up` for the API it starts: /health answers it in the "
        "X-ReasonLab-Start header, so `up` knows the server on its port is its own and not another one",
    )
    secrets_key: str = Field(
        "",
        description="the key project secrets are sealed with (32 bytes, urlsafe base64; `reasonlab secrets "
        "keygen`); default: derived from secret_key. Only the API holds it, never a worker",
    )
    run_token_ttl_seconds: int = Field(
        30 * 24 * 3600,
        ge=60,
        description="the longest a run token lives; it dies sooner, with its attempt (finish, release, reap)",
    )
    login_failures_per_account: int = Field(5, ge=1, description="failed logins per account per window")
    login_failures_per_address: int = Field(
        30, ge=1, description="failed logins per client address per window"
    )
    login_window_seconds: float = Field(300.0, gt=0, description="the login throttle's sliding window")
    login_hash_slots: int = Field(2, ge=1, description="password verifications at once (argon2 CPU)")
    # argon2id's cost for new password hashes; the defaults are argon2-cffi's (RFC 9106's second,
    # low-memory choice). A login verifies against the cost stored in its hash, and a successful login
    # under another cost rehashes the password at this one, so raising or lowering it takes effect user by
    # user without a reset
    password_hash_time_cost: int = Field(3, ge=1, le=64, description="argon2id passes over memory")
    password_hash_memory_kib: int = Field(
        65536, ge=64, le=4 * 1024 * 1024, description="argon2id memory per hash, KiB (64 MiB by default)"
    )
    password_hash_parallelism: int = Field(4, ge=1, le=64, description="argon2id lanes (threads) per hash")
    statement_timeout_ms: int = Field(
        5000,
        ge=0,
        description="Postgres: milliseconds any one SQL statement of a request may run before the database "
        "cancels it (a 503 saying the request was too costly); 0: no limit. The background loops (the "
        "dispatcher, the mirror, index builds) are not limited",
    )
    max_requests_in_flight: int = Field(
        20,
        ge=1,
        le=10_000,
        description="API requests one process serves at once (event streams aside); keep it below the "
        "database connection pool (30), or a burst holds every connection while waiting for threads",
    )

    reaper_interval: float = Field(5.0, gt=0)
    dispatch_interval: float = Field(1.0, gt=0, description="outbox poll period")
    redispatch_after: float = Field(
        6 * 3600.0,
        gt=0,
        description="a run still queued this long after it was sent is sent again (a lost broker message); "
        "the claim refuses the duplicate",
    )
    default_max_attempts: int = Field(3, ge=1)
    max_metric_batch: int = 10_000
    max_runs_per_experiment: int = 10_000
    run_background_loops: bool = Field(
        True, description="dispatcher, reaper and MLflow mirror inside the API process"
    )
    # Indexes the API builds itself for a slow params sort or filter (Postgres; backend/query/autoindex.py)
    auto_index_max: int = Field(
        8,
        ge=0,
        description="indexes the API may build on first use for params.<path> sorts and filters (Postgres),"
        " at most; the least recently used is dropped for a new one; 0: none",
    )
    auto_index_after_ms: float = Field(
        150.0, ge=0, description="a list request's SQL slower than this may build its params path's index"
    )
    auto_index_min_rows: int = Field(
        20_000,
        ge=0,
        description="... and only when its table holds at least this many rows (the planner's estimate)",
    )
    # The whole project's seed groups from a stored summary of its ended runs (backend/groups/summary.py)
    group_summary_after_ms: float = Field(
        150.0,
        ge=0,
        description="a whole project's default-grouped request (no other filter) answered without a valid"
        " summary and slower than this builds the project's summary in the background",
    )
    group_summary_margin_s: float = Field(
        300.0,
        ge=0,
        description="a summary covers the runs that ended this long before its build started (a finish"
        " committing late is not missed)",
    )
    group_summary_max_open: int = Field(
        2_000,
        ge=0,
        description="a summary is rebuilt (in the background; it still answers) once more than this many"
        " ended runs are outside it",
    )
    group_summary_max_age_s: float = Field(
        900.0, ge=0, description="... or once it is older than this (seconds)"
    )
    # The MLflow mirror (backend/mirror/): the API copies every run from the database into MLflow; workers
    # never talk to MLflow.
    mlflow_tracking_uri: str = Field("", description="default: sqlite MLflow store under home")
    mlflow_ui_url: str = Field(
        "",
        description="where a browser opens MLflow's UI (the dashboard's 'Open in MLflow'); default: the "
        "tracking URI when it is an http(s) server, else none; 'none' hides the link",
    )
    mlflow_mirror: bool = Field(True, description="mirror runs to MLflow (with the background loops)")
    mlflow_run_timeout: float = Field(
        6 * 3600.0,
        gt=0,
        description="a run MLflow's own client drives (the MLflow-compatible routes) is failed as crashed "
        "after this many seconds without a call that writes to it: MLflow's client sends no heartbeats, "
        "and a training loop may log rarely (docs/tracking.md, MLflow's client)",
    )
    mirror_interval: float = Field(1.0, gt=0, description="seconds between the mirror's rounds")
    mirror_batch: int = Field(10_000, ge=1, description="metric points the mirror sends a round, at most")
    mirror_runs_per_tick: int = Field(50, ge=1, description="runs the mirror serves a round, at most")
    static_dir: Path | None = Field(None, description="built dashboard to serve at /")
    artifact_url: str = Field(
        "",
        description="where runs' checkpoints, outputs and final models are kept: an fsspec URL (file://, "
        "s3://, gs://, ...) only the API opens; workers stream through the API's artifact routes. "
        "Default: file://<artifact_root>/store",
    )
    dataset_max_bytes: int = Field(
        2 * 1024**3,
        ge=1,
        description="the largest data file a member may upload to a project (PUT /projects/{id}/datasets/"
        "{name}); a larger one is a 413",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="origins (comma-separated) whose browser pages may call the API; empty: same origin only",
    )

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _split_origins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [o.strip().rstrip("/") for o in value.split(",") if o.strip()]
        return value

    @model_validator(mode="after")
    def _resolve_api_defaults(self) -> Settings:
        # runs after SharedSettings' validator: home is resolved, the worker token checked
        if not self.database_url:
            self.database_url = f"sqlite:///{self.home / 'reasonlab.db'}"
        if not self.mlflow_tracking_uri:
            self.mlflow_tracking_uri = f"sqlite:///{self.home / 'mlflow.db'}"
        if not self.artifact_url:
            self.artifact_url = (Path(self.artifact_root).expanduser().resolve() / "store").as_uri()
        if self.mode == "embedded" and self.secret_key in PLACEHOLDER_SECRETS:
            self.secret_key = _embedded_secret(self.home)
        if self.password_hash_memory_kib < 8 * self.password_hash_parallelism:
            raise ValueError(
                "password_hash_memory_kib: argon2 needs at least 8 KiB per lane "
                f"({8 * self.password_hash_parallelism} for password_hash_parallelism "
                f"{self.password_hash_parallelism})"
            )
        return self

    def require_api_secrets(self) -> None:
        """The API signs logins with ``secret_key``: in server mode it must be a real secret.
        (Workers never sign anything, so only the API process checks this.)"""
        if self.mode == "server" and is_weak_secret(self.secret_key):
            raise ValueError(
                "REASONLAB_SECRET_KEY is a placeholder or shorter than 16 characters: set a real secret in server mode"
            )

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

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

    # ---- The edge: slow clients, proxies and login throttling -------------------------------
    # docs/operations.md, "Reverse proxy and slow clients". The login throttle (backend/auth/throttle.py)
    # also reads three fields above: login_failures_per_account is now the failures an (account, client
    # address) pair makes before its delays start; login_failures_per_address and login_window_seconds
    # are one address's failures across all accounts and the window they are counted in.
    request_body_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="seconds of grace at the start of a request's body: from then on it must keep up "
        "request_body_min_rate; a body that falls behind is a 408 and the connection closed",
    )
    request_body_min_rate: int = Field(
        32 * 1024,
        ge=1,
        description="bytes a second every request body must average past request_body_timeout (counted "
        "while the API waits for it), over request_body_rate_window seconds",
    )
    request_body_rate_window: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="seconds the minimum rate is averaged over: a body ahead of its rate earns at most "
        "this much slack, so a client that sent fast and then stops is cut this long after",
    )
    max_requests_in_flight_per_principal: int = Field(
        8,
        ge=1,
        le=10_000,
        description="of the max_requests_in_flight admission slots, the most one credential (a user, an API "
        "token, a run) holds at once; its further requests wait for its own (the worker token aside)",
    )
    max_reads_in_flight: int = Field(
        20,
        ge=1,
        le=10_000,
        description="of the max_requests_in_flight admission slots, the most GET and HEAD requests hold at "
        "once (the health check aside); below max_requests_in_flight, the further reads wait their turn and "
        "writes pass them: a process serving both dashboards and the runs' metric posts favours the posts, "
        "at the dashboards' expense. At max_requests_in_flight or above (the default), no such bound",
    )
    max_uploads_in_flight: int = Field(
        16,
        ge=1,
        le=10_000,
        description="streamed uploads (artifacts, datasets) one API process receives at once; another is a "
        "503 with Retry-After, its body unread",
    )
    max_uploads_per_principal: int = Field(
        4,
        ge=1,
        le=10_000,
        description="streamed uploads one credential sends at once; another is a 429 with Retry-After",
    )
    max_buffered_bytes: int = Field(
        256 * 1024 * 1024,
        ge=64 * 1024,
        description="bytes of request bodies (all but the streamed uploads) one API process holds at once, "
        "counted from each body's Content-Length (or as a chunked one arrives) until its answer; a body "
        "that would pass it is a 503 with Retry-After",
    )
    max_buffered_bytes_per_principal: int = Field(
        64 * 1024 * 1024,
        ge=64 * 1024,
        description="of max_buffered_bytes, the most one credential's bodies hold at once (a 503 past it); "
        "a body larger than either cap can never be taken: a 413",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="addresses or networks (comma-separated) of the reverse proxies whose X-Forwarded-For "
        "and X-Forwarded-Proto the API believes; empty (the default): none, the client's address is the "
        "connection's peer",
    )
    login_backoff_seconds: float = Field(
        1.0, gt=0, description="an (account, address) pair's first delay past its free failures; doubles"
    )
    login_backoff_max_seconds: float = Field(
        900.0, gt=0, description="the longest delay of an (account, address) pair"
    )
    login_account_free_failures: int = Field(
        20,
        ge=1,
        description="failed logins at one account from addresses it has not logged in from, across all "
        "of them, before those addresses are slowed together (an address the account logged in from "
        "never is)",
    )
    login_account_backoff_max_seconds: float = Field(
        120.0, gt=0, description="the longest delay of the addresses slowed together at one account"
    )

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _parse_trusted_proxies(cls, value: Any) -> Any:
        import ipaddress

        items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
        if not isinstance(items, list):
            return value
        parsed = []
        for item in (str(v).strip() for v in items):
            if not item:
                continue
            try:  # an address stays an address, a network is normalised (10.0.0.1/8 -> 10.0.0.0/8)
                parsed.append(
                    str(ipaddress.ip_network(item, strict=False))
                    if "/" in item
                    else str(ipaddress.ip_address(item))
                )
            except ValueError:
                raise ValueError(
                    f"trusted_proxies: {item!r} is not an IP address or network (no host names, no '*')"
                ) from None
        return parsed


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
