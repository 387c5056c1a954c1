"""Upload a run's local log (``reasonlab sync``): an offline run, or an online one's unsent tail.

The first sync of a folder opens an external run from the log's ``init`` record (experiment, name,
config, tags, group, provenance) and remembers its id in ``server.json`` beside the log; a later sync
reopens that run (``resume="must"``: a new attempt) instead. Every point is sent again each time: the API
stores a point once per run, key and step (an upsert), so syncing twice, or after the script logged more,
duplicates nothing. The run then ends as its log says (its last ``finish`` record), or as failed when the
log stops without one (the script was killed). ``watch`` follows a log still being written until it
finishes, sending what is appended and a heartbeat at each poll.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonlab_sdk.client import FinishStatus, ReasonLabClient
from reasonlab_sdk.spool import LOG_NAME, read

SERVER_FILE = "server.json"
BATCH = 5_000
UNFINISHED = "crashed: the local log ends without a finish (the script was killed or is still running)"


@dataclass
class Synced:
    run_id: int
    created: bool
    points: int  # points sent (each once per sync)
    status: str | None  # how the run was ended; None while watched and cut short
    dropped: int  # torn or corrupt lines of the log left out


def server_run(folder: Path) -> dict[str, Any] | None:
    """``{"run_id", "project_id"}`` of the run this folder was uploaded to, if any."""
    path = folder / SERVER_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def remember(folder: Path, run_id: int, project_id: int) -> None:
    (folder / SERVER_FILE).write_text(json.dumps({"run_id": run_id, "project_id": project_id}))


def _project_id(client: ReasonLabClient, project: str) -> int:
    found = next((p["id"] for p in client.list_projects() if p["name"] == project), None)
    if found is None:
        raise ValueError(f"project {project!r} not found (or you are not in it)")
    return found


def _opening(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The body that opens the run, from the log's first ``init`` record."""
    init = next((r for r in records if r.get("t") == "init"), None)
    if init is None:
        raise ValueError("the log has no init record: it was not written by reasonlab_sdk.init")
    keys = ("experiment", "name", "config", "tags", "group", "provenance")
    return {k: init[k] for k in keys if init.get(k) is not None}


def sync_folder(
    client: ReasonLabClient,
    folder: Path,
    project: str = "default",
    *,
    watch: bool = False,
    interval: float = 2.0,
    say: Callable[[str], None] = lambda _: None,
) -> Synced:
    """Upload the run in ``folder`` (see the module's docstring); ``client`` authenticates as a member of
    ``project`` (used on the first sync only: the run's project is remembered with its id)."""
    log = read(folder / LOG_NAME)
    if not log.records:
        raise ValueError(f"{folder}: no run log ({LOG_NAME}) here")
    known = server_run(folder)
    if known is None:
        project_id = _project_id(client, project)
        opened = client.open_external_run(project_id, {**_opening(log.records), "resume": "never"})
        remember(folder, opened["id"], project_id)
    else:
        project_id = int(known["project_id"])
        opened = client.open_external_run(project_id, {"id": int(known["run_id"]), "resume": "must"})
    run_id, attempt = opened["id"], opened["attempt"]
    writer = client.with_token(opened["run_token"])
    say(f"{folder}: run {run_id} ({'created' if known is None else f'attempt {attempt}'})")
    sent_seq, points, dropped = 0, 0, log.dropped
    while True:
        fresh = [r for r in log.records if r.get("seq", 0) > sent_seq]
        points += _send(writer, run_id, attempt, fresh, say)
        sent_seq = max([sent_seq, *(r.get("seq", 0) for r in fresh)])
        last = _last_session(log.records)
        finish = next((r for r in reversed(last) if r.get("t") == "finish"), None)
        if finish is not None or not watch:
            status: FinishStatus = finish["status"] if finish else "failed"
            error = finish.get("error") if finish else UNFINISHED
            writer.finish(run_id, attempt, status, error=error)
            say(f"{folder}: run {run_id} {status}, {points} point(s) sent")
            return Synced(run_id, known is None, points, status, dropped)
        writer.heartbeat(run_id, attempt)
        time.sleep(interval)
        log = read(folder / LOG_NAME)
        dropped = log.dropped


def _last_session(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records since the log's last init or resume (what the script's latest session wrote)."""
    starts = [i for i, r in enumerate(records) if r.get("t") in ("init", "resume")]
    return records[starts[-1] :] if starts else records


def _send(
    writer: ReasonLabClient,
    run_id: int,
    attempt: int,
    records: list[dict[str, Any]],
    say: Callable[[str], None],
) -> int:
    points = [
        {"key": r["key"], "step": r["step"], "value": r["value"]} for r in records if r.get("t") == "point"
    ]
    for i in range(0, len(points), BATCH):
        writer.post_metrics(run_id, points[i : i + BATCH], attempt=attempt, compact=True)
    params: dict[str, Any] = {}
    for r in records:
        if r.get("t") == "params":
            params |= r["params"]
        elif r.get("t") == "artifact":
            source = Path(r["path"])
            if source.is_file():
                writer.upload_artifact(run_id, r["name"], source, attempt=attempt)
            else:
                say(f"artifact {r['name']!r}: {source} is gone; not uploaded")
    if params:
        writer.post_params(run_id, params, attempt=attempt)
    return len(points)
