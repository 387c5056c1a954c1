"""The tracking SDK's local side: key and value checks, the checksummed log and its torn tail, offline
runs and their offline resume (reasonlab_sdk/tracking.py, reasonlab_sdk/spool.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import reasonlab_sdk as rl
from reasonlab_sdk import spool
from reasonlab_sdk.tracking import flatten, metric_value


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def test_nested_dicts_flatten_with_slashes() -> None:
    assert flatten({"loss": 1, "eval": {"acc": 0.5, "per": {"a": 1}}}) == {
        "loss": 1,
        "eval/acc": 0.5,
        "eval/per/a": 1,
    }


def test_bad_keys_and_values_are_value_errors_naming_them() -> None:
    with pytest.raises(ValueError, match="'_private'"):
        metric_value("_private", 1.0)
    with pytest.raises(ValueError, match=r"'acc'.*not a number"):
        metric_value("acc", "high")
    with pytest.raises(ValueError, match="'acc'"):
        metric_value("acc", [1, 2])
    with pytest.raises(ValueError, match="not a string"):
        flatten({1: 2})  # type: ignore[dict-item]
    assert metric_value("x", True) == 1.0
    # JSON's strings for them (the log line and the ingest body are strict JSON), stored as those values
    assert metric_value("x", math.nan) == "NaN" and metric_value("x", math.inf) == "Infinity"
    assert metric_value("x", -math.inf) == "-Infinity"


def test_a_bad_call_records_nothing_and_loses_nothing_else(_runs_dir: Path) -> None:
    run = rl.init(mode="offline", config={"lr": 0.1})
    run.log({"loss": 1.0})
    with pytest.raises(ValueError, match="'acc'"):
        run.log({"loss": 2.0, "acc": object()})
    with pytest.raises(ValueError, match="step"):
        run.log({"loss": 2.0}, step=-1)
    # past the API's largest step (2**62) it would be refused at the server, past int64 not even encodable
    for step in (2**62 + 1, 2**63):
        with pytest.raises(ValueError, match="from 0 to 4611686018427387904"):
            run.log({"loss": 2.0}, step=step)
    run.log({"loss": 0.5})
    run.finish()
    points = [r for r in spool.read(run.spool_path).records if r["t"] == "point"]
    assert [(p["key"], p["step"], p["value"]) for p in points] == [("loss", 0, 1.0), ("loss", 1, 0.5)]


def test_keys_seen_before_take_the_fast_path_and_record_exactly_what_the_whole_way_records(
    _runs_dir: Path,
) -> None:
    """``Run.log``'s fast path (a flat call of known keys and Python floats or ints) against
    ``metric_value`` over ``flatten``, call by call: the same values, the same refusals."""
    run = rl.init(mode="offline")
    calls: list[dict[str, Any]] = [
        {"loss": 1.5, "acc": 0, "lr": 3e-4},  # first sight: the whole way
        {"loss": 1.25, "acc": 1, "lr": 3e-4},  # known keys, float and int: the fast path
        {"loss": math.nan, "acc": math.inf, "lr": -math.inf},  # the labels, on the fast path
        {"loss": True, "acc": 2**64, "lr": 0.5},  # a bool and a large int leave it (a bool is not an int)
        {"loss": 0.25, "eval": {"acc": 0.5}},  # a nested value: the whole way, its key joins the known
        {"loss": 0.125, "eval/acc": 0.75},
    ]
    for values in calls:
        run.log(values)
    for bad, match in (
        ({"loss": 1.0, "acc": None}, "'acc'"),
        ({"loss": 1.0, "acc": "high"}, "'acc'"),
        ({"loss": 1.0, "acc": 10**400}, "'acc'.*not a number"),  # past a float's range: not an OverflowError
        ({"loss": 1.0, "_acc": 1.0}, "'_acc'"),
    ):
        with pytest.raises(ValueError, match=match):
            run.log(bad)
    run.finish()
    points = [r for r in spool.read(run.spool_path).records if r["t"] == "point"]
    expected = [
        (k, step, metric_value(k, v)) for step, values in enumerate(calls) for k, v in flatten(values).items()
    ]
    assert [(p["key"], p["step"], p["value"]) for p in points] == expected
    assert [p["seq"] for p in points] == sorted(p["seq"] for p in points)  # numbered in order


def test_a_torn_tail_is_dropped_and_everything_before_kept(tmp_path: Path) -> None:
    log = spool.Spool(tmp_path / "r")
    log.append(*({"t": "point", "key": "x", "step": i, "value": float(i)} for i in range(3)))
    log.close()
    with open(log.path, "ab") as f:  # kill -9 in the middle of a write
        f.write(b'0badc0de {"t":"point","key":"x","st')
    got = spool.read(log.path)
    assert [r["step"] for r in got.records] == [0, 1, 2] and got.dropped == 1
    # a corrupt line (its checksum wrong) is dropped too, the rest kept
    lines = log.path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"value":1.0', b'"value":9.0')
    log.path.write_bytes(b"\n".join(lines))
    got = spool.read(log.path)
    assert [r["step"] for r in got.records] == [0, 2] and got.dropped == 2
    # reopened for appending, the torn tail is cut so the next record starts a line of its own
    again = spool.Spool(tmp_path / "r")
    again.append({"t": "point", "key": "x", "step": 3, "value": 3.0})
    again.close()
    assert [r["step"] for r in spool.read(log.path).records] == [0, 2, 3]


def test_an_offline_run_resumes_offline_after_its_last_step(_runs_dir: Path) -> None:
    first = rl.init(mode="offline", id="abc", config={"lr": 0.1})
    for _ in range(3):
        first.log({"loss": 1.0})
    first.finish()
    with pytest.raises(ValueError, match="resume"):
        rl.init(mode="offline", id="abc")  # resume "never" on a folder that holds a run
    with pytest.raises(ValueError, match="no offline run"):
        rl.init(mode="offline", id="nothing-here", resume="must")
    second = rl.init(mode="offline", id="abc", resume="must")
    second.log({"loss": 0.5})
    second.finish()
    records = spool.read(_runs_dir / "abc" / "log.jsonl").records
    assert [r["step"] for r in records if r["t"] == "point"] == [0, 1, 2, 3]
    assert [r["t"] for r in records if r["t"] in ("init", "resume", "finish")] == [
        "init",
        "finish",
        "resume",
        "finish",
    ]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(set(seqs))  # one sequence over both sessions


def test_the_environment_makes_a_run_offline(_runs_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OFFLINE", "1")
    with rl.init(config={"a": 1}) as run:  # no API anywhere: nothing is sent
        run.log({"x": 1})
    assert run.mode == "offline" and run.spool_path.parent.parent == _runs_dir


def test_an_exception_in_the_context_marks_the_run_failed_with_its_traceback(_runs_dir: Path) -> None:
    with pytest.raises(RuntimeError), rl.init(mode="offline") as run:
        run.log({"x": 1})
        raise RuntimeError("diverged")
    finish = [r for r in spool.read(run.spool_path).records if r["t"] == "finish"]
    assert finish[0]["status"] == "failed" and "RuntimeError: diverged" in finish[0]["error"]


def test_an_uncaught_exception_fails_open_runs_and_exit_finishes_them(
    _runs_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reasonlab_sdk import tracking

    seen: list[type[BaseException]] = []
    monkeypatch.setattr(tracking, "_previous_hook", lambda kind, exc, tb: seen.append(kind))
    crashed = rl.init(mode="offline")
    crashed.log({"x": 1})
    try:
        raise KeyError("missing batch")
    except KeyError as exc:
        tracking._excepthook(KeyError, exc, exc.__traceback__)  # what the interpreter calls
    assert seen == [KeyError]  # the previous hook still prints it
    finish = [r for r in spool.read(crashed.spool_path).records if r["t"] == "finish"]
    assert finish[0]["status"] == "failed" and "KeyError: 'missing batch'" in finish[0]["error"]
    left_open = rl.init(mode="offline")
    tracking._on_exit()  # interpreter exit
    finish = [r for r in spool.read(left_open.spool_path).records if r["t"] == "finish"]
    assert finish[0]["status"] == "succeeded"
