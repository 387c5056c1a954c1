"""``reasonlab run SPEC_FILE``: run a spec on this machine without a server (worker.local), with a
progress bar; tracking goes to local files and MLflow."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.specfile import experiment_file


@click.command()
@click.argument("spec_file")
@click.option("--kind", default=None, help="the kind, when the spec file does not name it")
@click.option(
    "--out",
    "out_dir",
    default=None,
    help="output folder (default <REASONLAB_HOME or .reasonlab>/runs/<spec name>, outside the source tree)",
)
@click.option(
    "--mlflow", "mlflow_uri", default=None, help="MLflow tracking URI (default: sqlite in the out folder)"
)
@click.option("--no-mlflow", is_flag=True, help="track to local files only")
def run(
    spec_file: str, kind: str | None, out_dir: str | None, mlflow_uri: str | None, no_mlflow: bool
) -> None:
    """Run SPEC_FILE here, without a server: tracking to local files and MLflow, with a progress bar."""
    from pydantic import ValidationError
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from worker.local import run_local

    doc = experiment_file(spec_file, None, kind)
    home = Path(os.environ.get("REASONLAB_HOME", ".reasonlab"))
    out = Path(out_dir or home / "runs" / doc["name"]).resolve()
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


COMMANDS: tuple[click.Command, ...] = (run,)
