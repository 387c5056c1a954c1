"""``reasonlab sync`` (reasonlab_sdk/sync.py, cli/sync.py): an offline run, resumed offline, synced twice
and again after more steps, equals its online twin; a torn log; a log still being written (--watch)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import reasonlab_sdk as rl
from cli.sync import sync
from reasonlab_sdk.sync import UNFINISHED, server_run, sync_folder
from tests.backend.conftest import Api
from tests.backend.test_sdk_tracking import _client, _series


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def _script(run: rl.Run, steps: range) -> None:
    for step in steps:
        run.log({"loss": 1.0 / (step + 1), "eval": {"acc": step / 100}})


def test_offline_resume_and_syncs_equal_the_online_twin(api: Api) -> None:
    client = _client(api)
    twin = rl.init(experiment="twin", config={"lr": 0.1}, client=client)
    _script(twin, range(30))
    twin.finish()

    first = rl.init(mode="offline", id="local1", experiment="offline", config={"lr": 0.1})
    _script(first, range(10))
    first.finish()
    again = rl.init(mode="offline", id="local1", resume="must")
    _script(again, range(10, 20))
    again.finish()
    folder = again.folder
    synced = sync_folder(client, folder)
    assert synced.created and synced.points == 40 and synced.status == "succeeded"
    assert server_run(folder) == {"run_id": synced.run_id, "project_id": 1}
    twice = sync_folder(client, folder)  # nothing duplicated: the same run, the same points
    assert not twice.created and twice.run_id == synced.run_id
    more = rl.init(mode="offline", id="local1", resume="must")
    _script(more, range(20, 30))
    more.finish()
    sync_folder(client, folder)
    for key in ("loss", "eval/acc"):
        assert _series(api, synced.run_id, key) == _series(api, twin.id, key)
    run = api.client.get(f"/api/v1/runs/{synced.run_id}", headers=api.h()).json()
    assert run["status"] == "succeeded" and run["spec"] == {"lr": 0.1} and run["kind"] == "external"


def test_a_torn_offline_log_syncs_everything_before_the_tear(api: Api) -> None:
    run = rl.init(mode="offline", id="torn")
    _script(run, range(5))
    run.finish()
    with open(run.spool_path, "ab") as f:  # a second session killed mid-write
        f.write(b'12345678 {"t":"point","key":"loss","step":5,"val')
    synced = sync_folder(_client(api), run.folder)
    assert synced.dropped == 1 and synced.points == 10
    assert [s for s, _ in _series(api, synced.run_id, "loss")] == list(range(5))


def test_a_log_without_a_finish_ends_failed(api: Api) -> None:
    run = rl.init(mode="offline", id="killed")
    _script(run, range(3))
    run._queue.put(None)  # the sender writes what it has, and the script dies before finishing
    run._thread.join(5)
    synced = sync_folder(_client(api), run.folder)
    got = api.client.get(f"/api/v1/runs/{synced.run_id}", headers=api.h()).json()
    assert got["status"] == "failed" and got["error"] == UNFINISHED


@pytest.mark.heavy
def test_watch_follows_a_run_until_it_finishes(api: Api) -> None:
    run = rl.init(mode="offline", id="live")
    _script(run, range(3))
    time.sleep(1.0)  # the sender wrote those (it writes every 0.5 s)
    result: list[object] = []
    watcher = threading.Thread(
        target=lambda: result.append(sync_folder(_client(api), run.folder, watch=True, interval=0.2))
    )
    watcher.start()
    time.sleep(0.5)
    _script(run, range(3, 8))
    run.finish()
    watcher.join(30)
    assert result and [s for s, _ in _series(api, result[0].run_id, "loss")] == list(range(8))  # type: ignore[attr-defined]


def test_the_command_says_when_there_is_no_log(tmp_path: Path) -> None:
    got = CliRunner().invoke(sync, [str(tmp_path), "--token", "x"])
    assert got.exit_code == 1 and "no run log" in got.output
