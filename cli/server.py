"""Commands that run the platform's services on this machine: ``up`` (the embedded platform), ``api``,
``worker``, ``migrate``, ``user``, ``token``. They read the settings (REASONLAB_*); the API's commands
import ``backend``, the worker's ``worker``, each lazily.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from backend.settings import Settings
    from common.settings import SharedSettings


def _settings(home: str | None = None) -> Settings:
    """The API's settings (REASONLAB_*; ``home`` overrides REASONLAB_HOME); bad values are a message."""
    from backend.settings import Settings

    try:
        return Settings(home=Path(home)) if home else Settings()
    except ValueError as exc:
        raise click.ClickException(f"bad settings: {exc}") from exc


def _worker_settings() -> SharedSettings:
    """A worker's settings: only what the API and the workers share (a worker host needs no backend)."""
    from common.settings import SharedSettings

    try:
        return SharedSettings()
    except ValueError as exc:
        raise click.ClickException(f"bad settings: {exc}") from exc


@click.command()
@click.option("--home", default=None, help="home folder of the embedded mode (default ./.reasonlab)")
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--workers", "n_workers", default=1, show_default=True, type=int, help="worker processes")
def up(home: str | None, port: int, host: str, n_workers: int) -> None:
    """Migrate, create the admin on first start, start the API and a worker; Ctrl-C stops both."""
    from backend.bootstrap import ensure_admin, ensure_worker_token, migrate

    home_dir = Path(home or os.environ.get("REASONLAB_HOME", ".reasonlab")).resolve()
    home_dir.mkdir(parents=True, exist_ok=True)
    api_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    env = {**os.environ, "REASONLAB_HOME": str(home_dir), "REASONLAB_API_URL": api_url}
    os.environ.update(env)
    settings = _settings(str(home_dir))
    migrate(settings)
    creds = ensure_admin(settings)
    env["REASONLAB_WORKER_TOKEN"] = ensure_worker_token(settings)
    if creds is not None:
        click.echo("First start: created the admin account (shown once).")
        click.echo(f"  login:     {creds.username}")
        click.echo(f"  password:  {creds.password}")
        click.echo(f"  API token: {creds.token}")
        click.echo(f"  (the token is also in {home_dir / 'admin.token'}, mode 600)")
    python = sys.executable
    procs: list[subprocess.Popen[bytes]] = [
        subprocess.Popen(
            [
                python,
                "-m",
                "uvicorn",
                "backend.main:create_app",
                "--factory",
                "--host",
                host,
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=env,
        )
    ]
    for i in range(n_workers):
        procs.append(
            subprocess.Popen([python, "-m", "cli.main", "worker", "--hostname", f"embedded{i}@%h"], env=env)
        )
    stopping = False

    def _stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    if _wait_healthy(api_url, procs[0]):
        click.echo(f"ReasonLab is up: {api_url}  (API {api_url}/api/v1, docs {api_url}/api/v1/docs)")
    else:
        stopping = True
        click.echo("the API did not start; see the messages above", err=True)
    while not stopping and all(p.poll() is None for p in procs):
        time.sleep(0.5)
    click.echo("stopping ReasonLab...")
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.time() + 20
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
    click.echo("stopped.")


def _wait_healthy(api_url: str, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> bool:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{api_url}/api/v1/health", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--migrate/--no-migrate", "do_migrate", default=True, show_default=True)
def api(host: str, port: int, do_migrate: bool) -> None:
    """Run the API service (with the dispatcher and reaper loops)."""
    import uvicorn

    from backend.bootstrap import migrate

    settings = _settings()
    if do_migrate:
        migrate(settings)
    uvicorn.run("backend.main:create_app", factory=True, host=host, port=port, log_level="info")


@click.command()
@click.option(
    "--queue", "queues", multiple=True, type=click.Choice(["cpu", "gpu"]), help="queues (default both)"
)
@click.option("--hostname", default=None, help="Celery node name")
@click.option("--loglevel", default="INFO", show_default=True)
def worker(queues: tuple[str, ...], hostname: str | None, loglevel: str) -> None:
    """Run a Celery worker: one job slot, a fresh process per run."""
    from worker.celery_app import app, worker_argv
    from worker.client import ApiUnavailable, Forbidden, ReasonLabClient, Unauthorized
    from worker.executor import worker_token

    settings = _worker_settings()
    try:  # a mistyped token would otherwise take runs off the queue only to be refused at claim
        with ReasonLabClient(settings.api_url, worker_token(settings), timeout=10) as client:
            client.list_runs(limit=1)
    except (Unauthorized, Forbidden) as exc:
        raise click.ClickException(
            f"the API at {settings.api_url} refuses this worker's token (REASONLAB_WORKER_TOKEN): {exc}"
        ) from exc
    except ApiUnavailable as exc:
        click.echo(
            f"warning: the API at {settings.api_url} is not reachable yet ({exc}); starting anyway", err=True
        )

    app.worker_main(worker_argv(list(queues) or None, loglevel=loglevel, hostname=hostname))


@click.command("migrate")
def migrate_cmd() -> None:
    """Bring the database to the latest migration."""
    from backend.bootstrap import migrate

    settings = _settings()
    migrate(settings)
    click.echo(f"database at head: {settings.database_url.split('@')[-1]}")


@click.group()
def user() -> None:
    """Manage users (server side: talks to the database)."""


@user.command("create")
@click.argument("username")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@click.option("--admin", is_flag=True, help="site admin")
@click.option("--project", default="default", show_default=True)
@click.option("--role", type=click.Choice(["viewer", "member", "admin"]), default="member", show_default=True)
def user_create(username: str, password: str, admin: bool, project: str, role: str) -> None:
    from backend.auth import service
    from backend.bootstrap import migrate, session_for
    from backend.errors import ApiError

    settings = _settings()
    migrate(settings)
    with session_for(settings) as session:
        try:
            service.create_user(session, username, password, is_admin=admin, project=project, role=role)
        except ApiError as exc:
            raise click.ClickException(exc.detail) from exc
        session.commit()
    click.echo(f"created user {username} ({'site admin' if admin else role} in {project})")


@click.group()
def token() -> None:
    """Manage API tokens (server side)."""


@token.command("create")
@click.argument("username")
@click.option("--name", default="cli", show_default=True)
def token_create(username: str, name: str) -> None:
    """Create an API token for USERNAME and print it (shown once)."""
    from backend.auth import repository, service
    from backend.bootstrap import session_for

    with session_for(_settings()) as session:
        u = repository.user_by_name(session, username)
        if u is None:
            raise click.ClickException(f"no user {username!r}")
        _, raw = service.create_token(session, u, name)
        session.commit()
    click.echo(raw)


COMMANDS: tuple[click.Command, ...] = (up, api, worker, migrate_cmd, user, token)
