"""System metrics of a running job, logged as ``system/*`` series beside the run's own metrics.

Sampled by the heartbeat thread (``worker.runtime.heartbeat``) and logged through the run context's buffered
path, so they reach the API and the MLflow mirror like any metric. The step of a sample is the whole
seconds since the run was created: it grows across attempts (a resumed run never overwrites the samples
of an earlier attempt) and reads as elapsed time on the run page.

What is sampled:
- ``system/cpu_percent``: the whole machine's CPU utilisation since the previous sample (psutil).
- ``system/process_cpu_percent``: the job process and its children (data loader workers), in percent of
  one core, like ``top``.
- ``system/memory_percent`` (machine) and ``system/process_memory_mb`` (the job's resident set).
- per GPU ``i`` when CUDA is in use: ``system/gpu{i}/memory_allocated_mb`` and ``memory_reserved_mb``
  (torch's caching allocator, only if the kind has imported torch), and ``system/gpu{i}/utilization``
  and ``system/gpu{i}/memory_used_mb`` from NVML where ``pynvml`` is installed, else from
  ``nvidia-smi`` where it is on the PATH.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

import psutil

# the keys and the nvidia-smi reading are the SDK's (reasonlab_sdk/sysmetrics.py samples a script's run the
# same way without psutil): a worker's run and an external run chart their system metrics alike
from reasonlab_sdk.sysmetrics import MB, NVIDIA_SMI_QUERY, NVIDIA_SMI_TIMEOUT, PREFIX, parse_nvidia_smi

logger = logging.getLogger(__name__)


def step_origin(run: dict[str, Any]) -> float:
    """The epoch time that step 0 of the system series stands for: the run's creation, else now."""
    created = run.get("created_at")
    if isinstance(created, str):
        try:
            return datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()


class SystemSampler:
    """One job's sampler. ``sample()`` returns ``{key: value}``; a source that fails is dropped (logged
    once) and the others go on."""

    def __init__(self, origin: float, pid: int | None = None) -> None:
        self.origin = origin
        self._proc = psutil.Process(pid)
        self._children: dict[int, psutil.Process] = {}
        self._nvidia_smi = shutil.which("nvidia-smi")
        self._nvml: Any = None
        self._failed: set[str] = set()
        # utilisation between two samples of this sampler: psutil.cpu_percent(None) would compare with any
        # caller's last call in the process (a library's too), so the machine's is kept here
        self._cpu_times = psutil.cpu_times()
        self._proc.cpu_percent(None)  # per Process object: its own baseline

    def step(self, now: float | None = None) -> int:
        return max(0, int((time.time() if now is None else now) - self.origin))

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for name, source in (("host", self._host), ("process", self._process), ("gpu", self._gpu)):
            if name in self._failed:
                continue
            try:
                out.update(source())
            except Exception as exc:  # a metric source must never stop the run or its heartbeats
                self._failed.add(name)
                logger.warning("system metrics: %s sampling disabled: %s", name, exc)
        return out

    def _host(self) -> dict[str, float]:
        now = psutil.cpu_times()
        before, self._cpu_times = self._cpu_times, now
        return {
            f"{PREFIX}cpu_percent": busy_percent(before, now),
            f"{PREFIX}memory_percent": float(psutil.virtual_memory().percent),
        }

    def _process(self) -> dict[str, float]:
        cpu = self._proc.cpu_percent(None)
        rss = self._proc.memory_info().rss
        live: dict[int, psutil.Process] = {}
        for child in self._proc.children(recursive=True):
            known = self._children.get(child.pid, child)
            try:
                cpu += known.cpu_percent(None)  # 0.0 on a child's first sample: it has no baseline yet
                rss += known.memory_info().rss
            except psutil.Error:  # exited between the listing and the reading
                continue
            live[child.pid] = known
        self._children = live
        return {f"{PREFIX}process_cpu_percent": float(cpu), f"{PREFIX}process_memory_mb": rss / MB}

    def _gpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        torch = sys.modules.get("torch")  # only if the kind uses it: importing torch here costs seconds
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            for i in range(torch.cuda.device_count()):
                out[f"{PREFIX}gpu{i}/memory_allocated_mb"] = torch.cuda.memory_allocated(i) / MB
                out[f"{PREFIX}gpu{i}/memory_reserved_mb"] = torch.cuda.memory_reserved(i) / MB
        out.update(self._gpu_utilization())
        return out

    def _gpu_utilization(self) -> dict[str, float]:
        if self._nvml is None:
            try:
                import pynvml  # type: ignore[import-not-found,unused-ignore]

                pynvml.nvmlInit()
                self._nvml = pynvml
            except Exception:
                self._nvml = False
        if self._nvml:
            nv = self._nvml
            out: dict[str, float] = {}
            for i in range(nv.nvmlDeviceGetCount()):
                handle = nv.nvmlDeviceGetHandleByIndex(i)
                out[f"{PREFIX}gpu{i}/utilization"] = float(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
                out[f"{PREFIX}gpu{i}/memory_used_mb"] = nv.nvmlDeviceGetMemoryInfo(handle).used / MB
            return out
        if self._nvidia_smi is None:
            return {}
        return parse_nvidia_smi(
            subprocess.run(
                [self._nvidia_smi, *NVIDIA_SMI_QUERY],
                capture_output=True,
                text=True,
                timeout=NVIDIA_SMI_TIMEOUT,
                check=True,
            ).stdout
        )


def busy_percent(before: Any, after: Any) -> float:
    """The machine's CPU utilisation between two ``psutil.cpu_times()``: the share of the elapsed CPU time
    (all fields) that was not idle or waiting for I/O, in percent (as psutil.cpu_percent computes it)."""
    idle = ("idle", "iowait")
    total = sum(after) - sum(before)
    if total <= 0:
        return 0.0
    busy = total - sum(getattr(after, f, 0.0) - getattr(before, f, 0.0) for f in idle)
    return max(0.0, min(100.0, 100.0 * busy / total))
