"""A data path ``dataset:<name>`` names a dataset uploaded to the run's project. On the platform
the run's context downloads it with the run's own token into the run's folder, and ``worker.runtime.confined``
hands the kind that local file; a local run refuses it; a hostile name is refused before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.worker.worker_fake_api import FakeApi
from worker.runtime import confined
from worker.runtime.logcapture import capture_logs
from worker.specs.confine import Refused
from worker.tracking.context import RunError
from worker.tracking.tracked import ApiRunContext
from worker.tracking.writer import WriterOptions

FAST = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)
DATA = b'{"prompt": "2+2", "answer": "4"}\n'


def test_a_dataset_is_downloaded_into_the_runs_folder_and_confined(tmp_path: Path) -> None:
    fake = FakeApi(run_id=7)
    fake.run.update(status="running")
    fake.datasets["qa.jsonl"] = DATA
    with fake.run_client() as client:
        ctx = ApiRunContext(client, 7, 1, seed=0, device="cpu", artifact_root=tmp_path, options=FAST)
        with capture_logs(ctx):
            path = confined.data_file("dataset:qa.jsonl", "data.path")
            assert path.read_bytes() == DATA
            assert path == (tmp_path / "datasets" / "run-7" / "qa.jsonl").resolve()
            assert confined.data_file("dataset:qa.jsonl", "data.path") == path  # fetched once
            with pytest.raises(RunError, match=r"data\.path: dataset 'other\.jsonl'"):  # the API's 403
                confined.data_file("dataset:other.jsonl", "data.path")
            for hostile in ("dataset:../x", "dataset:/etc/passwd", "dataset:a/b", "dataset:.env"):
                with pytest.raises(Refused, match=r"data\.skills"):
                    confined.data_file(hostile, "data.skills")
        ctx.close("failed")
    # the copy goes with the attempt: nothing of it stays on the worker's disk
    assert not (tmp_path / "datasets" / "run-7").exists()
    assert sum("/datasets/qa.jsonl" in r for r in fake.requests) <= 1
    assert not any("/datasets/" in r and "qa.jsonl" not in r and "other" not in r for r in fake.requests)
    # outside the run's scope nothing fetches it
    with pytest.raises(Refused, match="only a run on the platform"):
        confined.data_file("dataset:qa.jsonl", "data.path")


def test_a_link_planted_in_the_runs_folder_is_refused(tmp_path: Path) -> None:
    fake = FakeApi(run_id=7)
    fake.run.update(status="running")
    fake.datasets["qa.jsonl"] = DATA
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "store" / "datasets" / "run-7"
    folder.mkdir(parents=True)
    (folder / "qa.jsonl").symlink_to(outside / "qa.jsonl")
    with fake.run_client() as client:
        ctx = ApiRunContext(
            client, 7, 1, seed=0, device="cpu", artifact_root=tmp_path / "store", options=FAST
        )
        with capture_logs(ctx), pytest.raises(Refused, match="outside"):
            confined.data_file("dataset:qa.jsonl", "data.path")
        ctx.close("failed")
    assert not (outside / "qa.jsonl").exists()


def test_closing_removes_a_folder_link_planted_for_the_run_but_nothing_it_points_to(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the run's")
    (tmp_path / "store" / "datasets").mkdir(parents=True)
    (tmp_path / "store" / "datasets" / "run-7").symlink_to(outside, target_is_directory=True)
    fake = FakeApi(run_id=7)
    fake.run.update(status="running")
    with fake.run_client() as client:
        ctx = ApiRunContext(
            client, 7, 1, seed=0, device="cpu", artifact_root=tmp_path / "store", options=FAST
        )
        ctx.close("succeeded", final=False)
    assert not (tmp_path / "store" / "datasets" / "run-7").is_symlink()
    assert (outside / "keep.txt").read_text() == "not the run's"


def test_a_store_path_still_resolves_in_the_data_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONLAB_CACHE", str(tmp_path))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "qa.jsonl").write_bytes(DATA)
    assert confined.data_file("qa.jsonl", "data.path").read_bytes() == DATA


def test_a_carma_run_on_the_platform_reads_its_uploaded_data(tmp_path: Path) -> None:
    """End to end through the executor: the kind's data.path and synonyms.map_path name datasets, which
    the run downloads with its token before it reads them."""
    import json

    from common.settings import SharedSettings
    from tests.worker.kinds.test_carma_kind import IDM_ROWS, SYNONYMS
    from worker.executor import execute

    spec = {
        "seed": 1,
        "model": {"name": "tiny-gpt2"},
        "data": {"source": "jsonl", "path": "dataset:idm.jsonl"},
        "carma": {"lambda": 0.3, "layers": [0, 1]},
        "train": {"batch_size": 4, "max_steps": 2, "warmup_steps": 1, "eval_interval": 2, "log_every": 1},
        "cap": {"enabled": False},
        "synonyms": {"source": "json", "map_path": "dataset:synonyms.json"},
        "resources": {"device": "cpu"},
    }
    fake = FakeApi(spec=spec, kind="carma")
    fake.datasets["idm.jsonl"] = "".join(
        json.dumps({"text": t, "label": w}) + "\n" for t, w in IDM_ROWS
    ).encode()
    fake.datasets["synonyms.json"] = json.dumps(SYNONYMS).encode()
    settings = SharedSettings(home=tmp_path / "home", heartbeat_interval=0.05)
    status = execute(fake.run["id"], 1, settings, client=fake.client(), writer_options=FAST, worker="w:1")
    assert status == "succeeded", fake.finishes
    assert any("dataset 'idm.jsonl' downloaded for data.path" in line for line in fake.logs)
    assert any("dataset 'synonyms.json' downloaded for synonyms.map_path" in line for line in fake.logs)
    folder = Path(settings.artifact_root) / "datasets" / f"run-{fake.run['id']}"
    assert not folder.exists()  # both copies removed once the run ended
