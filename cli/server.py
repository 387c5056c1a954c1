"""Commands that run the platform's services on this machine: ``up`` (the embedded platform), ``api``,
``worker``, ``migrate``, ``user``, ``token``. They read the settings (REASONLAB_*); the API's commands
import ``backend``, the worker's ``worker``, each lazily.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cli import client
from cli.mlflow_port import mlflow_ui_port, next_free_port, port_free

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


LOG_DIR = "logs"


@click.command()
@click.option("--home", default=None, help="home folder of the embedded mode (default ./.reasonlab)")
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option(
    "--workers",
    "n_workers",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="worker processes (0: the API alone, for workers on other hosts)",
)
@click.option(
    "--stop-timeout",
    default=60.0,
    show_default=True,
    type=float,
    help="seconds the workers get at Ctrl-C to checkpoint and give their runs back before they are killed",
)
@click.option(
    "--mlflow-ui/--no-mlflow-ui",
    default=True,
    show_default=True,
    help="serve MLflow's UI on the embedded MLflow store (the dashboard's 'Open in MLflow' links to it)",
)
@click.option(
    "--mlflow-port",
    default=None,
    type=int,
    envvar="REASONLAB_MLFLOW_PORT",
    help="port of MLflow's UI (or REASONLAB_MLFLOW_PORT; refused when taken); default: the previous "
    "start's, else 5000, and when that is taken the next free port above it",
)
def up(
    home: str | None,
    port: int,
    host: str,
    n_workers: int,
    stop_timeout: float,
    mlflow_ui: bool,
    mlflow_port: int | None,
) -> None:
    """Migrate, create the admin on first start, start the API, a worker and MLflow's UI; Ctrl-C stops all.

    The workers start once the API answers its health check (a worker checks its token with the API as it
    starts); an API that does not start within a minute stops everything.

    The terminal gets a short banner (URL, login, token file, where the logs are); what the services
    print (Celery's banner, uvicorn's access log, MLflow's notices) goes to HOME/logs/ (api.log,
    worker-N.log, mlflow.log).

    Stopping goes in order: the workers first (SIGTERM: a running job checkpoints and gives its run back
    through the API, so it resumes later without using up an attempt), then, once they are gone or after
    ``--stop-timeout``, the API and MLflow's UI. The services run in process groups of their own, so a
    Ctrl-C in the terminal reaches this command only and not the API at the same time; a second Ctrl-C
    kills the workers at once.
    """
    # a taken port is the likeliest first trip (8000 is everyone's default): said before anything starts
    _refuse_taken_port(host, port, "PORT", "--port", "the API")
    if mlflow_port is not None and mlflow_ui:
        _refuse_taken_port(host, mlflow_port, "MLFLOW_PORT", "--mlflow-port", "MLflow's UI")
    home_dir = Path(home or os.environ.get("REASONLAB_HOME", ".reasonlab")).resolve()
    home_dir.mkdir(parents=True, exist_ok=True)
    logs = home_dir / LOG_DIR
    logs.mkdir(exist_ok=True)
    with _quiet_startup(logs / "up.log"):
        from backend.bootstrap import ensure_admin, ensure_worker_token, migrate

        public_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        api_url = f"http://{public_host}:{port}"
        # the API answers this nonce on /health: the health check below knows it reached its own API and
        # not another server that took the port between the check above and the API's bind
        nonce = secrets.token_hex(16)
        env = {
            **os.environ,
            "REASONLAB_HOME": str(home_dir),
            "REASONLAB_API_URL": api_url,
            "REASONLAB_START_NONCE": nonce,
        }
        os.environ.update(env)
        settings = _settings(str(home_dir))
        migrate(settings)
        # the home tells the CLI where its server is (cli/client.py reads it when no URL is given)
        (home_dir / client.API_URL_FILE).write_text(api_url + "\n")
        creds = ensure_admin(settings)
        env["REASONLAB_WORKER_TOKEN"] = ensure_worker_token(settings)
    python = sys.executable

    def start(name: str, argv: list[str], **extra_env: str) -> subprocess.Popen[bytes]:
        # process_group=0: each service in a group of its own, out of the terminal's foreground group
        with (logs / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                argv,
                env={**env, **extra_env},
                process_group=0,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    mlflow_url, mlflow_note = settings.mlflow_ui, ""
    mlflow_procs: list[subprocess.Popen[bytes]] = []
    if mlflow_url is None and mlflow_ui and settings.mlflow_tracking_uri.startswith("sqlite:"):
        ui_port, mlflow_note = mlflow_ui_port(host, home_dir, mlflow_port)  # the same at every start
        mlflow_url = f"http://{public_host}:{ui_port}"
        # without its job runner: eight more processes (huey consumers) for features a UI does not need
        mlflow_procs.append(
            start(
                "mlflow",
                _mlflow_argv(python, settings.mlflow_tracking_uri, host, ui_port),
                MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
            )
        )
        env["REASONLAB_MLFLOW_UI_URL"] = mlflow_url
    elif mlflow_url is None:
        env["REASONLAB_MLFLOW_UI_URL"] = "none"
    api_proc = start("api", api_argv(python, host, port, settings))
    workers: list[subprocess.Popen[bytes]] = []
    signals = 0

    def _stop(*_: Any) -> None:
        nonlocal signals
        signals += 1

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    failed = False
    try:
        if _wait_healthy(api_url, api_proc, stop=lambda: signals > 0, nonce=nonce):
            # the workers once the API answers: their start-up check of the token reaches it (started
            # beside it, they found it not listening yet and could only warn and start unchecked)
            workers = [
                start(f"worker-{i}", [python, "-m", "cli.main", "worker", "--hostname", f"embedded{i}@%h"])
                for i in range(n_workers)
            ]
            _banner(api_url, home_dir, logs, creds, mlflow_url, mlflow_note, n_workers)
        elif not signals:
            signals, failed = 1, True
            click.echo(_why_api_did_not_start(api_proc, logs / "api.log", host, port), err=True)
        starting = {i: time.monotonic() for i in range(len(workers))}

        def _say_ready() -> None:
            for i in [i for i in starting if _worker_ready(logs / f"worker-{i}.log")]:
                click.echo(
                    f"worker-{i} is ready ({time.monotonic() - starting.pop(i):.0f} s): runs start now"
                )

        while not signals and all(p.poll() is None for p in (api_proc, *workers)):
            time.sleep(0.5)
            _say_ready()
        _say_ready()  # a worker that got ready just before the stop is said so too
        for name, p in (("api", api_proc), *((f"worker-{i}", w) for i, w in enumerate(workers))):
            if not signals and p.poll() is not None:
                failed = True
                click.echo(f"{name} exited ({p.returncode}); see {logs / (name + '.log')}", err=True)
        click.echo("stopping ReasonLab: the workers give their runs back first (Ctrl-C again: kill them)...")
        seen = signals
        # MLflow's UI at once, beside the workers: nothing goes through it (the API's mirror writes the store
        # itself); the API last, since the workers give their runs back through it
        named = [(f"worker-{i}", w) for i, w in enumerate(workers)] + [("mlflow-ui", p) for p in mlflow_procs]
        _stop_all(named, stop_timeout, force=lambda: signals > seen)
        _stop_all([("api", api_proc)], API_STOP_SECONDS + 5.0)
    finally:  # an error above must not leave the services running in their own groups
        for p in (*workers, api_proc, *mlflow_procs):
            if p.poll() is None:
                _kill_group(p)
    click.echo("stopped.")
    if failed:  # a script or `make up` must see that the platform did not run
        raise SystemExit(1)


def _worker_ready(log: Path) -> bool:
    """Whether a worker's log says Celery's ``<name> ready.`` (it takes runs from then on)."""
    try:
        return " ready." in log.read_text(errors="replace")
    except OSError:
        return False


def _refuse_taken_port(host: str, port: int, make_var: str, flag: str, what: str) -> None:
    """A clear refusal, before any banner, when ``port`` is not free on ``host`` (exit 1)."""
    if port_free(host, port):
        return
    other = next_free_port(host, port + 1)
    raise click.ClickException(
        f"port {port} is in use (for {what}): make up {make_var}={other}, or reasonlab up {flag} {other}"
    )


def _why_api_did_not_start(proc: subprocess.Popen[bytes], log: Path, host: str, port: int) -> str:
    """The one line a user needs when the API never answered its health check."""
    try:
        tail = log.read_text(errors="replace")[-4000:]
    except OSError:
        tail = ""
    if "address already in use" in tail.lower() or proc.poll() is None:
        # exited on its bind, or alive while another server answers the health check on its port
        other = next_free_port(host, port + 1)
        return (
            f"port {port} is in use by another server: make up PORT={other}, or reasonlab up --port {other}"
            f" (see {log})"
        )
    return f"the API did not start; see {log}"


def _banner(
    api_url: str,
    home: Path,
    logs: Path,
    creds: Any,
    mlflow_url: str | None,
    mlflow_note: str,
    n_workers: int,
) -> None:
    """What a user needs to start, and nothing else: where, who, the token file, the logs."""
    token_file = home / "admin.token"
    click.echo(f"ReasonLab is up: {api_url}")
    if creds is not None:
        click.echo("  First start: the admin account (the password is shown this once)")
        click.echo(f"  login:     {creds.username}")
        click.echo(f"  password:  {creds.password}")
    else:
        click.echo(
            "  login:     the accounts of this home (the admin's password was shown at its first start)"
        )
    click.echo(f"  API token: {token_file} (mode 600)")
    click.echo(f"  API docs:  {api_url}/api/v1/docs")
    click.echo(
        f"  MLflow UI: {mlflow_url or 'none (reasonlab up --mlflow-ui, or REASONLAB_MLFLOW_UI_URL)'}{mlflow_note}"
    )
    click.echo(
        f"  workers:   {n_workers}"
        + (" (starting: a line below says when each is ready)" if n_workers else "")
    )
    click.echo(f"  logs:      {logs}/ (api.log, worker-N.log, mlflow.log)")
    click.echo("Ctrl-C stops ReasonLab.")


@contextlib.contextmanager
def _quiet_startup(log_file: Path) -> Iterator[None]:
    """Python logging of this process (alembic's INFO lines of the migrations, MLflow's notices) goes to
    ``log_file``, not the terminal: the banner is the terminal's only news."""
    import logging

    root = logging.getLogger()
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    yield


def _mlflow_argv(python: str, tracking_uri: str, host: str, port: int) -> list[str]:
    """MLflow's own server on the embedded store: its UI (and REST API) for the browser. Runs' artifacts
    stay where the workers wrote them (file URIs the server reads), so it serves no artifact store."""
    return [
        python,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        tracking_uri,
        "--no-serve-artifacts",
        "--host",
        host,
        "--port",
        str(port),
        "--workers",
        "1",
    ]


# uvicorn's graceful shutdown waits for open connections: a dashboard's event streams (server-sent events)
# never close by themselves, so they are cut after this many seconds instead of holding Ctrl-C up
API_STOP_SECONDS = 3.0


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL a service and what it started (a worker's job process): its whole process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _stop_all(
    procs: list[tuple[str, subprocess.Popen[bytes]]],
    timeout: float,
    force: Callable[[], bool] = lambda: False,
) -> None:
    """SIGTERM each of the named ``procs`` (a Celery worker: warm shutdown; uvicorn: graceful), say each
    one's stop as it happens, wait for them for up to ``timeout`` seconds (less if ``force()`` becomes
    true), then kill what is left."""
    start = time.monotonic()
    for _, p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    waiting = dict(procs)
    deadline = start + timeout
    while waiting and time.monotonic() < deadline and not force():
        for name, p in list(waiting.items()):
            if p.poll() is not None:
                click.echo(f"  {name} stopped ({time.monotonic() - start:.1f} s)")
                del waiting[name]
        time.sleep(0.05)
    for name, p in waiting.items():
        if p.poll() is None:
            click.echo(f"  {name} (process {p.pid}) did not stop in time: killed", err=True)
            _kill_group(p)
        else:
            click.echo(f"  {name} stopped ({time.monotonic() - start:.1f} s)")


def _wait_healthy(
    api_url: str,
    proc: subprocess.Popen[bytes],
    timeout: float = 60.0,
    stop: Callable[[], bool] = lambda: False,
    nonce: str | None = None,
) -> bool:
    """True once the API at ``api_url`` answers its health check, and answers it with ``nonce`` (the one
    ``proc`` was started with) when given: another server on the port is not ours. False when ``proc``
    exits, ``stop()`` turns true or ``timeout`` passes."""
    import httpx

    from backend.health.routes import START_HEADER

    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None and not stop():
        try:
            r = httpx.get(f"{api_url}/api/v1/health", timeout=2)
            if r.status_code == 200 and (nonce is None or r.headers.get(START_HEADER) == nonce):
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    return False


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """Uvicorn's options that the settings decide (``reasonlab api``; ``reasonlab up`` passes the same as
    command-line flags, ``api_argv``).

    Whose ``X-Forwarded-For``/``-Proto`` uvicorn believes: the addresses in REASONLAB_TRUSTED_PROXIES,
    and no one when it is empty (the default). Left to itself uvicorn believes 127.0.0.1 and ::1 (or
    $FORWARDED_ALLOW_IPS), so any local process, or a proxy on the host that passes the client's header
    on, could name any client address and get a fresh login-throttle count for each.

    Uvicorn has no deadline for a request's headers; the body's is the API's own
    (REASONLAB_REQUEST_BODY_TIMEOUT, backend/http/limits.py). In a deployment the reverse proxy bounds the
    headers (docs/operations.md, "Reverse proxy and slow clients").
    """
    trusted = list(settings.trusted_proxies)
    if not trusted:
        return {"proxy_headers": False, "forwarded_allow_ips": ""}
    return {"proxy_headers": True, "forwarded_allow_ips": ",".join(trusted)}


def api_argv(python: str, host: str, port: int, settings: Settings) -> list[str]:
    """``python -m uvicorn ...`` for the API with ``uvicorn_options`` as flags."""
    options = uvicorn_options(settings)
    proxy = (
        ["--proxy-headers", "--forwarded-allow-ips", options["forwarded_allow_ips"]]
        if options["proxy_headers"]
        else ["--no-proxy-headers"]
    )
    return [
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
        "info",
        "--timeout-graceful-shutdown",
        str(int(API_STOP_SECONDS)),
        *proxy,
    ]


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--migrate/--no-migrate", "do_migrate", default=True, show_default=True)
def api(host: str, port: int, do_migrate: bool) -> None:
    """Run the API service (with the dispatcher and reaper loops). It believes X-Forwarded-For only from
    REASONLAB_TRUSTED_PROXIES (none by default)."""
    import uvicorn

    from backend.bootstrap import migrate

    settings = _settings()
    if do_migrate:
        migrate(settings)
    uvicorn.run(
        "backend.main:create_app",
        factory=True,
        host=host,
        port=port,
        log_level="info",
        **uvicorn_options(settings),
    )


NO_SUCH_RUN = 2_147_483_647  # the largest run id the API accepts (backend.http.deps.MAX_ID)


@click.command()
@click.option(
    "--queue", "queues", multiple=True, type=click.Choice(["cpu", "gpu"]), help="queues (default both)"
)
@click.option("--hostname", default=None, help="Celery node name")
@click.option("--loglevel", default="INFO", show_default=True)
def worker(queues: tuple[str, ...], hostname: str | None, loglevel: str) -> None:
    """Run a Celery worker: one job slot, a fresh process per run."""
    from worker.runtime.environment import sealed_start

    # Runs are forks of this process: first re-execute with an allow-listed environment, credentials in
    # memory only (worker/runtime/environment.py), so no run finds a credential in its environment.
    sealed_start(["-c", "from cli.main import main; main()", *sys.argv[1:]])

    from reasonlab_sdk.client import ApiUnavailable, Forbidden, NotFound, ReasonLabClient, Unauthorized
    from worker.celery_app import app, worker_argv
    from worker.executor import worker_token

    settings = _worker_settings()
    try:  # a mistyped token would otherwise take runs off the queue only to be refused at claim
        with ReasonLabClient(settings.api_url, worker_token(settings), timeout=10) as client:
            # the one route the worker token may call: a run that cannot exist answers 404 once the token
            # is accepted, 401 when it is not
            client.claim(NO_SUCH_RUN, None, "token-check")
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
    from backend.auth.security import use_settings_cost
    from backend.bootstrap import migrate, session_for
    from backend.errors import ApiError
    from backend.projects import service

    settings = _settings()
    migrate(settings)
    use_settings_cost(settings)
    with session_for(settings) as session:
        try:
            service.create_member(session, username, password, is_admin=admin, project=project, role=role)
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
