"""System metrics of a job (worker.runtime.sysmetrics): what one sample holds, the step clock, the nvidia-smi
parser, and a run executed by the worker getting ``system/*`` series through the buffered metric path."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import namedtuple
from pathlib import Path

import psutil

from common.settings import SharedSettings
from tests.worker.worker_fake_api import FakeApi
from worker.executor import execute
from worker.runtime.sysmetrics import SystemSampler, busy_percent, parse_nvidia_smi, step_origin
from worker.tracking import WriterOptions

FAST = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)


def test_a_sample_holds_cpu_and_memory_of_the_machine_and_of_the_job() -> None:
    sampler = SystemSampler(origin=0.0)
    sample = sampler.sample()
    assert {"system/cpu_percent", "system/memory_percent", "system/process_cpu_percent"} <= sample.keys()
    assert 0.0 <= sample["system/cpu_percent"] <= 100.0
    assert 0.0 < sample["system/memory_percent"] <= 100.0
    rss_mb = psutil.Process().memory_info().rss / 2**20
    # this test process's resident set, give or take what moved between the two readings
    assert abs(sample["system/process_memory_mb"] - rss_mb) < 0.25 * rss_mb


def test_the_job_counts_its_children_memory() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "b = bytearray(200 * 2**20); print('ready', flush=True); input()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        sampler = SystemSampler(origin=0.0)
        own = psutil.Process().memory_info().rss / 2**20
        assert sampler.sample()["system/process_memory_mb"] > own + 150
    finally:
        child.kill()
        child.wait()


def test_the_step_is_whole_seconds_since_the_run_was_created() -> None:
    origin = step_origin({"created_at": "2026-11-23T10:00:00Z"})
    sampler = SystemSampler(origin=origin)
    assert sampler.step(origin + 59.9) == 59
    assert sampler.step(origin - 5) == 0  # a worker clock behind the API's never logs a negative step
    assert abs(step_origin({}) - time.time()) < 5  # no creation time: now


def test_cpu_utilisation_is_the_busy_share_of_the_elapsed_cpu_time() -> None:
    times = namedtuple("times", "user nice system idle iowait irq softirq steal guest guest_nice")
    before = times(100, 0, 50, 800, 50, 0, 0, 0, 0, 0)
    after = times(160, 0, 70, 810, 60, 0, 0, 0, 0, 0)  # 100 s elapsed: 80 busy, 10 idle, 10 iowait
    assert busy_percent(before, after) == 80.0
    assert busy_percent(after, after) == 0.0  # no time elapsed


def _cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time from /proc/PID/stat (fields 14 and 15), apart from psutil."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_busy_child_shows_in_the_job_cpu() -> None:
    """The child's share is what the kernel counted for it over the interval, however loaded the machine
    (a spinning child gets a tenth of a core at load 20): at least what it used inside the interval."""
    sampler = SystemSampler(origin=0.0)
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        before = time.monotonic()
        sampler.sample()  # the child's baseline
        used_from = _cpu_seconds(child.pid)
        deadline = time.monotonic() + 60
        while _cpu_seconds(child.pid) - used_from < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        used = _cpu_seconds(child.pid) - used_from
        sample = sampler.sample()
        interval = time.monotonic() - before
        assert used >= 0.3, used
        # 10 ms clock ticks over >= 0.3 s: a 0.8 margin covers the counting's granularity
        assert sample["system/process_cpu_percent"] >= 0.8 * 100 * used / interval, (sample, used, interval)
        assert sample["system/cpu_percent"] > 0.0, sample
    finally:
        child.kill()
        child.wait()


def test_nvidia_smi_lines_become_per_gpu_metrics() -> None:
    text = "0, 87, 40321\n1, [N/A], 1024\nGarbage line\n"
    assert parse_nvidia_smi(text) == {
        "system/gpu0/utilization": 87.0,
        "system/gpu0/memory_used_mb": 40321.0,
        "system/gpu1/memory_used_mb": 1024.0,
    }


def test_an_executed_run_gets_system_metrics(tmp_path: Path) -> None:
    settings = SharedSettings(home=tmp_path / "home", heartbeat_interval=0.05)
    api = FakeApi(
        spec={
            "seed": 1,
            "data": {"n_samples": 64, "n_features": 4},
            "model": {"hidden": 8, "layers": 1},
            "train": {"steps": 40, "batch_size": 16, "step_delay": 0.01},
        }
    )
    api.run["created_at"] = "2020-01-01T00:00:00Z"
    status = execute(api.run["id"], 1, settings, client=api.client(), writer_options=FAST, worker="w:1")
    assert status == "succeeded"
    system = {(k, s) for k, s in api.metrics if k.startswith("system/")}
    assert {k for k, _ in system} >= {
        "system/cpu_percent",
        "system/memory_percent",
        "system/process_memory_mb",
    }
    # steps are seconds since the run's creation, years ago here
    assert min(s for _, s in system) > 365 * 24 * 3600


def test_system_metrics_can_be_turned_off(tmp_path: Path) -> None:
    settings = SharedSettings(home=tmp_path / "home", heartbeat_interval=0.05, system_metrics=False)
    api = FakeApi(spec={"seed": 1, "train": {"steps": 30, "batch_size": 16, "step_delay": 0.01}})
    assert (
        execute(
            api.run["id"],
            1,
            settings,
            client=api.client(),
            writer_options=FAST,
            worker="w:1",
        )
        == "succeeded"
    )
    assert not [k for k, _ in api.metrics if k.startswith("system/")]
