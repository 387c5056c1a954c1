"""The MLflow mirror names a run's MLflow run after the run: the name a member gave it
(else ``run-<id>``) when the MLflow run is made, and a rename afterwards, while it runs or once it finished,
sent once (``mirror_runs.name_sent``, migration 0014), again after a crash between MLflow and the commit.
On SQLite and Postgres, against a real MLflow sqlite store (as test_mirror.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from backend.mirror.mlflow import MlflowTarget
from backend.mirror.service import Mirror
from tests.backend.conftest import Api
from tests.backend.test_mirror import Crash, Target, _drain, _finish, _mirror, _mlflow_id

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def target(mlflow_uri: str, tmp_path: Path) -> Target:
    return Target(MlflowTarget(mlflow_uri, tmp_path / "mlflow-artifacts"))


def _rename(api: Api, rid: int, name: str) -> None:
    r = api.client.patch(f"/api/v1/runs/{rid}", json={"name": name}, headers=api.h())
    assert r.status_code == 200, r.text


def _claim(api: Api, rid: int) -> None:
    r = api.client.post(f"/api/v1/runs/{rid}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker)
    assert r.status_code == 200, r.text


def _name(target: Target, mid: str) -> Any:
    return target.real.client.get_run(mid).info.run_name


@pytest.mark.heavy
def test_the_mlflow_run_is_named_after_the_run_and_follows_its_renames(api: Api, target: Target) -> None:
    rid = api.submit({"train": {"steps": 10}}).json()["runs"][0]["id"]
    _rename(api, rid, "baseline lr 0.1")  # before it ever ran: the MLflow run is made with this name
    _claim(api, rid)
    mirror: Mirror = _mirror(api, target)
    _drain(mirror)
    mid = _mlflow_id(api, rid)
    assert _name(target, mid) == "baseline lr 0.1"
    assert target.calls["set_tags"] == 0  # named when made, not renamed after

    _rename(api, rid, "baseline, kept")  # while it runs
    _drain(mirror)
    assert _name(target, mid) == "baseline, kept"
    assert target.calls["set_tags"] == 1
    _drain(mirror)
    assert target.calls["set_tags"] == 1  # sent once

    _finish(api, rid)
    _drain(mirror)
    assert target.real.client.get_run(mid).info.status == "FINISHED"
    renames = target.calls["set_tags"]
    _rename(api, rid, "final")  # a finished, fully mirrored run: due again, for its name only
    report = _drain(mirror)
    assert _name(target, mid) == "final"
    assert report.writes == 1 and target.calls["set_tags"] == renames + 1
    assert target.real.client.get_run(mid).info.status == "FINISHED"
    assert _drain(mirror).runs == 0  # nothing pending any more

    _rename(api, rid, "")  # cleared: back to run-<id>
    _drain(mirror)
    assert _name(target, mid) == f"run-{rid}"


def test_a_rename_sent_before_a_crash_is_sent_again(api: Api, target: Target) -> None:
    rid = api.submit({"train": {"steps": 10}}).json()["runs"][0]["id"]
    _claim(api, rid)
    mirror = _mirror(api, target)
    _drain(mirror)
    mid = _mlflow_id(api, rid)
    assert _name(target, mid) == f"run-{rid}"
    _rename(api, rid, "after the crash")
    target.crash_after = {"set_tags": target.calls["set_tags"] + 1}
    with pytest.raises(Crash):
        mirror.tick()
    target.crash_after = {}
    _drain(_mirror(api, target))  # a new API process: the rename is not recorded, so it is sent again
    assert _name(target, mid) == "after the crash"
    assert target.calls["set_tags"] == 2
