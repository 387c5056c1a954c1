"""An experiment's runs table as a file (``GET /experiments/{id}/runs/export``): the columns the
dashboard's runs table shows, as CSV (streamed) or Parquet.

Columns, in order: ``run_id``, ``number`` (1-based, as the dashboard and the run page count),
``name``, ``status``, ``attempt`` (the attempts counted against ``max_attempts``), ``released`` (the
attempts handed back at a worker's shutdown, not counted), ``created_at``, ``started_at``, ``finished_at``,
``duration_s``
(the seconds workers spent on a finished run over all its attempts, without the downtime between them,
as the run page's run time; a run without attempt records, from before migration 0013: its start to its
end; empty while it runs or never ran), then ``params.<path>`` for every field of the resolved spec
(steps, batch size, model width as much as the swept parameters: the whole spec, flattened with ``.``, as
MLflow's params and the query language's ``params.`` name it; a field only some runs have is empty for the
others), ``logged.<key>`` for every parameter a run logged itself (``ctx.log_params``, e.g.
``logged.derived.parameters``) and ``metrics.<key>`` for every metric's latest value (MLflow's export
names them so too; the machine samples ``system/...`` are left out, as in the dashboard's table). The
times and metrics come from the encoded runs table that the experiment page reads
(backend/experiments/table.py); the specs from one more select of the experiment's runs.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from backend.experiments import repository, table
from backend.exports.tables import Column
from backend.models import Experiment
from common.runs import SYSTEM_METRIC_PREFIX


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _duration(
    status: str, started: datetime | None, finished: datetime | None, ended_seconds: float | None
) -> float | None:
    """A run's ``duration_s``: its ended attempts' seconds (a run requeued to wait again: the work so far),
    none while it runs; a run without attempt records (before migration 0013) its start to its end."""
    if status == "running":
        return None
    if ended_seconds is not None:
        return ended_seconds
    if status == "queued" or started is None or finished is None or finished < started:
        return None
    return (finished - started).total_seconds()


def runs_columns(
    session: Session, experiment: Experiment, statuses: Collection[str] | None = None
) -> list[Column]:
    """The export's columns, only the runs whose status is in ``statuses`` when given."""
    data: dict[str, Any] = json.loads(
        table.cached_runs_table_json(session, experiment.id, experiment.created_at)
    )
    keep = [i for i, s in enumerate(data["status"]) if statuses is None or s in statuses]

    def pick(values: list[Any]) -> list[Any]:
        return [values[i] for i in keep]

    started = [_time(t) for t in pick(data["started_at"])]
    finished = [_time(t) for t in pick(data["finished_at"])]
    columns: list[Column] = [
        ("run_id", pick(data["id"])),
        ("number", [i + 1 for i in pick(data["index"])]),
        ("name", pick(data["name"])),
        ("status", pick(data["status"])),
        # the attempts counted against max_attempts, as the dashboard and the query language count them
        ("attempt", [a - r for a, r in zip(pick(data["attempt"]), pick(data["released"]), strict=True)]),
        ("released", pick(data["released"])),
        ("created_at", [_time(t) for t in pick(data["created_at"])]),
        ("started_at", started),
        ("finished_at", finished),
        (
            "duration_s",
            [
                _duration(*cells)
                for cells in zip(
                    pick(data["status"]), started, finished, pick(data["ended_seconds"]), strict=True
                )
            ],
        ),
    ]
    swept = {name: pick(values) for name, values in data["params"].items()}
    columns += _spec_columns(session, experiment.id, data["id"], keep, swept)
    columns += [
        (f"metrics.{key}", pick(values))
        for key, values in sorted(data["summary"].items())
        if not key.startswith(SYSTEM_METRIC_PREFIX)
    ]
    return columns


def _flat(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"train": {"lr": 0.1}}`` -> ``{"train.lr": 0.1}``; lists stay values (a cell of JSON text)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict) and item:
            out.update(_flat(item, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = item
    return out


def _spec_columns(
    session: Session, experiment_id: int, ids: list[int], keep: list[int], swept: dict[str, list[Any]]
) -> list[Column]:
    """``params.<path>`` of each kept run's resolved spec and ``logged.<key>`` of its logged params, names
    sorted, ``None`` where a run has no such field. ``ids`` is the runs table's id column (index order);
    ``swept`` the kept runs' swept params (``runs.params``, the runs table's columns), which name a spec
    path each and are taken as the runs table shows them."""
    by_id = {i: (spec, logged) for i, spec, logged in repository.run_specs(session, experiment_id)}
    rows = [by_id.get(ids[i], ("{}", None)) for i in keep]
    specs = [_flat(json.loads(spec or "{}")) for spec, _ in rows]
    for name, values in swept.items():
        for flat, value in zip(specs, values, strict=True):
            if value is not None or name not in flat:
                flat[name] = value
    logged = [json.loads(text) if text else {} for _, text in rows]
    columns: list[Column] = []
    for prefix, flats in (("params", specs), ("logged", logged)):
        names = sorted({name for flat in flats for name in flat})
        columns += [(f"{prefix}.{name}", [flat.get(name) for flat in flats]) for name in names]
    return columns


def filename(experiment: Experiment, extension: str) -> str:
    """``experiment-<id>-<name>-runs.<ext>``, the name's characters outside ``[A-Za-z0-9._-]`` as ``_``."""
    slug = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in experiment.name)
    return f"experiment-{experiment.id}-{slug.strip('._')[:60] or 'runs'}-runs.{extension}"
