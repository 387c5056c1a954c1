"""Kind ``diagnostic`` through a LocalRunContext: a crashed or stopped run resumed in a fresh context
ends with exactly the final loss of an uninterrupted run (same seed), and logs every step once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from worker.kinds.diagnostic.diagnostic import DiagnosticFailure, run
from worker.specs.diagnostic.diagnostic import DiagnosticSpec
from worker.tracking import LocalRunContext

STEPS = 30


def _spec(**train: Any) -> DiagnosticSpec:
    return DiagnosticSpec.model_validate(
        {
            "seed": 11,
            "data": {"n_samples": 96, "n_features": 4},
            "model": {"hidden": 8, "layers": 2},
            "train": {"steps": STEPS, "batch_size": 32, "checkpoint_every": 5, **train},
        }
    )


def _run(spec: DiagnosticSpec, out: Path, **kwargs: Any) -> LocalRunContext:
    ctx = LocalRunContext(out, seed=spec.seed, device="cpu", **kwargs)
    try:
        run(spec, ctx)
    finally:
        ctx.close("succeeded")
    return ctx


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _final(out: Path) -> dict[str, Any]:
    payload: dict[str, Any] = _jsonl(out / "results.jsonl")[-1]["payload"]
    return payload


def test_uninterrupted_run_logs_every_step_and_a_result(tmp_path: Path) -> None:
    _run(_spec(), tmp_path)
    steps = [p["step"] for p in _jsonl(tmp_path / "metrics.jsonl") if p["key"] == "loss"]
    assert steps == list(range(1, STEPS + 1))
    result = _final(tmp_path)
    assert result["steps"] == STEPS and result["resumed_from_step"] is None
    assert result["final_loss"] < result["initial_loss"]


def test_resume_after_crash_gives_the_uninterrupted_final_loss_exactly(tmp_path: Path) -> None:
    _run(_spec(), tmp_path / "reference")
    reference = _final(tmp_path / "reference")

    out = tmp_path / "crashed"
    with pytest.raises(DiagnosticFailure):
        _run(_spec(fail_at_step=22), out)  # 2/3 of the way; checkpoints at 5..20
    assert not (out / "results.jsonl").exists()
    _run(_spec(fail_at_step=22), out)  # a fresh context resumes from step 20 (and is past the failure)

    resumed = _final(out)
    assert resumed["resumed_from_step"] == 20
    assert resumed["final_loss"] == reference["final_loss"]  # bit for bit
    assert resumed["initial_loss"] == reference["initial_loss"]
    # every step's loss equals the reference's; steps 21 and 22 were re-logged with the same values
    reference_loss = {
        p["step"]: p["value"] for p in _jsonl(tmp_path / "reference" / "metrics.jsonl") if p["key"] == "loss"
    }
    for point in _jsonl(out / "metrics.jsonl"):
        if point["key"] == "loss":
            assert point["value"] == reference_loss[point["step"]]
    assert {p["step"] for p in _jsonl(out / "metrics.jsonl") if p["key"] == "loss"} == set(
        range(1, STEPS + 1)
    )


def test_stop_checkpoints_and_resume_matches(tmp_path: Path) -> None:
    _run(_spec(), tmp_path / "reference")
    out = tmp_path / "stopped"
    holder: dict[str, LocalRunContext] = {}

    def stop_at_17(done: int, total: int, message: str) -> None:
        if done == 17:
            holder["ctx"].request_stop("cancel")

    ctx = LocalRunContext(out, seed=11, device="cpu", progress_callback=stop_at_17)
    holder["ctx"] = ctx
    run(_spec(), ctx)
    ctx.close("cancelled")
    loaded = ctx.load_checkpoint()
    assert loaded is not None and loaded[1] == 17  # checkpointed where it stopped, not at a multiple of 5

    _run(_spec(), out)
    assert _final(out)["resumed_from_step"] == 17
    assert _final(out)["final_loss"] == _final(tmp_path / "reference")["final_loss"]
