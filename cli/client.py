"""Commands that call the REST API: ``submit``, ``runs``, ``experiments``, ``secrets``, ``datasets``, ``views``,
``claims``.

The API URL and token come from flags, the environment (REASONLAB_API_URL, REASONLAB_TOKEN), the config
file (~/.config/reasonlab/config.yaml: ``api_url``, ``token``) or, on the machine running
``reasonlab up``, the home folder's admin.token. The HTTP client is the Python SDK (reasonlab_sdk, sdk/).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from cli.specfile import experiment_file, load_yaml
from common.runs import FINISHED_STATUSES, RUN_STATUSES

if TYPE_CHECKING:
    from reasonlab_sdk.api_types import ClaimPublic, ViewPublic
    from reasonlab_sdk.client import ReasonLabClient

F = TypeVar("F", bound=Callable[..., Any])
CONFIG_FILE = Path(os.environ.get("REASONLAB_CONFIG", "~/.config/reasonlab/config.yaml")).expanduser()


def friendly_errors(fn: F) -> F:
    """API and validation errors become a clear message and exit code 1, never a traceback."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from reasonlab_sdk.client import ApiError, ApiUnavailable

        try:
            return fn(*args, **kwargs)
        except ApiUnavailable as exc:
            raise click.ClickException(unreachable(exc)) from exc
        except ApiError as exc:
            errors = getattr(exc, "errors", None) or []
            if not errors:
                raise click.ClickException(f"{exc.status or ''} {exc.detail}".strip()) from exc
            # the detail repeats the first error: print the list once, each error on its own line
            lines = [f"{exc.status or ''} invalid request: {len(errors)} error(s)".strip()]
            for err in errors:
                loc = ".".join(str(p) for p in err.get("loc", []))
                lines.append(f"  {loc}: {err.get('msg', '')}")
            raise click.ClickException("\n".join(lines)) from exc

    return wrapper  # type: ignore[return-value]


DEFAULT_URL = "http://127.0.0.1:8000"
API_URL_FILE = "api.url"  # in the home folder: `reasonlab up` writes the URL it serves there


def server_url(api_url: str | None, config: dict[str, Any]) -> tuple[str, str]:
    """The API's URL and where it came from: --api-url, REASONLAB_API_URL, the config file, the home
    folder's api.url (written by `reasonlab up`, so `make up PORT=8080` needs no flag), or the default."""
    if api_url:
        return api_url, "--api-url"
    if os.environ.get("REASONLAB_API_URL"):
        return os.environ["REASONLAB_API_URL"], "REASONLAB_API_URL"
    if config.get("api_url"):
        return str(config["api_url"]), str(CONFIG_FILE)
    home_file = _home() / API_URL_FILE
    if home_file.is_file() and home_file.read_text().strip():
        return home_file.read_text().strip(), str(home_file)
    return DEFAULT_URL, "the default"


def _home() -> Path:
    return Path(os.environ.get("REASONLAB_HOME", ".reasonlab"))


_resolved: dict[str, str] = {}  # the URL the last client was made for, and where it came from


def unreachable(exc: Exception) -> str:
    url, source = _resolved.get("url", "the API"), _resolved.get("source")
    return (
        f"cannot reach the ReasonLab API at {url}" + (f" (from {source})" if source else "") + f": {exc}\n"
        "  Is it running (`reasonlab up`, or `make up`)? Is the URL right? Set it with --api-url, "
        "REASONLAB_API_URL, or REASONLAB_HOME pointing at the home folder of `reasonlab up`."
    )


def no_token(home_token: Path) -> str:
    """The one line a client command prints without a token: every place it looked (the home folder's
    token named with the REASONLAB_HOME it came from) and how to give it one."""
    home = os.environ.get("REASONLAB_HOME")
    where = f"REASONLAB_HOME={home}" if home else "REASONLAB_HOME unset: ./.reasonlab"
    return (
        f"no API token: none in --token, REASONLAB_TOKEN, 'token:' of {CONFIG_FILE}, "
        f"or {home_token.resolve()} ({where}); run the command where `reasonlab up` runs, "
        "set REASONLAB_HOME to its home folder, or pass --token / set REASONLAB_TOKEN"
    )


def _client(api_url: str | None, token: str | None) -> ReasonLabClient:
    from reasonlab_sdk.client import ReasonLabClient

    config: dict[str, Any] = {}
    if CONFIG_FILE.is_file():
        config = yaml.safe_load(CONFIG_FILE.read_text()) or {}
    url, source = server_url(api_url, config)
    tok = token or os.environ.get("REASONLAB_TOKEN") or config.get("token")
    home_token = _home() / "admin.token"
    if not tok and home_token.is_file():
        tok = home_token.read_text().strip()
    if not tok:
        raise click.ClickException(no_token(home_token))
    _resolved.update(url=url, source=source)
    return ReasonLabClient(url, tok)


def client_options(fn: F) -> F:
    fn = click.option("--token", default=None, help="API token (or REASONLAB_TOKEN)")(fn)
    fn = click.option("--api-url", default=None, help="API URL (or REASONLAB_API_URL)")(fn)
    return fn


class _UsageError(click.UsageError):
    exit_code = 1


class _SubmitCommand(click.Command):
    """A wrong option or a missing argument exits 1 like any other error of the command (click's own
    usage status, 2, is `submit --wait`'s "a run failed")."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _UsageError(exc.format_message(), exc.ctx) from exc


@click.command(cls=_SubmitCommand)
@click.argument("spec_file")
@click.option("--sweep", default=None, help="sweep as YAML/JSON file or inline JSON")
@click.option("--name", default=None)
@click.option("--kind", default=None)
@click.option("--project", default=None)
@click.option(
    "--wait",
    is_flag=True,
    help="wait until every run has finished; the exit status then tells how they ended (see above)",
)
@click.option(
    "--wait-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="wait (implies --wait) at most this long, then exit with status 4; default: as long as it "
    "takes, through API restarts and outages",
)
@client_options
@friendly_errors
def submit(
    spec_file: str,
    sweep: str | None,
    name: str | None,
    kind: str | None,
    project: str | None,
    wait: bool,
    wait_timeout: float | None,
    api_url: str | None,
    token: str | None,
) -> None:
    """Submit SPEC_FILE as an experiment (with an optional sweep).

    A file with a top-level `claims:` list ({name, definition} each, as `reasonlab claims create` takes)
    is a findings experiment (examples/findings/): each claim is created, or given the file's definition
    if the project has one of that name, and locked before the runs are created, so it is pre-registered.

    With --wait, the command follows the runs until every one has finished, keeps waiting while the
    API is unreachable or answers 5xx (an API restart: it retries with backoff and says so on stderr),
    ends with a summary and a line per run that did not succeed (its id, status and why), and exits
    with the first of these that applies:

    \b
      1  the command itself failed: a wrong option, a bad spec, a refused request, no API
      2  a run failed
      3  a run was cancelled
      4  --wait-timeout passed before every run finished
      0  every run succeeded
    """
    doc = experiment_file(spec_file, name, kind)
    stated = claims_of(doc, spec_file, renamed=name is not None)
    if sweep:
        try:
            doc["sweep"] = load_yaml(sweep, "sweep file") if Path(sweep).is_file() else json.loads(sweep)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"--sweep is neither a file nor valid JSON: {exc}") from exc
    with _client(api_url, token) as client:
        if stated:
            # before the runs exist, so that a locked claim is pre-registered (docs/api.md, "Claims")
            pid = _project_id(client, project or doc.get("project"))
            for line in state_claims(client, pid, stated):
                click.echo(line)
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
        if wait or wait_timeout is not None:
            code = _wait_all(client, [r["id"] for r in exp["runs"]], timeout=wait_timeout)
            if code:
                click.get_current_context().exit(code)


def claims_of(doc: dict[str, Any], path: str, renamed: bool) -> list[dict[str, Any]]:
    """The ``claims`` an experiment file states beside its spec (a findings experiment, e.g.
    examples/findings/carma.yaml): a list of ``{name, definition}``, taken out of ``doc``. Each is checked
    for its shape here and for its content by the API (a 422 naming the field)."""
    stated = doc.pop("claims", None)
    if stated is None:
        return []
    if not isinstance(stated, list) or not stated:
        raise click.ClickException(f"{path}: claims: a list of {{name, definition}} mappings")
    names: set[str] = set()
    for i, c in enumerate(stated):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or "definition" not in c:
            raise click.ClickException(f"{path}: claims[{i}]: a mapping with a name and a definition")
        if set(c) - {"name", "definition"}:
            extra = ", ".join(sorted(set(c) - {"name", "definition"}))
            raise click.ClickException(f"{path}: claims[{i}] ({c['name']!r}): unknown field(s) {extra}")
        if c["name"] in names:
            raise click.ClickException(f"{path}: claims[{i}]: the name {c['name']!r} is stated twice")
        names.add(c["name"])
    if renamed:
        raise click.ClickException(
            f"{path} states claims, whose queries name the file's experiment: rename it in the file, "
            "not with --name"
        )
    return stated


def state_claims(client: ReasonLabClient, project_id: int, stated: list[dict[str, Any]]) -> list[str]:
    """Create each claim, or give an existing claim of that name the file's definition (a new version when
    it differs), then lock its current version unless it is locked: a line per claim. A refused claim
    stops before the experiment is created; the claims stated before it stay, and submitting the file
    again reuses them."""
    from reasonlab_sdk.client import Invalid

    existing = {c["name"]: c for c in client.list_claims(project_id)}
    lines = []
    for c in stated:
        try:
            if c["name"] in existing:
                before = existing[c["name"]]["version"]
                claim = client.update_claim(existing[c["name"]]["id"], definition=c["definition"])
                what = "unchanged" if claim["version"] == before else f"edited (version {claim['version']})"
            else:
                claim = client.create_claim(project_id, c["name"], c["definition"])
                what = "created"
        except Invalid:
            click.echo(f"claim {c['name']!r} refused; no experiment was created:", err=True)
            raise
        pre = claim["evaluation"]["preregistration"]
        if pre["locked_version"] != claim["version"]:
            claim = client.lock_claim(claim["id"])
            pre = claim["evaluation"]["preregistration"]
            what += f", locked (sha256 {(pre['locked_hash'] or '')[:12]})"
        lines.append(f"claim {claim['id']} ({claim['name']}): {what}; {pre['status']}")
    return lines


# `submit --wait`'s exit statuses (documented in its help, README.md and docs/quickstart.md)
EXIT_SUCCEEDED, EXIT_FAILED, EXIT_CANCELLED, EXIT_TIMEOUT = 0, 2, 3, 4
WAIT_POLL_SECONDS = 1.0  # between two looks at the unfinished runs
WAIT_POLL_RUNS = 5  # runs a second the wait asks about, on average; more unfinished runs: a longer pause
RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS = 1.0, 30.0  # backoff while the API is unreachable
OUTAGE_NOTE_SECONDS = 300.0  # during a long outage, a line on stderr this often
# the clock and the sleep of the wait (tests replace them)
_sleep: Callable[[float], None] = time.sleep
_now: Callable[[], float] = time.monotonic


def error_line(error: str | None) -> str:
    """One line that says why a run failed: a traceback's last line (the exception), else the error's
    first line; cut at 300 characters."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line if len(line) <= 300 else line[:299] + "…"


def _wait_all(client: ReasonLabClient, run_ids: list[int], timeout: float | None = None) -> int:
    """Follow the runs until each has finished; the exit status of ``submit --wait``. An unreachable
    API (connection refused, timeout, 429, 5xx: ``ApiUnavailable``) is waited out with backoff, with a
    line on stderr, and never ends the wait; other API errors do (exit 1, through friendly_errors)."""
    from reasonlab_sdk.client import ApiUnavailable

    deadline = None if timeout is None else _now() + timeout
    pending = list(dict.fromkeys(run_ids))
    ended: dict[int, Any] = {}
    retry_in = RETRY_FIRST_SECONDS
    down_since: float | None = None
    said_at = 0.0
    while pending:
        try:
            for rid in list(pending):
                r = client.get_run(rid)
                if down_since is not None:
                    click.echo(f"API reachable again after {_now() - down_since:.0f}s", err=True)
                    down_since, retry_in = None, RETRY_FIRST_SECONDS
                if r["status"] in FINISHED_STATUSES:
                    ended[rid] = r
                    pending.remove(rid)
                    click.echo(f"run {rid}: {r['status']}")
        except ApiUnavailable as exc:
            if down_since is None:
                down_since = said_at = _now()
                click.echo(f"API unavailable, retrying... ({exc})", err=True)
            elif _now() - said_at >= OUTAGE_NOTE_SECONDS:  # a long outage: a line every few minutes
                said_at = _now()
                click.echo(f"API still unavailable after {said_at - down_since:.0f}s, retrying...", err=True)
            delay = retry_in
            retry_in = min(retry_in * 2, RETRY_MAX_SECONDS)
        else:
            # a look at each unfinished run a second, at most WAIT_POLL_RUNS of them: a sweep of 100 runs
            # is looked at every 20 s, not 100 requests a second for as long as it runs
            delay = WAIT_POLL_SECONDS * max(1.0, len(pending) / WAIT_POLL_RUNS)
        if not pending:
            break
        if deadline is not None and _now() + delay > deadline:
            _sleep(max(0.0, deadline - _now()))
            break
        _sleep(delay)
    return _wait_summary(ended, pending)


def _wait_summary(ended: dict[int, Any], pending: list[int]) -> int:
    counts: dict[str, int] = {}
    for r in ended.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    if pending:
        counts["unfinished"] = len(pending)
    total = len(ended) + len(pending)
    parts = ", ".join(f"{n} {status}" for status, n in counts.items())
    click.echo(f"{total} run(s): {parts}")
    bad = [r for r in ended.values() if r["status"] != "succeeded"]
    for r in sorted(bad, key=lambda r: r["id"]):
        reason = error_line(r.get("error"))
        click.echo(f"  run {r['id']} {r['status']}" + (f": {reason}" if reason else ""))
    if pending:
        click.echo(f"  unfinished at --wait-timeout: run(s) {', '.join(str(i) for i in sorted(pending))}")
    if counts.get("failed"):
        return EXIT_FAILED
    if counts.get("cancelled"):
        return EXIT_CANCELLED
    if pending:
        return EXIT_TIMEOUT
    return EXIT_SUCCEEDED


@click.group()
def runs() -> None:
    """List, inspect, cancel and retry runs."""


@runs.command("list")
@click.option("--experiment", type=int, default=None)
@click.option("--status", default=None)
@click.option(
    "--view",
    "view_ref",
    default=None,
    metavar="NAME_OR_ID",
    help="a saved view of the runs page: its id (any project you are in), or its name (in --project, "
    "default: default); its query, sort, grouping and metric columns, as the dashboard shows it; --where, "
    "--sort, --asc, --group-by and --metric given here override the view's",
)
@click.option("--where", "where", default=None, metavar="EXPR", help="a query-language filter")
@click.option("--sort", default=None, help="any field: name, params.<path>, max(metrics.<key>), ...")
@click.option("--asc", is_flag=True, help="ascending (default: descending)")
@click.option("--project", default=None)
@click.option("--limit", default=50, show_default=True)
@click.option(
    "--group-by",
    "group_by",
    default=None,
    metavar="FIELDS",
    help="seed groups: comma-separated fields (params.method,params.lambda), or default (every spec field "
    "except seed); prints n and mean ± 95% CI half-width per --metric",
)
@click.option(
    "--metric",
    "metric_columns",
    multiple=True,
    metavar="COLUMN",
    help="with --group-by, a metric column to aggregate (repeatable): metrics.acc, max(metrics.acc), "
    "best(metrics.loss)",
)
@click.option(
    "--columns",
    default=None,
    metavar="FIELDS",
    help="comma-separated columns instead of the params column: metrics.<key> (latest value), "
    "params.<spec path> (any resolved spec field), logged.<key> (a param the run logged), or a run field "
    "(name, status, attempt, worker, ...); e.g. --columns metrics.final_loss,params.train.lr",
)
@client_options
@friendly_errors
def runs_list(
    experiment: int | None,
    status: str | None,
    view_ref: str | None,
    where: str | None,
    sort: str | None,
    asc: bool,
    project: str | None,
    limit: int,
    group_by: str | None,
    metric_columns: tuple[str, ...],
    columns: str | None,
    api_url: str | None,
    token: str | None,
) -> None:
    """List runs, newest first (filter by experiment or status, or with --where EXPR), or their seed
    groups (--group-by).

    \b
    Examples (the language: docs/api.md, "Query language"):
      reasonlab runs list --where 'status = "succeeded" and params.train.lr >= 0.01'
      reasonlab runs list --where 'tags contains "baseline" and created > now - 2d'
      reasonlab runs list --where 'best(metrics.test_acc) > 0.9' --sort 'max(metrics.test_acc)'
      reasonlab runs list --where 'kind = "carma"' --group-by default --metric 'max(metrics.acc)'
      reasonlab runs list --view 'carma seeds' --project lab --where 'params.lambda >= 0.1'
      reasonlab runs list --view 12
      reasonlab runs list --where 'attempt > 1'    (runs a failure or a lost worker made try again)

    The att column: the attempts counted against the run's allowance, of how many (2/3); +3r: three more
    were released at a worker's shutdown and resumed from their checkpoint (never counted).

    With --view, the runs (or groups) a saved view of the runs page shows in the dashboard, of the view's
    project (a view's id needs no --project, its name does outside the project default); an option given here replaces that part of the view (a new --group-by also drops the view's
    sort, as the dashboard does).
    """
    metrics = [c.strip() for c in metric_columns]
    if metrics and group_by is None and view_ref is None:
        raise click.UsageError("--metric aggregates over groups: add --group-by")
    with _client(api_url, token) as client:
        if view_ref is not None:
            view = _find_view(client, project, view_ref)
            project = _project_name(client, view["project_id"])  # the view's project, whichever found it
            args = _view_args(view, where, sort, asc, group_by, metrics)
            if metrics and args.get("group_by") is None:
                raise click.UsageError("--metric aggregates over groups: the view has none, add --group-by")
        else:
            order = "asc" if asc else None
            args = {"q": where, "sort": sort, "order": order, "group_by": group_by, "metrics": metrics}
        page = client.list_runs(
            experiment_id=experiment,
            status=status,
            q=args.get("q"),
            sort=args.get("sort"),
            order=args.get("order"),
            project=project,
            limit=limit,
            group_by=args.get("group_by"),
            metrics=args.get("metrics") or None,
        )
    if args.get("group_by") is not None:
        _print_groups(page.get("groups") or [], list(args.get("metrics") or []))
        return
    extra = [c.strip() for c in columns.split(",") if c.strip()] if columns else []
    cells = [[column_cell(r, c) for c in extra] for r in page["items"]]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(extra)]
    tail = "  ".join(f"{c:<{w}}" for c, w in zip(extra, widths, strict=True)) if extra else "params"
    click.echo(
        f"{'id':>6}  {'exp':>5}  {'kind':<14} {'status':<10} {'att':<{ATT_WIDTH}}  progress  {'eta':>7}  "
        f"{'name':<24}  {tail}".rstrip()
    )
    now = datetime.now(UTC)
    for r, row in zip(page["items"], cells, strict=True):
        p = r["progress"]
        prog = f"{p['done']}/{p['total']}" if p["total"] else "-"
        values = (
            "  ".join(f"{v:<{w}}" for v, w in zip(row, widths, strict=True))
            if extra
            else json.dumps(r["params"])
        )
        click.echo(
            f"{r['id']:>6}  {r['experiment_id']:>5}  {r['kind']:<14} {r['status']:<10} "
            f"{attempt_cell(r):<{ATT_WIDTH}}  "
            f"{prog:<8}  {eta_cell(p.get('eta_at'), now):>7}  {name_cell(r.get('name')):<24}  "
            f"{values}".rstrip()
        )


MISSING = "-"  # a column a run has no value for


def _dig(value: Any, path: str) -> Any:
    """``value`` at a dotted ``path`` of nested dicts; MISSING where a step is absent."""
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def _cell_text(value: Any) -> str:
    if value is MISSING or value is None:
        return MISSING
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def column_cell(run: Any, column: str) -> str:
    """One ``--columns`` cell of a run: ``metrics.<key>`` its latest value, ``params.<path>`` its resolved
    spec's field (the swept params' flat names too), ``logged.<key>`` a param it logged, else a run field."""
    family, _, rest = column.partition(".")
    if family == "metrics" and rest:
        return _cell_text(run.get("summary", {}).get(rest, MISSING))
    if family == "params" and rest:
        found = _dig(run.get("spec") or {}, rest)
        if found is MISSING:
            found = (run.get("params") or {}).get(rest, MISSING)
        return _cell_text(found)
    if family == "logged" and rest:
        return _cell_text((run.get("logged_params") or {}).get(rest, MISSING))
    return _cell_text(_dig(run, column))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def group_cells(keys: list[dict[str, Any]]) -> list[str]:
    """Each group's key as ``field=value, ...``: every group field, or, for a whole spec (group-by
    default), only the paths whose values differ between the groups shown (all of them for one group)."""
    flat = [_flat(k) for k in keys]
    paths = list(dict.fromkeys(p for f in flat for p in f))
    if len(flat) > 1:
        varying = [p for p in paths if len({json.dumps(f.get(p), sort_keys=True) for f in flat}) > 1]
        paths = varying or paths
    return [", ".join(f"{p}={json.dumps(f.get(p))}" for p in paths) for f in flat]


def stats_cell(stats: dict[str, Any] | None) -> str:
    """A metric column of a group: ``mean ± CI half-width (n)``; the value alone for one member (n = 1,
    no interval), ``-`` without any value."""
    if not stats or not stats.get("n") or stats.get("mean") is None:
        return "-"
    mean = stats["mean"]
    if stats.get("ci_high") is None:
        return f"{mean:.4g} (n={stats['n']})"
    return f"{mean:.4g} ± {stats['ci_high'] - mean:.2g} (n={stats['n']})"


def _print_groups(groups: list[Any], columns: list[str]) -> None:
    cells = group_cells([g["key"] for g in groups])
    width = max([len("group"), *(len(c) for c in cells)])
    widths = [max(len(c), 22) for c in columns]
    click.echo(
        f"{'group':<{width}}  {'n':>4}  "
        + "  ".join(f"{c:<{w}}" for c, w in zip(columns, widths, strict=True))
    )
    for g, cell in zip(groups, cells, strict=True):
        metrics_ = g.get("metrics") or {}
        values = "  ".join(
            f"{stats_cell(metrics_.get(c)):<{w}}" for c, w in zip(columns, widths, strict=True)
        )
        click.echo(f"{cell:<{width}}  {g['n']:>4}  {values}".rstrip())


def eta_cell(eta_at: str | None, now: datetime) -> str:
    """The time a running run still needs, from the API's ETA (its progress rate): ``3m 05s``, ``1h 02m``;
    ``-`` without an estimate, ``<1s`` once it is due."""
    if not eta_at:
        return "-"
    due = datetime.fromisoformat(eta_at)
    left = ((due.replace(tzinfo=UTC) if due.tzinfo is None else due) - now).total_seconds()
    if left < 1:
        return "<1s"
    hours, rest = divmod(int(left), 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


ATT_WIDTH = 7  # the att column of `runs list`: 1/3, or 1/3+3r


def _released(run: Any) -> int:
    return int(run.get("released") or 0)  # an API from before the field: none counted apart


def attempt_cell(run: Any) -> str:
    """A run's att column in ``runs list``: the attempts counted against its allowance, of how many
    (``2/3``), and the released ones apart (``1/3+3r``: handed back three times at a worker's shutdown,
    each resumed by the next attempt; they do not count)."""
    released = _released(run)
    counted = f"{run['attempt'] - released}/{run['max_attempts']}"
    return f"{counted}+{released}r" if released else counted


def attempt_line(run: Any) -> str:
    """``runs show``'s attempt line: ``1 of at most 3``, then the released attempts and the attempt's own
    number (the one ``runs logs`` and the attempt history name): ``1 of at most 3, resumed 3x after
    worker shutdowns (attempt #4)``."""
    released = _released(run)
    line = f"{run['attempt'] - released} of at most {run['max_attempts']}"
    if released:
        line += f", resumed {released}x after worker shutdowns (attempt #{run['attempt']})"
    return line


NAME_WIDTH = 24  # the name column of `runs list`; a longer name is cut with an ellipsis


def name_cell(name: str | None) -> str:
    """A run's name for a column of ``runs list``: ``-`` when unnamed, cut to NAME_WIDTH characters."""
    if not name:
        return "-"
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


@runs.command("rename")
@click.argument("run_id", type=int)
@click.argument("name")
@client_options
@friendly_errors
def runs_rename(run_id: int, name: str, api_url: str | None, token: str | None) -> None:
    """Name run RUN_ID NAME (at most 200 characters); an empty NAME ("") clears the name."""
    with _client(api_url, token) as client:
        r = client.rename_run(run_id, name)
    click.echo(f"run {run_id}: named {r['name']!r}" if r["name"] else f"run {run_id}: name cleared")


def _export_options(fn: F) -> F:
    """The options of ``experiments export`` and its older name ``runs export``."""
    for option in reversed(
        (
            click.argument("experiment", type=int),
            click.option(
                "--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True
            ),
            click.option(
                "-o",
                "--output",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help="the file to write (default: experiment-<id>-runs.<format> here)",
            ),
            click.option(
                "--status",
                "statuses",
                multiple=True,
                type=click.Choice(RUN_STATUSES),
                help="only runs of this status (repeat it; default: all runs)",
            ),
            client_options,
            friendly_errors,
        )
    ):
        fn = option(fn)
    return fn


def _export(
    experiment: int,
    fmt: str,
    output: Path | None,
    statuses: tuple[str, ...],
    api_url: str | None,
    token: str | None,
) -> None:
    dest = output or Path(f"experiment-{experiment}-runs.{fmt}")
    with _client(api_url, token) as client:
        size = client.export_runs(
            experiment,
            dest,
            format="parquet" if fmt == "parquet" else "csv",
            statuses=list(statuses) or None,
        )
    click.echo(f"wrote {dest} ({size} bytes, {fmt})")


@runs.command("export")
@_export_options
def runs_export(
    experiment: int,
    fmt: str,
    output: Path | None,
    statuses: tuple[str, ...],
    api_url: str | None,
    token: str | None,
) -> None:
    """Write EXPERIMENT's runs table (id) as CSV or Parquet (the same as ``experiments export``): number,
    name, status, attempt, times, every resolved spec field as params.*, the logged params and the latest
    metrics.*."""
    _export(experiment, fmt, output, statuses, api_url, token)


@runs.command("show")
@click.argument("run_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="the run as the API returns it (JSON)")
@client_options
@friendly_errors
def runs_show(run_id: int, as_json: bool, api_url: str | None, token: str | None) -> None:
    """Show one run: status, attempts, worker, times, progress, error, params, logged params and latest
    metrics; --json prints the API's whole record (spec included)."""
    with _client(api_url, token) as client:
        run = client.get_run(run_id)
    if as_json:
        click.echo(json.dumps(run, indent=2))
        return
    for line in run_summary(run):
        click.echo(line)


def run_summary(run: Any) -> list[str]:
    """``runs show``'s readable lines: one field a line, then params, logged params and metrics."""
    name = f" {run['name']!r}" if run.get("name") else ""
    p = run["progress"]
    lines = [
        f"run {run['id']}{name}: {run['kind']}, experiment {run['experiment_id']}, {run['status']}"
        + (" (cancel requested)" if run.get("cancel_requested") else ""),
        f"  attempt:   {attempt_line(run)}",
        f"  worker:    {run.get('worker') or '-'}"
        + (f" (last heartbeat {run['heartbeat_at']})" if run.get("heartbeat_at") else ""),
        f"  created:   {run['created_at']}",
        f"  started:   {run.get('started_at') or '-'}",
        f"  finished:  {run.get('finished_at') or '-'}",
        f"  run time:  {_seconds(run.get('run_seconds'))}",
        f"  progress:  {p['done']}/{p['total']}" if p.get("total") else "  progress:  -",
    ]
    if run.get("error"):
        lines.append(f"  error:     {error_line(run['error'])}")
    if run.get("tags"):
        lines.append(f"  tags:      {', '.join(run['tags'])}")
    for title, values in (
        ("params (swept)", run.get("params") or {}),
        ("logged params", run.get("logged_params") or {}),
        ("metrics (latest)", run.get("summary") or {}),
    ):
        if values:
            lines.append(f"{title}:")
            width = max(len(k) for k in values)
            lines.extend(f"  {k:<{width}}  {_cell_text(v)}" for k, v in sorted(values.items()))
    lines.append(f"(the resolved spec and every field: reasonlab runs show {run['id']} --json)")
    return lines


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    minutes, seconds = divmod(round(value), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {seconds:02d}s" if hours else f"{minutes}m {seconds:02d}s"


@runs.command("cancel")
@click.argument("run_id", type=int)
@client_options
@friendly_errors
def runs_cancel(run_id: int, api_url: str | None, token: str | None) -> None:
    """Cancel a run: a queued run at once, a running one cooperatively at its next step."""
    with _client(api_url, token) as client:
        r = client.cancel_run(run_id)
    click.echo(f"run {run_id}: {r['status']}{' (cancel requested)' if r['cancel_requested'] else ''}")


@runs.command("retry")
@click.argument("run_id", type=int)
@client_options
@friendly_errors
def runs_retry(run_id: int, api_url: str | None, token: str | None) -> None:
    """Queue a finished (failed or cancelled) run again as a new attempt."""
    with _client(api_url, token) as client:
        r = client.retry_run(run_id)
    click.echo(f"run {run_id}: {r['status']} (attempt {r['attempt']})")


@runs.command("logs")
@click.argument("run_id", type=int)
@click.option("--follow", "-f", is_flag=True, help="keep printing until the run finishes")
@client_options
@friendly_errors
def runs_logs(run_id: int, follow: bool, api_url: str | None, token: str | None) -> None:
    """Print a run's log lines; --follow keeps printing until the run finishes."""
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
                if status in FINISHED_STATUSES:
                    for item in client.get_logs(run_id, after=after)["items"]:  # lines flushed at the end
                        click.echo(item["line"])
                    click.echo(f"-- run {run_id} {status}")
                    return
                time.sleep(1.0)


@click.group()
def secrets() -> None:
    """Project secrets: keys for outside endpoints (a grader's API key). A spec names one in a
    ``*_secret`` field; only the run whose spec names it gets the value, only for the hosts set with it
    (``--host``), and no answer of the API holds it."""


def _project_id(client: ReasonLabClient, project: str | None) -> int:
    name = project or "default"
    for p in client.list_projects():
        if p["name"] == name:
            return int(p["id"])
    raise click.ClickException(f"project {name!r} not found (or you are not a member)")


@secrets.command("list")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def secrets_list(project: str | None, api_url: str | None, token: str | None) -> None:
    """The project's secrets by name, with where each may be sent and who set them last."""
    with _client(api_url, token) as client:
        for s in client.list_secrets(_project_id(client, project)):
            hosts = ", ".join(s["hosts"]) or "nowhere yet (secrets hosts NAME --host ...)"
            click.echo(
                f"{s['name']:32} set {s['updated_at'][:19]} by {s['updated_by'] or '-'}; sent only to {hosts}"
            )


HOST_HELP = (
    "where the secret may be sent, repeatable: a host name (https), *.domain, an IP address or network, or "
    "a URL prefix (http(s)://host[:port][/path], the only way to allow http)"
)


@secrets.command("set")
@click.argument("name")
@click.option("--project", default=None, help="project name (default: default)")
@click.option("--from-stdin", is_flag=True, help="read the value from standard input (else: a hidden prompt)")
@click.option(
    "--host", "hosts", multiple=True, help=HOST_HELP + "; none: a secret set before keeps its hosts"
)
@client_options
@friendly_errors
def secrets_set(
    name: str,
    project: str | None,
    from_stdin: bool,
    hosts: tuple[str, ...],
    api_url: str | None,
    token: str | None,
) -> None:
    """Set or replace a secret (project admins), with the hosts it may be sent to (a new secret without
    any is sent nowhere until ``secrets hosts`` names them). The value is never an argument: it would stay
    in the shell's history and in the process list."""
    if from_stdin:
        value = sys.stdin.read().rstrip("\r\n")
    else:
        value = str(click.prompt(f"value of {name}", hide_input=True, confirmation_prompt=True))
    if not value:
        raise click.ClickException("the value is empty")
    with _client(api_url, token) as client:
        secret = client.set_secret(_project_id(client, project), name, value, list(hosts) if hosts else None)
    where = ", ".join(secret["hosts"]) or "nowhere yet: name its hosts with `reasonlab secrets hosts`"
    click.echo(f"secret {name} set; sent only to {where}")


@secrets.command("hosts")
@click.argument("name")
@click.option("--project", default=None, help="project name (default: default)")
@click.option("--host", "hosts", multiple=True, help=HOST_HELP + "; none: sent nowhere")
@client_options
@friendly_errors
def secrets_hosts(
    name: str, project: str | None, hosts: tuple[str, ...], api_url: str | None, token: str | None
) -> None:
    """Set where a secret may be sent, its value unchanged (project admins); runs that have not read it
    yet get it only for endpoints these cover."""
    with _client(api_url, token) as client:
        secret = client.set_secret_hosts(_project_id(client, project), name, list(hosts))
    click.echo(f"secret {name}: sent only to {', '.join(secret['hosts']) or 'nowhere'}")


@secrets.command("delete")
@click.argument("name")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def secrets_delete(name: str, project: str | None, api_url: str | None, token: str | None) -> None:
    """Delete a secret (project admins); runs whose specs name it fail to start until it is set again."""
    with _client(api_url, token) as client:
        client.delete_secret(_project_id(client, project), name)
    click.echo(f"secret {name} deleted")


@secrets.command("keygen")
def secrets_keygen() -> None:
    """Print a new REASONLAB_SECRETS_KEY for the API (32 random bytes, urlsafe base64). Changing it makes
    the secrets sealed under the old key unreadable: set them again."""
    import base64
    import os

    click.echo(base64.urlsafe_b64encode(os.urandom(32)).decode())


@click.group()
def datasets() -> None:
    """Project datasets: data files uploaded to a project, for members without access to the worker
    hosts. A spec names one as ``dataset:<name>`` in a data-path field (``data.path``, ``data.skills``,
    ...); only a run of the project whose spec names it downloads it (docs/spec-confinement.md)."""


@datasets.command("upload")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", default=None, help="the dataset's name (default: the file's name)")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def datasets_upload(
    file: Path, name: str | None, project: str | None, api_url: str | None, token: str | None
) -> None:
    """Upload FILE (or replace the dataset of that name); project members."""
    name = name or file.name
    with _client(api_url, token) as client:
        d = client.upload_dataset(_project_id(client, project), name, file)
    click.echo(f"dataset {d['name']} uploaded ({d['size']} bytes, sha256 {d['sha256']}): dataset:{d['name']}")


@datasets.command("list")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def datasets_list(project: str | None, api_url: str | None, token: str | None) -> None:
    """The project's datasets: name, size, sha256, when and by whom uploaded."""
    with _client(api_url, token) as client:
        for d in client.list_datasets(_project_id(client, project)):
            click.echo(
                f"{d['name']:32} {d['size']:>12} {d['sha256'][:12]} "
                f"{d['uploaded_at'][:19]} by {d['uploaded_by'] or '-'}"
            )


@datasets.command("delete")
@click.argument("name")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def datasets_delete(name: str, project: str | None, api_url: str | None, token: str | None) -> None:
    """Delete a dataset (a project admin or its uploader); specs naming it are refused from then on."""
    with _client(api_url, token) as client:
        client.delete_dataset(_project_id(client, project), name)
    click.echo(f"dataset {name} deleted")


def _find_view(client: ReasonLabClient, project: str | None, ref: str) -> ViewPublic:
    """The view REF: without --project a number is a view's id in any project the caller is in (GET
    /views/{id}); with --project, the id of one of that project's views. Any other REF (or a number no
    view has as its id, without --project) is a view's name in the project (default: default); an unknown
    one names the views the project has."""
    from reasonlab_sdk.client import NotFound

    if ref.isdecimal() and project is None:
        try:
            return client.get_view_by_id(int(ref))
        except NotFound:
            pass  # perhaps a view named with digits, in the project default
    project_id = _project_id(client, project)
    views_ = client.list_views(project_id)
    if ref.isdecimal():
        by_id = [v for v in views_ if v["id"] == int(ref)]
        if by_id:
            return by_id[0]
    for v in views_:
        if v["name"] == ref:
            return v
    name = project or "default"
    if not views_:
        raise click.ClickException(f"no view {ref!r} in project {name!r}: it has no saved views")
    known = ", ".join(f"{v['name']!r} ({v['id']})" for v in views_)
    raise click.ClickException(f"no view {ref!r} in project {name!r}; its views: {known}")


def _project_name(client: ReasonLabClient, project_id: int) -> str:
    for p in client.list_projects():
        if p["id"] == project_id:
            return str(p["name"])
    raise click.ClickException(f"project {project_id} not found (or you are not a member)")


def _view_args(
    view: ViewPublic,
    where: str | None,
    sort: str | None,
    asc: bool,
    group_by: str | None,
    metrics: list[str],
) -> dict[str, Any]:
    """``list_runs`` keywords of a saved view (reasonlab_sdk.view_runs_args: the dashboard's own
    mapping), with the command line's options in place of the view's parts."""
    from reasonlab_sdk import view_runs_args

    state = view["state"].copy()
    if group_by is not None:
        # a grouping of one's own: the view's sort was of the view's groups (the dashboard drops it too)
        fields = [f.strip() for f in group_by.split(",") if f.strip()]
        state["group_by"] = "all spec fields but seed" if group_by.strip() == "default" else fields
        state["sort"] = None
    overridden = view.copy()
    overridden["state"] = state
    try:
        args: dict[str, Any] = dict(view_runs_args(overridden))
    except ValueError as exc:  # a view of the experiments or compare page
        raise click.ClickException(f"{exc}; `runs list --view` takes a runs page's view") from exc
    if where is not None:
        args["q"] = where
    if sort is not None:
        args["sort"], args["order"] = sort, "asc" if asc else None
    elif asc:
        args["order"] = "asc"
    if metrics:
        args["metrics"] = metrics
        by_mean = str(args.get("sort") or "")
        dropped = by_mean.startswith("metric-mean:") and by_mean.removeprefix("metric-mean:") not in metrics
        if sort is None and dropped:
            # the view sorted its groups by a metric column that --metric no longer asks for
            args.pop("sort")
            args.pop("order", None)
    return args


@click.group()
def views() -> None:
    """Saved views of a project: a runs, experiments or compare page's query, columns, grouping, sort and
    chart, saved in the dashboard and shared with the project (`runs list --view` lists a runs view's
    runs). Any role reads them; only a view's author or a project admin deletes one."""


@views.command("list")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def views_list(project: str | None, api_url: str | None, token: str | None) -> None:
    """The project's saved views by name: id, page, author, last update, name and query."""
    with _client(api_url, token) as client:
        items = client.list_views(_project_id(client, project))
    if not items:
        click.echo(f"project {project or 'default'!r} has no saved views")
        return
    width = max(len("name"), *(len(v["name"]) for v in items))
    click.echo(f"{'id':>6}  {'page':<11} {'author':<12} {'updated':<19}  {'name':<{width}}  query")
    for v in items:
        query = " ".join((v["state"].get("query") or "").split()) or "-"
        click.echo(
            f"{v['id']:>6}  {v['page']:<11} {v['author'] or '-':<12} {v['updated_at'][:19]:<19}  "
            f"{v['name']:<{width}}  {query}"
        )


VIEW_PROJECT_HELP = "the project of a view given by name (default: default); an id needs none"


@views.command("show")
@click.argument("view_ref", metavar="NAME_OR_ID")
@click.option("--project", default=None, help=VIEW_PROJECT_HELP)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of YAML")
@client_options
@friendly_errors
def views_show(
    view_ref: str, project: str | None, as_json: bool, api_url: str | None, token: str | None
) -> None:
    """Print a saved view with its state: query, columns, group_by, sort, chart, charts, runs. NAME_OR_ID: its id, in
    any project you are in, or its name in --project (default: default)."""
    with _client(api_url, token) as client:
        view = _find_view(client, project, view_ref)
    if as_json:
        click.echo(json.dumps(view, indent=2))
    else:
        click.echo(yaml.safe_dump(view, sort_keys=False, allow_unicode=True).rstrip())


@views.command("delete")
@click.argument("view_ref", metavar="NAME_OR_ID")
@click.option("--project", default=None, help=VIEW_PROJECT_HELP)
@client_options
@friendly_errors
def views_delete(view_ref: str, project: str | None, api_url: str | None, token: str | None) -> None:
    """Delete a saved view: its author or a project admin may. NAME_OR_ID: its id, in any project you
    are in, or its name in --project (default: default)."""
    with _client(api_url, token) as client:
        view = _find_view(client, project, view_ref)
        client.delete_view_by_id(view["id"])
    click.echo(f"view {view['id']} ({view['name']}) deleted")


@click.group()
def experiments() -> None:
    """List experiments and export their runs tables."""


@experiments.command("export")
@_export_options
def experiments_export(
    experiment: int,
    fmt: str,
    output: Path | None,
    statuses: tuple[str, ...],
    api_url: str | None,
    token: str | None,
) -> None:
    """Write EXPERIMENT's runs table (id) as CSV or Parquet: number, name, status, attempt, times, every
    resolved spec field as params.*, the logged params and the latest metrics.*."""
    _export(experiment, fmt, output, statuses, api_url, token)


@experiments.command("list")
@click.option("--where", "where", default=None, metavar="EXPR", help="a query-language filter")
@click.option("--sort", default=None, help="any field: name, runs, params.<path>, ...")
@click.option("--asc", is_flag=True, help="ascending (default: descending)")
@click.option("--project", default=None)
@click.option("--limit", default=50, show_default=True)
@client_options
@friendly_errors
def experiments_list(
    where: str | None,
    sort: str | None,
    asc: bool,
    project: str | None,
    limit: int,
    api_url: str | None,
    token: str | None,
) -> None:
    """List experiments, newest first (filter with --where EXPR).

    \b
    Examples (the language: docs/api.md, "Query language"):
      reasonlab experiments list --where 'kind = "carma" and params.carma.lambda >= 0.1'
      reasonlab experiments list --where 'name contains "sweep" and created > now - 7d'
      reasonlab experiments list --where 'tags = "paper" or author = "alice"' --sort runs
    """
    with _client(api_url, token) as client:
        page = client.list_experiments(
            q=where, sort=sort, order="asc" if asc else None, project=project, limit=limit
        )
    click.echo(f"{'id':>6}  {'kind':<22} {'runs':>5}  {'author':<12} name")
    for e in page["items"]:
        click.echo(
            f"{e['id']:>6}  {e['kind']:<22} {e['run_count']:>5}  {e.get('author') or '-':<12} {e['name']}"
        )


def _find_claim(client: ReasonLabClient, project: str | None, ref: str) -> ClaimPublic:
    """The claim REF: without --project a number is a claim's id in any project the caller is in; any other
    REF is a claim's name in --project (default: default); an unknown one names the claims there."""
    from reasonlab_sdk.client import NotFound

    if ref.isdecimal() and project is None:
        try:
            return client.get_claim(int(ref))
        except NotFound:
            pass  # perhaps a claim named with digits, in the project default
    items = client.list_claims(_project_id(client, project))
    for c in items:
        if c["name"] == ref or (ref.isdecimal() and c["id"] == int(ref)):
            return c
    name = project or "default"
    known = ", ".join(f"{c['name']!r} ({c['id']})" for c in items) or "none"
    raise click.ClickException(f"no claim {ref!r} in project {name!r}; its claims: {known}")


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def claim_card(claim: Any) -> list[str]:
    """A claim's evaluation as text: the verdict, the pre-registration, each arm and each comparison."""
    ev = claim["evaluation"]
    d = claim["definition"]
    pre = ev["preregistration"]
    lines = [
        f"claim {claim['id']}  {claim['name']}  ({d['section']})",
        f"verdict: {ev['verdict']}   version {ev['version']} decided (sha256 {ev['hash'][:12]})",
        f"pre-registration: {pre['status']}"
        + (f" (version {pre['locked_version']} locked {pre['locked_at'][:19]})" if pre["locked_at"] else ""),
        f"metric: {d['metric']} ({d['read']['mode']}), {d['direction']}, smallest effect {d['min_effect']:g}, "
        f"alpha {d['alpha']:g}, family {ev['family']!r} ({ev['family_size']} hypotheses)",
        "",
        f"{'arm':<20} {'n':>4}  {'mean':>10}  interval",
    ]
    for a in ev["arms"]:
        interval = f"[{_number(a['ci_low'])}, {_number(a['ci_high'])}]" if a["ci_low"] is not None else "-"
        lines.append(f"{a['name']:<20} {a['n']:>4}  {_number(a['mean']):>10}  {interval}")
    lines.append("")
    for c in ev["comparisons"]:
        head = f"{c['arm']} vs {c['reference']}: {c['verdict']}"
        if c["effect"] is None:
            lines.append(f"{head} ({c['reason']})")
            continue
        lines.append(
            f"{head}  effect {_number(c['effect'])} [{_number(c['ci_low'])}, {_number(c['ci_high'])}]  "
            f"{c['test']} n={c['n']}  p {_number(c['p_value'], 3)}  adjusted {_number(c['p_adjusted'], 3)}"
            + (f"  needs n={c['needed_n']}" if c["needed_n"] is not None else "")
        )
    return lines


def _definition_file(path: Path) -> dict[str, Any]:
    """A claim file: YAML or JSON with ``name`` and ``definition``."""
    loaded = load_yaml(str(path), "claim file")
    if not isinstance(loaded, dict) or "definition" not in loaded:
        raise click.ClickException(f"{path}: a claim file holds a mapping with name and definition")
    return loaded


@click.group()
def claims() -> None:
    """A paper's claims as tested comparisons: two or more arms (queries selecting runs), a metric, a
    direction, a smallest effect, a test, alpha and a family (Holm), evaluated on the runs as they end;
    a claim locked before its runs start is pre-registered."""


CLAIM_PROJECT_HELP = "the project of a claim given by name (default: default); an id needs none"


@claims.command("list")
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def claims_list(project: str | None, api_url: str | None, token: str | None) -> None:
    """The project's claims: id, verdict, pre-registration, version, family and name."""
    with _client(api_url, token) as client:
        items = client.list_claims(_project_id(client, project))
    if not items:
        click.echo(f"project {project or 'default'!r} has no claims")
        return
    click.echo(f"{'id':>6}  {'verdict':<13} {'pre-registration':<18} {'ver':>3}  {'family':<20} name")
    for c in items:
        ev = c["evaluation"]
        click.echo(
            f"{c['id']:>6}  {ev['verdict']:<13} {ev['preregistration']['status']:<18} {c['version']:>3}  "
            f"{ev['family'][:20]:<20} {c['name']}"
        )


@claims.command("show")
@click.argument("claim_ref", metavar="NAME_OR_ID")
@click.option("--project", default=None, help=CLAIM_PROJECT_HELP)
@click.option("--json", "as_json", is_flag=True, help="the claim and its evaluation as JSON")
@client_options
@friendly_errors
def claims_show(
    claim_ref: str, project: str | None, as_json: bool, api_url: str | None, token: str | None
) -> None:
    """A claim's card: verdict, pre-registration, each arm's n, mean and interval, each comparison's
    effect, interval, p-value adjusted within its family, and the n a power calculation asks for."""
    with _client(api_url, token) as client:
        claim = _find_claim(client, project, claim_ref)
    if as_json:
        click.echo(json.dumps(claim, indent=2))
    else:
        click.echo("\n".join(claim_card(claim)))


@claims.command("create")
@click.argument("claim_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--project", default=None, help="project name (default: default)")
@client_options
@friendly_errors
def claims_create(claim_file: Path, project: str | None, api_url: str | None, token: str | None) -> None:
    """State the claim of CLAIM_FILE (YAML or JSON: name, definition: section, arms, metric, direction,
    min_effect, read, test, alpha, power, family)."""
    body = _definition_file(claim_file)
    with _client(api_url, token) as client:
        claim = client.create_claim(
            _project_id(client, project), str(body.get("name", "")), body["definition"]
        )
    click.echo("\n".join(claim_card(claim)))


@claims.command("edit")
@click.argument("claim_ref", metavar="NAME_OR_ID")
@click.argument("claim_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--project", default=None, help=CLAIM_PROJECT_HELP)
@client_options
@friendly_errors
def claims_edit(
    claim_ref: str, claim_file: Path, project: str | None, api_url: str | None, token: str | None
) -> None:
    """Replace a claim's definition (and its name, if the file's differs): a changed definition is a new
    version, and a version other than the locked one is not pre-registered."""
    body = _definition_file(claim_file)
    with _client(api_url, token) as client:
        claim = _find_claim(client, project, claim_ref)
        name = body.get("name")
        claim = client.update_claim(
            claim["id"],
            name=str(name) if name and name != claim["name"] else None,
            definition=body["definition"],
        )
    click.echo("\n".join(claim_card(claim)))


@claims.command("lock")
@click.argument("claim_ref", metavar="NAME_OR_ID")
@click.option("--project", default=None, help=CLAIM_PROJECT_HELP)
@client_options
@friendly_errors
def claims_lock(claim_ref: str, project: str | None, api_url: str | None, token: str | None) -> None:
    """Pre-register a claim: lock its current version (its hash and the time are recorded)."""
    with _client(api_url, token) as client:
        claim = client.lock_claim(_find_claim(client, project, claim_ref)["id"])
    pre = claim["evaluation"]["preregistration"]
    click.echo(
        f"claim {claim['id']} ({claim['name']}) version {pre['locked_version']} locked, sha256 "
        f"{pre['locked_hash']}: {pre['status']}"
    )


@claims.command("delete")
@click.argument("claim_ref", metavar="NAME_OR_ID")
@click.option("--project", default=None, help=CLAIM_PROJECT_HELP)
@client_options
@friendly_errors
def claims_delete(claim_ref: str, project: str | None, api_url: str | None, token: str | None) -> None:
    """Delete a claim: its author or a project admin may."""
    with _client(api_url, token) as client:
        claim = _find_claim(client, project, claim_ref)
        client.delete_claim(claim["id"])
    click.echo(f"claim {claim['id']} ({claim['name']}) deleted")


@click.group()
def report() -> None:
    """Reports: a team's write-up of a result (docs/reports.md)."""


REPORT_SUFFIX = {"html": ".html", "md": "-md.zip", "latex": "-latex.zip"}


@report.command("export")
@click.argument("report_id", type=int)
@click.option(
    "--format", "fmt", type=click.Choice(["html", "md", "latex"]), default="html", show_default=True
)
@click.option("--revision", type=int, default=None, help="the published revision (default: the latest)")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="the file to write (default: report-<id>-r<revision>.html, -md.zip or -latex.zip here)",
)
@client_options
@friendly_errors
def report_export(
    report_id: int,
    fmt: str,
    revision: int | None,
    output: Path | None,
    api_url: str | None,
    token: str | None,
) -> None:
    """Write a published revision of report REPORT_ID: one HTML file that opens offline (html), Markdown
    with SVG figures (md, a zip) or a LaTeX folder with vector figures (latex, a zip)."""
    with _client(api_url, token) as client:
        if revision is None:
            revisions = client.list_report_revisions(report_id)
            if not revisions:
                raise click.ClickException(f"report {report_id} has no published revision: publish it first")
            revision = revisions[-1]["number"]
        dest = output or Path(f"report-{report_id}-r{revision}{REPORT_SUFFIX[fmt]}")
        size = client.export_report(
            report_id, revision, dest, format="md" if fmt == "md" else "latex" if fmt == "latex" else "html"
        )
    click.echo(f"wrote {dest} ({size} bytes, revision {revision}, {fmt})")


COMMANDS: tuple[click.Command, ...] = (submit, runs, experiments, secrets, datasets, views, claims, report)
