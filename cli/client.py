"""Commands that call the REST API: ``submit`` and ``runs`` (list, show, cancel, retry, logs).

The API URL and token come from flags, the environment (REASONLAB_API_URL, REASONLAB_TOKEN), the config
file (~/.config/reasonlab/config.yaml: ``api_url``, ``token``) or, on the machine running
``reasonlab up``, the home folder's admin.token. The HTTP client is the worker's SDK (worker.client).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from cli.specfile import experiment_file, load_yaml

if TYPE_CHECKING:
    from worker.client import ReasonLabClient

F = TypeVar("F", bound=Callable[..., Any])
CONFIG_FILE = Path(os.environ.get("REASONLAB_CONFIG", "~/.config/reasonlab/config.yaml")).expanduser()


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


@click.command()
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
    doc = experiment_file(spec_file, name, kind)
    if sweep:
        try:
            doc["sweep"] = load_yaml(sweep, "sweep file") if Path(sweep).is_file() else json.loads(sweep)
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


@click.group()
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


COMMANDS: tuple[click.Command, ...] = (submit, runs)
