"""Artifacts reach every worker host: two real `reasonlab worker` processes with their own
homes and artifact roots (no shared volume), the API on Postgres + Redis. The run is killed with -9 on
host 1 after a checkpoint; host 2 has never seen it, downloads the checkpoint through the API and resumes
from it (attempt 2 starts at the checkpoint's step, not at 0) to the same loss as an uninterrupted twin.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.platform import Platform, wait_for

# kill -9 on one host, resume on another: the fault tier (README, Testing)
pytestmark = [pytest.mark.slow, pytest.mark.fault]

SPEC = {"seed": 11, "train": {"steps": 60, "checkpoint_every": 10, "step_delay": 0.15}}


def _host(platform: Platform, root: Path) -> dict[str, str]:
    """A worker host of its own: home and artifact root on its local disk, no MLflow (the API mirrors
    runs to MLflow)."""
    return {"REASONLAB_HOME": str(root / "home"), "REASONLAB_ARTIFACT_ROOT": str(root / "artifacts")}


def _checkpoint_steps(platform: Platform, run_id: int) -> list[int]:
    items = platform.client.list_artifacts(run_id)["items"]
    return sorted(
        int(i["path"].removeprefix("checkpoints/step-").removesuffix(".pt"))
        for i in items
        if i["kind"] == "checkpoint"
    )


def test_a_run_killed_on_one_host_resumes_from_its_checkpoint_on_another(
    pg_platform: Platform, tmp_path: Path
) -> None:
    host1, host2 = tmp_path / "host1", tmp_path / "host2"
    pg_platform.start_api()
    worker1 = pg_platform.start_worker(_host(pg_platform, host1))
    rid = pg_platform.submit(SPEC, name="two-hosts")["runs"][0]["id"]
    wait_for(lambda: len(pg_platform.loss_steps(rid)) >= 25, 120, "the run to pass step 25")
    pg_platform.kill9_worker(worker1)
    # the checkpoints are in the API's store, not only on host 1's disk
    stored = _checkpoint_steps(pg_platform, rid)
    assert stored and stored[-1] >= 20, stored
    assert (host1 / "artifacts" / "checkpoints" / f"run-{rid}" / f"step-{stored[-1]}.pt").is_file()
    assert not host2.exists()

    wait_for(
        lambda: pg_platform.client.get_run(rid)["status"] == "queued", 60, "the reaper to requeue the run"
    )
    pg_platform.start_worker(_host(pg_platform, host2))
    (final,) = pg_platform.wait_finished([rid])
    assert final["status"] == "succeeded" and final["attempt"] == 2, pg_platform.diagnostics()
    (result,) = pg_platform.client.get_results(rid)
    assert result["payload"]["resumed_from_step"] == stored[-1], pg_platform.diagnostics()
    logs = "\n".join(i["line"] for i in pg_platform.client.get_logs(rid)["items"])
    assert f"resuming from the checkpoint of step {stored[-1]}" in logs
    assert f"checkpoint step {stored[-1]} downloaded from the artifact store" in logs
    # host 2 held none of the run before: what it resumed from came through the API
    assert [s for s, _ in pg_platform.loss_steps(rid)] == list(range(1, 61))

    # the final model and the newest checkpoints are stored; the model is the one host 2 wrote
    listing = pg_platform.client.list_artifacts(rid)
    assert {i["path"] for i in listing["items"]} == {
        "checkpoints/step-50.pt",
        "checkpoints/step-60.pt",
        "model/step-60.pt",
    }
    downloaded = tmp_path / "model.pt"
    pg_platform.client.download_artifact(rid, "model/step-60.pt", downloaded)
    local = host2 / "artifacts" / "checkpoints" / f"run-{rid}" / "step-60.pt"
    assert downloaded.read_bytes() == local.read_bytes()

    # the same spec uninterrupted (on host 2) ends on the same loss, bit for bit
    twin = pg_platform.submit({**SPEC, "train": {**SPEC["train"], "step_delay": 0.0}}, name="twin")
    (twin_final,) = pg_platform.wait_finished([twin["runs"][0]["id"]])
    assert twin_final["status"] == "succeeded"
    assert pg_platform.loss_steps(twin_final["id"]) == pg_platform.loss_steps(rid)
    assert final["summary"]["loss"] == twin_final["summary"]["loss"]
