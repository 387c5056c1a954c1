"""`reasonlab runs list` shows each running run's ETA (issue 22, item 4: the API's estimate from the progress
rate of the run's current attempt), as the dashboard does; ``-`` where there is none. And `up --workers` takes 0 or more."""

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


def test_up_refuses_a_negative_number_of_workers() -> None:
    """`make up WORKERS=-1` is a mistake said before anything starts (0 is the API alone: workers elsewhere)."""
    out = CliRunner().invoke(main, ["up", "--workers", "-1"])
    assert out.exit_code == 2
    assert "--workers" in out.output and "x>=0" in out.output and "Traceback" not in out.output
