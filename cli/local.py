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
@click.option(
    "--fresh",
    is_flag=True,
    help="start over in an output folder that holds an earlier run (its run files are deleted) instead of "
    "resuming it",
)
def run(
    spec_file: str,
    kind: str | None,
    out_dir: str | None,
    mlflow_uri: str | None,
    no_mlflow: bool,
    fresh: bool,
) -> None:
    """Run SPEC_FILE here, without a server: tracking to local files and MLflow, with a progress bar.

    An output folder that holds an earlier run of the spec is resumed from its last checkpoint (said
    before it starts); --fresh starts over, --out another folder keeps both."""
    from pydantic import ValidationError
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from worker.local import run_local

    doc = experiment_file(spec_file, None, kind)
    home = Path(os.environ.get("REASONLAB_HOME", ".reasonlab"))
    out = Path(out_dir or home / "runs" / doc["name"]).resolve()
    uri = None if no_mlflow else (mlflow_uri or f"sqlite:///{out / 'mlflow.db'}")
    if fresh:
        for removed in clear_run_folder(out):
            click.echo(f"removed {removed}")
    else:
        said = earlier_run(out)
        if said:
            click.echo(said)
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


# what a run writes in its output folder (worker.local, worker.tracking.sinks.LocalSink): --fresh deletes
# these and nothing else, so an --out that names a folder with other files in it loses none of them
RUN_FILES = ("metrics.jsonl", "results.jsonl", "params.json", "logs.txt", "status.json", "mlflow.db")
RUN_FOLDERS = ("checkpoints", "examples", "mlartifacts")


def earlier_run(out: Path) -> str | None:
    """What ``reasonlab run`` says before it resumes an earlier run in ``out``; None for a new folder."""
    import json

    from worker.tracking.checkpoints import checkpoint_files

    status_file, checkpoints = out / "status.json", out / "checkpoints"
    if not status_file.exists() and not checkpoints.is_dir():
        return None
    try:
        ended = json.loads(status_file.read_text()).get("status", "unknown")
    except (OSError, ValueError):
        ended = "unfinished"
    steps = [step for step, _ in checkpoint_files(checkpoints)] if checkpoints.is_dir() else []
    start = f"from its checkpoint at step {max(steps)}" if steps else "from the start (it left no checkpoint)"
    return (
        f"{out} holds an earlier run of this spec ({ended}): resuming it {start}, its files updated in "
        "place; to start fresh: reasonlab run --fresh (deletes that run's files) or --out another folder"
    )


def clear_run_folder(out: Path) -> list[Path]:
    """Delete the run files of ``out`` (RUN_FILES, RUN_FOLDERS) and return what was deleted."""
    import shutil

    removed = []
    for name in RUN_FILES:
        if (out / name).is_file():
            (out / name).unlink()
            removed.append(out / name)
    for name in RUN_FOLDERS:
        if (out / name).is_dir():
            shutil.rmtree(out / name)
            removed.append(out / name)
    return removed


COMMANDS: tuple[click.Command, ...] = (run,)
