"""Commands that run the platform's services on this machine: ``up`` (the embedded platform), ``api``,
``worker``, ``migrate``, ``user``, ``token``. They read the settings (REASONLAB_*); the API's commands
import ``backend``, the worker's ``worker``, each lazily.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli import client

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
@click.option(
    "--stop-timeout",
    default=60.0,
    show_default=True,
    type=float,
    help="seconds the workers get at Ctrl-C to checkpoint and give their runs back before they are killed",
)
def up(home: str | None, port: int, host: str, n_workers: int, stop_timeout: float) -> None:
    """Migrate, create the admin on first start, start the API and a worker; Ctrl-C stops both.

    Stopping goes in order: the workers first (SIGTERM: a running job checkpoints and gives its run back
    through the API, so it resumes later without using up an attempt), then, once they are gone or after
    ``--stop-timeout``, the API. The services run in process groups of their own, so a Ctrl-C in the
    terminal reaches this command only and not the API at the same time; a second Ctrl-C kills the workers
    at once.
    """
    from backend.bootstrap import ensure_admin, ensure_worker_token, migrate

    home_dir = Path(home or os.environ.get("REASONLAB_HOME", ".reasonlab")).resolve()
    home_dir.mkdir(parents=True, exist_ok=True)
    api_url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"
    env = {**os.environ, "REASONLAB_HOME": str(home_dir), "REASONLAB_API_URL": api_url}
    os.environ.update(env)
    settings = _settings(str(home_dir))
    migrate(settings)
    # the home tells the CLI where its server is (cli/client.py reads it when no URL is given)
    (home_dir / client.API_URL_FILE).write_text(api_url + "\n")
    creds = ensure_admin(settings)
    env["REASONLAB_WORKER_TOKEN"] = ensure_worker_token(settings)
    if creds is not None:
        click.echo("First start: created the admin account (shown once).")
        click.echo(f"  login:     {creds.username}")
        click.echo(f"  password:  {creds.password}")
        click.echo(f"  API token: {creds.token}")
        click.echo(f"  (the token is also in {home_dir / 'admin.token'}, mode 600)")
    python = sys.executable
    # process_group=0: each service in a group of its own, out of the terminal's foreground group
    api_proc = subprocess.Popen(
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
        process_group=0,
    )
    workers = [
        subprocess.Popen(
            [python, "-m", "cli.main", "worker", "--hostname", f"embedded{i}@%h"], env=env, process_group=0
        )
        for i in range(n_workers)
    ]
    signals = 0

    def _stop(*_: Any) -> None:
        nonlocal signals
        signals += 1

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    try:
        if _wait_healthy(api_url, api_proc, stop=lambda: signals > 0):
            click.echo(f"ReasonLab is up: {api_url}  (API {api_url}/api/v1, docs {api_url}/api/v1/docs)")
        elif not signals:
            signals = 1
            click.echo("the API did not start; see the messages above", err=True)
        while not signals and all(p.poll() is None for p in (api_proc, *workers)):
            time.sleep(0.5)
        click.echo("stopping ReasonLab: the workers give their runs back first (Ctrl-C again: kill them)...")
        seen = signals
        _stop_all(workers, stop_timeout, force=lambda: signals > seen)
        _stop_all([api_proc], 20.0)
    finally:  # an error above must not leave the services running in their own groups
        for p in (*workers, api_proc):
            if p.poll() is None:
                _kill_group(p)
    click.echo("stopped.")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a service and what it started (a worker's job process): its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _stop_all(
    procs: list[subprocess.Popen[bytes]], timeout: float, force: Callable[[], bool] = lambda: False
) -> None:
    """SIGTERM each of ``procs`` (a Celery worker: warm shutdown; uvicorn: graceful), wait for them to exit
    for up to ``timeout`` seconds (less if ``force()`` becomes true), then kill what is left."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline and not force():
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            click.echo(f"process {p.pid} did not stop in time: killed", err=True)
            _kill_group(p)


def _wait_healthy(
    api_url: str,
    proc: subprocess.Popen[bytes],
    timeout: float = 60.0,
    stop: Callable[[], bool] = lambda: False,
) -> bool:
    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None and not stop():
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


NO_SUCH_RUN = 2_147_483_647  # the largest run id the API accepts (backend.deps.MAX_ID)


@click.command()
@click.option(
    "--queue", "queues", multiple=True, type=click.Choice(["cpu", "gpu"]), help="queues (default both)"
)
@click.option("--hostname", default=None, help="Celery node name")
@click.option("--loglevel", default="INFO", show_default=True)
def worker(queues: tuple[str, ...], hostname: str | None, loglevel: str) -> None:
    """Run a Celery worker: one job slot, a fresh process per run."""
    from worker.celery_app import app, worker_argv
    from worker.client import ApiUnavailable, Forbidden, NotFound, ReasonLabClient, Unauthorized
    from worker.executor import worker_token

    settings = _worker_settings()
    try:  # a mistyped token would otherwise take runs off the queue only to be refused at claim
        with ReasonLabClient(settings.api_url, worker_token(settings), timeout=10) as client:
            # a route the worker token may call (reading a run): a run that cannot exist answers 404
            # once the token is accepted, 401 when it is not
            client.get_run(NO_SUCH_RUN)
    except NotFound:
        pass
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
    """Create USERNAME with a role in a project (the API's username and password policy applies)."""
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
