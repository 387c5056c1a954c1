"""The ``reasonlab`` command.

Server-side commands (``up``, ``api``, ``migrate``, ``user``, ``token``) read the settings (REASONLAB_*);
client commands (``submit``, ``runs``) talk to the API with a URL and token from flags, the environment
(REASONLAB_API_URL, REASONLAB_TOKEN), the config file (~/.config/reasonlab/config.yaml: ``api_url``,
``token``) or, on the machine running ``reasonlab up``, the home folder's admin.token. ``run`` needs no
server. This is the only backend module that may import worker code, and only lazily.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

if TYPE_CHECKING:
    from worker.client import ReasonLabClient

F = TypeVar("F", bound=Callable[..., Any])
CONFIG_FILE = Path(os.environ.get("REASONLAB_CONFIG", "~/.config/reasonlab/config.yaml")).expanduser()


def _settings(home: str | None = None) -> Any:
    from backend.settings import Settings

    try:
        return Settings(home=Path(home)) if home else Settings()
    except ValueError as exc:
        raise click.ClickException(f"bad settings: {exc}") from exc


def friendly_errors(fn: F) -> F:
    """API and validation errors become a clear message and exit code 1, never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from worker.client import ApiError

        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            lines = [f"{exc.status or ''} {exc.detail}".strip()]
            for err in getattr(exc, "errors", None) or []:
                loc = ".".join(str(p) for p in err.get("loc", []))
                lines.append(f"  {loc}: {err.get('msg', '')}")
            raise click.ClickException("\n".join(lines)) from exc

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option("0.1.0", prog_name="reasonlab")
def main() -> None:
    """ReasonLab: experiments on compositional reasoning, from spec to reviewed results."""


# ----------------------------------------------------------------------------------------- server side


@main.command()
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
            subprocess.Popen(
                [python, "-m", "backend.cli", "worker", "--hostname", f"embedded{i}@%h"], env=env
            )
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


@main.command()
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


@main.command()
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

    settings = _settings()
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


@main.command("migrate")
def migrate_cmd() -> None:
    """Bring the database to the latest migration."""
    from backend.bootstrap import migrate

    settings = _settings()
    migrate(settings)
    click.echo(f"database at head: {settings.database_url.split('@')[-1]}")


@main.group()
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


@main.group()
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


# ---------------------------------------------------------------------------------------- client side


def _client(api_url: str | None, token: str | None) -> ReasonLabClient:
    from worker.client import ReasonLabClient

    config: dict[str, Any] = {}
    if CONFIG_FILE.is_file():
        config = yaml.safe_load(CONFIG_FILE.read_text()) or {}
    url = api_url or os.environ.get("REASONLAB_API_URL") or config.get("api_url") or "http://127.0.0.1:8000"
    tok = token or os.environ.get("REASONLAB_TOKEN") or config.get("token")
    if not tok:
        home_token = Path(os.environ.get("REASONLAB_HOME", ".reasonlab")) / "admin.token"
        if home_token.is_file():
            tok = home_token.read_text().strip()
    if not tok:
        raise click.ClickException(
            "no API token: pass --token, set REASONLAB_TOKEN, or put 'token:' in " + str(CONFIG_FILE)
        )
    return ReasonLabClient(url, tok)


def client_options(fn: F) -> F:
    fn = click.option("--token", default=None, help="API token (or REASONLAB_TOKEN)")(fn)
    fn = click.option("--api-url", default=None, help="API URL (or REASONLAB_API_URL)")(fn)
    return fn


def _load_yaml(path: str, what: str) -> Any:
    p = Path(path)
    if not p.is_file():
        raise click.ClickException(f"{what} {path!r} does not exist")
    try:
        return yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise click.ClickException(f"{what} {path!r} is not valid YAML: {exc}") from exc


def _experiment_file(path: str, name: str | None, kind: str | None) -> dict[str, Any]:
    """A spec file is either {name, kind, spec, sweep?, project?} or a bare spec with a ``kind``."""
    doc = _load_yaml(path, "spec file")
    if not isinstance(doc, dict):
        raise click.ClickException(f"spec file {path!r} must hold a mapping")
    if "spec" not in doc:
        doc = {"spec": {k: v for k, v in doc.items() if k != "kind"}, "kind": doc.get("kind")}
    doc["kind"] = kind or doc.get("kind")
    if not doc["kind"]:
        raise click.ClickException(f"spec file {path!r} names no kind: add 'kind:' or pass --kind")
    doc["name"] = name or doc.get("name") or Path(path).stem
    return doc


@main.command()
@click.argument("spec_file")
@click.option("--sweep", default=None, help="sweep as YAML/JSON file or inline JSON")
@click.option("--name", default=None)
@click.option("--kind", default=None)
@click.option("--project", default=None)
@click.option("--wait", is_flag=True, help="wait until every run has finished")
@client_options
@friendly_errors
def submit(
    spec_file: str,
    sweep: str | None,
    name: str | None,
    kind: str | None,
    project: str | None,
    wait: bool,
    api_url: str | None,
    token: str | None,
) -> None:
    """Submit SPEC_FILE as an experiment (with an optional sweep)."""
    doc = _experiment_file(spec_file, name, kind)
    if sweep:
        try:
            doc["sweep"] = _load_yaml(sweep, "sweep file") if Path(sweep).is_file() else json.loads(sweep)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"--sweep is neither a file nor valid JSON: {exc}") from exc
    with _client(api_url, token) as client:
        exp = client.create_experiment(
            doc["name"],
            doc["kind"],
            doc.get("spec") or {},
            doc.get("sweep"),
            project=project or doc.get("project"),
            description=doc.get("description"),
            tags=doc.get("tags"),
        )
        click.echo(f"experiment {exp['id']} ({exp['name']}): {len(exp['runs'])} run(s) queued")
        for r in exp["runs"][:20]:
            click.echo(f"  run {r['id']}  {json.dumps(r['params'])}")
        if wait:
            _wait_all(client, [r["id"] for r in exp["runs"]])


def _wait_all(client: ReasonLabClient, run_ids: list[int]) -> None:
    pending = set(run_ids)
    while pending:
        for rid in sorted(pending):
            r = client.get_run(rid)
            if r["status"] in ("succeeded", "failed", "cancelled"):
                click.echo(f"run {rid}: {r['status']}")
                pending.discard(rid)
        time.sleep(1.0)


@main.group()
def runs() -> None:
    """List, inspect, cancel and retry runs."""


@runs.command("list")
@click.option("--experiment", type=int, default=None)
@click.option("--status", default=None)
@click.option("--limit", default=50, show_default=True)
@client_options
@friendly_errors
def runs_list(
    experiment: int | None, status: str | None, limit: int, api_url: str | None, token: str | None
) -> None:
    with _client(api_url, token) as client:
        page = client.list_runs(experiment_id=experiment, status=status, limit=limit)
    click.echo(f"{'id':>6}  {'exp':>5}  {'kind':<14} {'status':<10} {'att':>3}  progress  params")
    for r in page["items"]:
        p = r["progress"]
        prog = f"{p['done']}/{p['total']}" if p["total"] else "-"
        click.echo(
            f"{r['id']:>6}  {r['experiment_id']:>5}  {r['kind']:<14} {r['status']:<10} {r['attempt']:>3}  "
            f"{prog:<8}  {json.dumps(r['params'])}"
        )


@runs.command("show")
@click.argument("run_id", type=int)
@client_options
@friendly_errors
def runs_show(run_id: int, api_url: str | None, token: str | None) -> None:
    with _client(api_url, token) as client:
        click.echo(json.dumps(client.get_run(run_id), indent=2))


@runs.command("cancel")
@click.argument("run_id", type=int)
@client_options
@friendly_errors
def runs_cancel(run_id: int, api_url: str | None, token: str | None) -> None:
    with _client(api_url, token) as client:
        r = client.cancel_run(run_id)
    click.echo(f"run {run_id}: {r['status']}{' (cancel requested)' if r['cancel_requested'] else ''}")


@runs.command("retry")
@click.argument("run_id", type=int)
@client_options
@friendly_errors
def runs_retry(run_id: int, api_url: str | None, token: str | None) -> None:
    with _client(api_url, token) as client:
        r = client.retry_run(run_id)
    click.echo(f"run {run_id}: {r['status']} (attempt {r['attempt']})")


@runs.command("logs")
@click.argument("run_id", type=int)
@click.option("--follow", "-f", is_flag=True, help="keep printing until the run finishes")
@client_options
@friendly_errors
def runs_logs(run_id: int, follow: bool, api_url: str | None, token: str | None) -> None:
    with _client(api_url, token) as client:
        after = 0
        while True:
            page = client.get_logs(run_id, after=after)
            for item in page["items"]:
                click.echo(item["line"])
            after = page["last_seq"]
            if not follow:
                return
            if not page["items"]:
                status = client.get_run(run_id)["status"]
                if status in ("succeeded", "failed", "cancelled"):
                    for item in client.get_logs(run_id, after=after)["items"]:  # lines flushed at the end
                        click.echo(item["line"])
                    click.echo(f"-- run {run_id} {status}")
                    return
                time.sleep(1.0)


@main.command()
@click.argument("spec_file")
@click.option("--kind", default=None)
@click.option("--out", "out_dir", default=None, help="output folder (default runs/<spec name>)")
@click.option(
    "--mlflow", "mlflow_uri", default=None, help="MLflow tracking URI (default: sqlite in the out folder)"
)
@click.option("--no-mlflow", is_flag=True)
def run(
    spec_file: str, kind: str | None, out_dir: str | None, mlflow_uri: str | None, no_mlflow: bool
) -> None:
    """Run SPEC_FILE here, without a server: tracking to local files and MLflow, with a progress bar."""
    from pydantic import ValidationError
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from worker.local import run_local

    doc = _experiment_file(spec_file, None, kind)
    out = Path(out_dir or Path("runs") / doc["name"]).resolve()
    uri = None if no_mlflow else (mlflow_uri or f"sqlite:///{out / 'mlflow.db'}")
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns) as bar:
        task = bar.add_task(doc["name"], total=None)

        def on_progress(done: int, total: int, message: str) -> None:
            bar.update(
                task, completed=done, total=total or None, description=f"{doc['name']} {message}".strip()
            )

        try:
            outcome = run_local(
                doc.get("spec") or {}, doc["kind"], out, uri, on_progress, run_name=doc["name"]
            )
        except ValidationError as exc:
            lines = [f"  {'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            raise click.ClickException("invalid spec:\n" + "\n".join(lines)) from exc
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo(f"{outcome.status}: outputs in {out}")
    if outcome.status != "succeeded":
        if outcome.error:
            click.echo(outcome.error, err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
