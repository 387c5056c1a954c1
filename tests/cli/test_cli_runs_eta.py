"""`reasonlab runs list` shows each running run's ETA (the API's estimate from the progress
rate of the run's current attempt), as the dashboard does; ``-`` where there is none; its att column counts
the attempts as the allowance does, released ones apart. And `up --workers` takes 0 or
more."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import pytest
from click.testing import CliRunner

import cli.client as cli_client
from cli.client import eta_cell
from cli.main import main

NOW = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("offset", "text"),
    [
        (timedelta(seconds=42.7), "42s"),
        (timedelta(minutes=3, seconds=5), "3m 05s"),
        (timedelta(hours=1, minutes=2, seconds=30), "1h 02m"),
        (timedelta(seconds=0.4), "<1s"),
        (timedelta(seconds=-30), "<1s"),
    ],
)
def test_eta_cell_says_the_time_left(offset: timedelta, text: str) -> None:
    assert eta_cell((NOW + offset).isoformat(), NOW) == text


def test_eta_cell_without_an_estimate_or_with_a_naive_utc_time() -> None:
    assert eta_cell(None, NOW) == "-"
    naive = (NOW + timedelta(minutes=2)).replace(tzinfo=None).isoformat()
    assert eta_cell(naive, NOW) == "2m 00s"


class _Client:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def __enter__(self) -> _Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        return None

    def list_runs(self, **_: Any) -> dict[str, Any]:
        return {"items": self.items}


def _run(run_id: int, status: str, progress: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": run_id,
        "experiment_id": 1,
        "kind": "diagnostic",
        "status": status,
        "attempt": 1,
        "max_attempts": 3,
        "released": 0,
        "progress": progress,
        "name": None,
        "params": {},
    }


def test_runs_list_has_an_eta_column(monkeypatch: pytest.MonkeyPatch) -> None:
    soon = (datetime.now(UTC) + timedelta(minutes=10, seconds=30)).isoformat()
    items = [
        _run(7, "running", {"done": 40, "total": 100, "message": "", "eta_at": soon}),
        _run(8, "queued", {"done": 0, "total": 0, "message": "", "eta_at": None}),
    ]
    monkeypatch.setattr(cli_client, "_client", lambda *_: _Client(items))
    out = CliRunner().invoke(main, ["runs", "list"])
    assert out.exit_code == 0, out.output
    header, running, queued = out.output.splitlines()
    assert header.split()[:7] == ["id", "exp", "kind", "status", "att", "progress", "eta"]
    assert running.split()[5:8] == ["40/100", "10m", "30s"] or running.split()[5:8] == [
        "40/100",
        "10m",
        "29s",
    ]
    assert queued.split()[5:7] == ["-", "-"]


def test_runs_list_counts_attempts_and_shows_released_ones_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run given back at three Ctrl-Cs of `reasonlab up` is "1/3+3r" (attempt number
    4, none of the three counted), not "4"; a run retried after a failure is "2/3"."""
    idle = {"done": 0, "total": 0, "message": "", "eta_at": None}
    released = {**_run(7, "running", idle), "attempt": 4, "released": 3}
    retried = {**_run(8, "queued", idle), "attempt": 2}
    monkeypatch.setattr(
        cli_client, "_client", lambda *_: _Client([released, retried, _run(9, "queued", idle)])
    )
    out = CliRunner().invoke(main, ["runs", "list"])
    assert out.exit_code == 0, out.output
    rows = out.output.splitlines()[1:]
    assert [row.split()[4] for row in rows] == ["1/3+3r", "2/3", "1/3"]


def test_runs_show_says_the_counted_attempt_and_the_released_ones() -> None:
    run = {"attempt": 4, "released": 3, "max_attempts": 3}
    assert cli_client.attempt_line(run) == "1 of at most 3, resumed 3x after worker shutdowns (attempt #4)"
    assert cli_client.attempt_line({**run, "attempt": 2, "released": 0}) == "2 of at most 3"
    # an API from before the released field: the attempt as it says
    assert cli_client.attempt_cell({"attempt": 2, "max_attempts": 3}) == "2/3"


def test_up_refuses_a_negative_number_of_workers() -> None:
    """`make up WORKERS=-1` is a mistake said before anything starts (0 is the API alone: workers elsewhere)."""
    out = CliRunner().invoke(main, ["up", "--workers", "-1"])
    assert out.exit_code == 2
    assert "--workers" in out.output and "x>=0" in out.output and "Traceback" not in out.output
