"""``reasonlab sync PATH...``: upload runs' local logs (offline runs, or an online run's unsent tail)."""

from __future__ import annotations

from pathlib import Path

import click

from cli.client import _client, client_options, unreachable


@click.command()
@click.argument(
    "paths", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--project", default="default", show_default=True, help="the project of runs synced the first time"
)
@click.option("--watch", is_flag=True, help="follow runs still being written until each finishes")
@click.option("--interval", type=click.FloatRange(min=0.1), default=2.0, show_default=True, metavar="SECONDS")
@client_options
def sync(
    paths: tuple[Path, ...],
    project: str,
    watch: bool,
    interval: float,
    api_url: str | None,
    token: str | None,
) -> None:
    """Upload each run folder (``./reasonlab-runs/<id>``; a folder of run folders syncs each): idempotent,
    so a second sync, or one after the run logged more, duplicates nothing."""
    from reasonlab_sdk.client import ApiError, ApiUnavailable
    from reasonlab_sdk.spool import LOG_NAME
    from reasonlab_sdk.sync import sync_folder

    folders = [
        f for p in paths for f in ([p] if (p / LOG_NAME).is_file() else sorted(p.glob(f"*/{LOG_NAME}")))
    ]
    folders = [f if f.is_dir() else f.parent for f in folders]
    if not folders:
        raise click.ClickException(f"no run log ({LOG_NAME}) in {', '.join(map(str, paths))}")
    client = _client(api_url, token)
    failed = 0
    for folder in folders:
        try:
            done = sync_folder(client, folder, project, watch=watch, interval=interval, say=click.echo)
        except ApiUnavailable as exc:
            raise click.ClickException(unreachable(exc)) from exc
        except (ApiError, ValueError) as exc:
            click.echo(f"{folder}: {exc}", err=True)
            failed += 1
            continue
        if done.dropped:
            click.echo(f"{folder}: {done.dropped} torn or corrupt line(s) of the log left out", err=True)
    if failed:
        raise SystemExit(1)


COMMANDS: tuple[click.Command, ...] = (sync,)
