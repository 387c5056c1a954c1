"""The SDK's system metrics (reasonlab_sdk/sysmetrics.py): what one sample reads from a fake /proc, the
fallback without /proc, GPUs from nvidia-smi and from a torch the script imported, a failing source, the
interval's environment variable, the keys being the worker's, and a tracked run's samples kept apart from
the script's own steps (reasonlab_sdk/tracking.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import reasonlab_sdk as rl
from reasonlab_sdk import spool, tracking
from reasonlab_sdk.sysmetrics import MB, SystemSampler, interval_from_env

REPO = Path(__file__).resolve().parents[2]
HZ = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
SELF = 100


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _stat_line(pid: int, comm: str, ppid: int, ticks: tuple[int, int], rss_pages: int) -> str:
    """A /proc/<pid>/stat line (proc(5)): fields 14, 15 utime and stime, 24 rss."""
    fields = ["S", str(ppid), *["0"] * 9, str(ticks[0]), str(ticks[1]), *["0"] * 8, str(rss_pages), "0"]
    return f"{pid} ({comm}) {' '.join(fields)}\n"


def _proc(root: Path, cpu: str, procs: dict[int, tuple[str, int, tuple[int, int], int]]) -> Path:
    """A /proc with the machine's cpu line, a meminfo, and ``{pid: (comm, ppid, (utime, stime), rss pages)}``."""
    root.mkdir(exist_ok=True)
    (root / "stat").write_text(f"{cpu}\ncpu0 1 2 3 4 5 6 7 8 0 0\nintr 12345\n")
    (root / "meminfo").write_text(
        "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n"
    )
    (root / "self").mkdir(exist_ok=True)  # not a pid: skipped
    for pid, (comm, ppid, ticks, rss) in procs.items():
        (root / str(pid)).mkdir(exist_ok=True)
        (root / str(pid) / "stat").write_text(_stat_line(pid, comm, ppid, ticks, rss))
    return root


def test_a_sample_reads_the_machine_the_script_and_its_children_from_proc(tmp_path: Path) -> None:
    clock = Clock()
    before = {
        SELF: ("python (train) x", 1, (80, 20), 1000),  # a name with spaces and parentheses
        101: ("loader", SELF, (40, 10), 500),
        102: ("loader worker", 101, (0, 0), 100),  # a grandchild
        200: ("other", 1, (10_000, 0), 9999),  # not ours
    }
    proc = _proc(tmp_path / "proc", "cpu  100 0 50 800 50 0 0 0 0 0", before)
    sampler = SystemSampler(0.0, pid=SELF, proc=proc, which=lambda _: None, clock=clock)
    clock.now = 2.0
    after = {
        SELF: ("python (train) x", 1, (230, 70), 1200),  # +200 ticks
        101: ("loader", SELF, (110, 40), 500),  # +100
        102: ("loader worker", 101, (40, 10), 100),  # +50
        103: ("new loader", SELF, (500, 0), 200),  # first seen now: no baseline, 0 of its ticks count
        200: ("other", 1, (90_000, 0), 9999),
    }
    # 100 ticks elapsed: 60 user, 20 system, 10 idle, 10 iowait; guest time (5) is inside user already
    _proc(proc, "cpu  160 0 70 810 60 0 0 0 5 0", after)
    sample = sampler.sample()
    assert sample == pytest.approx(
        {
            "system/cpu_percent": 80.0,
            "system/memory_percent": 75.0,  # (1000 - 250) / 1000
            "system/process_cpu_percent": 100.0 * 350 / HZ / 2.0,
            "system/process_memory_mb": (1200 + 500 + 100 + 200) * PAGE / MB,
        }
    )
    clock.now = 4.0
    after[103] = ("new loader", SELF, (700, 0), 200)  # +200 now that it has a baseline
    _proc(proc, "cpu  160 0 70 910 60 0 0 0 5 0", after)  # only idle since
    sample = sampler.sample()
    assert sample["system/cpu_percent"] == 0.0
    assert sample["system/process_cpu_percent"] == pytest.approx(100.0 * 200 / HZ / 2.0)


def test_without_proc_only_the_process_cpu_is_sampled_and_nothing_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no GPU memory from a torch that another test imported
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    clock = Clock()
    times = iter([SimpleNamespace(user=1.0, system=0.5), SimpleNamespace(user=2.0, system=1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sampler = SystemSampler(
            0.0,
            proc=tmp_path / "no-proc",
            which=lambda _: None,
            clock=clock,
            process_times=lambda: next(times),
        )
        clock.now = 3.0
        assert sampler.sample() == {"system/process_cpu_percent": pytest.approx(50.0)}  # 1.5 s of 3


class FakeCuda:
    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def memory_allocated(self, i: int) -> int:
        return 2 * MB

    def memory_reserved(self, i: int) -> int:
        return 4 * MB


def test_gpus_come_from_nvidia_smi_and_from_torch_once_the_script_imported_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []

    def smi(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, stdout="0, 87, 1234\n1, [N/A], 99\n")

    sampler = SystemSampler(0.0, proc=tmp_path / "no-proc", which=lambda name: f"/opt/bin/{name}", run=smi)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    gpu = {k: v for k, v in sampler.sample().items() if "/gpu" in k}
    assert gpu == {
        "system/gpu0/utilization": 87.0,
        "system/gpu0/memory_used_mb": 1234.0,
        "system/gpu1/memory_used_mb": 99.0,
    }
    assert calls[0][0] == "/opt/bin/nvidia-smi" and "--format=csv,noheader,nounits" in calls[0]
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=FakeCuda()))
    gpu = {k: v for k, v in sampler.sample().items() if "/gpu0/" in k}
    assert gpu["system/gpu0/memory_allocated_mb"] == 2.0 and gpu["system/gpu0/memory_reserved_mb"] == 4.0


def test_a_failing_source_is_dropped_with_one_warning_and_the_others_go_on(tmp_path: Path) -> None:
    calls = 0

    def broken(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        nonlocal calls
        calls += 1
        raise subprocess.CalledProcessError(9, args, stderr="NVIDIA-SMI has failed")

    sampler = SystemSampler(0.0, proc=tmp_path / "no-proc", which=lambda _: "/bin/nvidia-smi", run=broken)
    with pytest.warns(UserWarning, match="gpu sampling stopped"):
        assert "system/process_cpu_percent" in sampler.sample()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "system/process_cpu_percent" in sampler.sample()
    assert calls == 1


def test_the_sdk_never_imports_torch_or_psutil_to_sample() -> None:
    probe = (
        "import sys; from reasonlab_sdk.sysmetrics import SystemSampler; s = SystemSampler(0.0); s.sample(); "
        "print(sorted(m for m in ('torch', 'psutil') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(REPO / "sdk")},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


def test_the_interval_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REASONLAB_SYSTEM_METRICS_INTERVAL", raising=False)
    assert interval_from_env() == 15.0
    monkeypatch.setenv("REASONLAB_SYSTEM_METRICS_INTERVAL", "2.5")
    assert interval_from_env() == 2.5
    monkeypatch.setenv("REASONLAB_SYSTEM_METRICS_INTERVAL", "0")
    assert interval_from_env() == 0.0
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("REASONLAB_SYSTEM_METRICS_INTERVAL", bad)
        with pytest.raises(ValueError, match="REASONLAB_SYSTEM_METRICS_INTERVAL"):
            interval_from_env()


def test_the_keys_are_the_ones_the_worker_logs() -> None:
    from worker.runtime.sysmetrics import SystemSampler as WorkerSampler

    def machine_and_process(sample: dict[str, float]) -> set[str]:
        return {k for k in sample if "/gpu" not in k}

    time.sleep(0.05)
    assert machine_and_process(SystemSampler(0.0).sample()) == machine_and_process(
        WorkerSampler(origin=0.0).sample()
    )


class StepSampler:
    """A sampler of a run created long ago: its samples' steps are far past the script's."""

    def __init__(self, origin: float) -> None:
        self.origin = origin

    def sample(self) -> dict[str, float]:
        return {"system/cpu_percent": 12.5, "system/process_memory_mb": float("nan")}

    def step(self, now: float | None = None) -> int:
        return 100_000


def test_a_tracked_run_samples_apart_from_its_own_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    monkeypatch.setattr(tracking, "SystemSampler", StepSampler)
    run = rl.init(mode="offline", id="sampled", system_metrics_interval=0.02)
    for _ in range(3):
        run.log({"loss": 1.0})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
        r.get("key") == "system/cpu_percent" for r in spool.read(run.spool_path).records
    ):
        time.sleep(0.05)
    run.finish()
    records = spool.read(run.spool_path).records
    samples = [r for r in records if r["t"] == "point" and r["key"].startswith("system/")]
    assert samples and {(r["key"], r["step"], r["value"]) for r in samples} == {
        ("system/cpu_percent", 100_000, 12.5)
    }
    assert records[-1]["t"] == "finish"  # no sample after the finish
    again = rl.init(mode="offline", id="sampled", resume="must", system_metrics_interval=0)
    again.log({"loss": 0.5})  # after the script's last step (2), not the samples' (100000)
    again.finish()
    steps = [
        r["step"] for r in spool.read(run.spool_path).records if r["t"] == "point" and r["key"] == "loss"
    ]
    assert steps == [0, 1, 2, 3]


def test_an_interval_of_zero_samples_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("REASONLAB_SYSTEM_METRICS_INTERVAL", "0")
    started: list[float] = []
    monkeypatch.setattr(
        tracking, "SystemSampler", lambda origin: started.append(origin) or StepSampler(origin)
    )
    with rl.init(mode="offline") as run:
        run.log({"loss": 1.0})
    assert started == []
    assert not [r for r in spool.read(run.spool_path).records if r.get("key", "").startswith("system/")]
    with pytest.raises(ValueError, match="system_metrics_interval"):
        rl.init(mode="offline", system_metrics_interval=-1)
