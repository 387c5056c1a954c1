"""System metrics of a tracked script: sampled in the background, logged as ``system/*`` series.

The keys are the ones the platform's workers log for the runs they execute (worker/runtime/sysmetrics.py),
so the dashboard keeps an external run's samples apart the same way (a section of their own on the run
page, no columns in the runs tables, left out of exports). As there, the step of a sample is the whole
seconds since the run was created: it reads as elapsed time and grows across a resumed run's attempts.

What is sampled, without psutil or torch (the SDK depends on httpx only):
- ``system/cpu_percent`` and ``system/memory_percent``: the machine's CPU utilisation since the previous
  sample and its memory in use, from ``/proc/stat`` and ``/proc/meminfo`` (Linux).
- ``system/process_cpu_percent`` (in percent of one core, like ``top``) and ``system/process_memory_mb``
  (resident set): the script's process and its children (data loader workers), from ``/proc/<pid>/stat``.
  Without ``/proc`` (macOS, Windows) only the process's own CPU, from ``os.times``.
- per GPU ``i``: ``system/gpu{i}/utilization`` and ``system/gpu{i}/memory_used_mb`` from ``nvidia-smi``
  where it is on the PATH, and ``system/gpu{i}/memory_allocated_mb`` / ``memory_reserved_mb`` from torch's
  caching allocator, only if the script has imported torch and used CUDA (torch is never imported here).

``REASONLAB_SYSTEM_METRICS_INTERVAL`` sets the seconds between samples (default 15; 0 turns sampling off).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREFIX = "system/"
MB = 1024 * 1024
DEFAULT_INTERVAL = 15.0
INTERVAL_ENV = "REASONLAB_SYSTEM_METRICS_INTERVAL"
NVIDIA_SMI_TIMEOUT = 5.0
NVIDIA_SMI_QUERY = ("--query-gpu=index,utilization.gpu,memory.used", "--format=csv,noheader,nounits")

# /proc/stat's cpu line: user nice system idle iowait irq softirq steal guest guest_nice; guest time is
# already counted in user and nice, so the total is the first eight fields (as psutil sums them)
_CPU_FIELDS = 8
_IDLE_FIELDS = (3, 4)  # idle, iowait


def interval_from_env(default: float = DEFAULT_INTERVAL) -> float:
    """Seconds between samples: ``REASONLAB_SYSTEM_METRICS_INTERVAL`` (0 turns sampling off), else ``default``."""
    text = os.environ.get(INTERVAL_ENV, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(
            f"{INTERVAL_ENV}={text!r} is not a number of seconds (0 turns sampling off)"
        ) from None
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(
            f"{INTERVAL_ENV}={text!r}: seconds between samples, 0 or more (0 turns sampling off)"
        )
    return seconds


def parse_cpu_times(stat: str) -> tuple[float, float]:
    """``(idle, total)`` clock ticks of the machine from ``/proc/stat`` (its aggregate ``cpu`` line)."""
    for line in stat.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [float(f) for f in fields[1 : 1 + _CPU_FIELDS]]
            return sum(ticks[i] for i in _IDLE_FIELDS if i < len(ticks)), sum(ticks)
    raise ValueError("/proc/stat has no aggregate cpu line")


def busy_percent(before: tuple[float, float], after: tuple[float, float]) -> float:
    """The machine's CPU utilisation between two ``parse_cpu_times``: the share of the elapsed CPU time that
    was not idle or waiting for I/O, in percent (as the worker's sampler computes it from psutil)."""
    total = after[1] - before[1]
    if total <= 0:
        return 0.0
    busy = total - (after[0] - before[0])
    return max(0.0, min(100.0, 100.0 * busy / total))


def parse_memory_percent(meminfo: str) -> float:
    """The machine's memory in use, in percent of its total: (MemTotal - MemAvailable) / MemTotal, as psutil's
    ``virtual_memory().percent`` (kernels before 3.14 lack MemAvailable: free + buffers + cached then)."""
    kb: dict[str, float] = {}
    for line in meminfo.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            kb[name.strip()] = float(parts[0])
    total = kb.get("MemTotal", 0.0)
    if total <= 0:
        raise ValueError("/proc/meminfo has no MemTotal")
    available = kb.get("MemAvailable")
    if available is None:
        available = kb.get("MemFree", 0.0) + kb.get("Buffers", 0.0) + kb.get("Cached", 0.0)
    return max(0.0, min(100.0, 100.0 * (total - available) / total))


def parse_process_stat(stat: str) -> tuple[int, int, int]:
    """``(ppid, utime + stime ticks, resident pages)`` from ``/proc/<pid>/stat`` (proc(5)). The command name,
    field 2, is in parentheses and may hold spaces and parentheses itself: the fields after it are read
    from the last ``)``."""
    rest = stat[stat.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): field n is rest[n - 3]
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[21])


def parse_nvidia_smi(text: str) -> dict[str, float]:
    """``index, utilization %, memory used MiB`` lines of ``nvidia-smi --format=csv,noheader,nounits``;
    a field it cannot read (``[N/A]`` on some boards) is left out."""
    out: dict[str, float] = {}
    for line in text.strip().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 3 or not fields[0].isdigit():
            continue
        i = fields[0]
        for name, value in (("utilization", fields[1]), ("memory_used_mb", fields[2])):
            try:
                out[f"{PREFIX}gpu{i}/{name}"] = float(value)
            except ValueError:
                continue
    return out


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100  # Linux's USER_HZ on every architecture it runs on


def _page_size() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return 4096


class SystemSampler:
    """The samples of one run. ``sample()`` returns ``{key: value}``; a source that fails is dropped (one
    warning) and the others go on. Every outside reading can be replaced, for tests: ``proc`` (the /proc
    folder), ``which`` (finds ``nvidia-smi`` on the PATH), ``run`` (runs it), ``clock`` (monotonic
    seconds), ``process_times`` (``os.times``: the process's CPU without /proc)."""

    def __init__(
        self,
        origin: float,
        *,
        pid: int | None = None,
        proc: Path | str = "/proc",
        which: Callable[[str], str | None] = shutil.which,
        run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
        clock: Callable[[], float] = time.monotonic,
        process_times: Callable[[], Any] = os.times,
    ) -> None:
        self.origin = origin
        self._pid = os.getpid() if pid is None else pid
        self._proc = Path(proc)
        self._nvidia_smi = which("nvidia-smi")
        self._run = run
        self._clock = clock
        self._process_times = process_times
        self._ticks_per_s = _clock_ticks()
        self._page = _page_size()
        self._failed: set[str] = set()
        self._has_proc = (self._proc / "stat").is_file() and (self._proc / str(self._pid) / "stat").is_file()
        # baselines: a utilisation is the change since the previous sample of this sampler
        self._cpu: tuple[float, float] | None = None
        self._proc_ticks: dict[int, int] = {}
        self._cpu_seconds = 0.0
        self._at = self._clock()
        if self._has_proc:
            self._baseline()
        else:
            t = self._process_times()
            self._cpu_seconds = t.user + t.system

    def _baseline(self) -> None:
        try:
            self._cpu = parse_cpu_times((self._proc / "stat").read_text())
            self._proc_ticks = {pid: ticks for pid, (ticks, _) in self._family().items()}
        except (OSError, ValueError, IndexError):
            self._has_proc = False
            t = self._process_times()
            self._cpu_seconds = t.user + t.system

    def step(self, now: float | None = None) -> int:
        """Whole seconds since the run was created (never negative: a clock behind the API's)."""
        return max(0, int((time.time() if now is None else now) - self.origin))

    def sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        sources: tuple[tuple[str, Callable[[], dict[str, float]]], ...] = (
            ("host", self._host),
            ("process", self._process),
            ("gpu", self._gpu),
        )
        for name, source in sources:
            if name in self._failed:
                continue
            try:
                out.update(source())
            except Exception as exc:  # a metric source must never stop the script or its run
                self._failed.add(name)
                warnings.warn(f"reasonlab: system metrics: {name} sampling stopped: {exc}", stacklevel=2)
        return out

    # -- the machine ------------------------------------------------------------------------------------

    def _host(self) -> dict[str, float]:
        if not self._has_proc:
            return {}
        now = parse_cpu_times((self._proc / "stat").read_text())
        before, self._cpu = self._cpu or now, now
        return {
            f"{PREFIX}cpu_percent": busy_percent(before, now),
            f"{PREFIX}memory_percent": parse_memory_percent((self._proc / "meminfo").read_text()),
        }

    # -- the script's process and its children ----------------------------------------------------------

    def _family(self) -> dict[int, tuple[int, int]]:
        """``{pid: (cpu ticks, resident pages)}`` of this process and its descendants, from one pass over
        /proc (a process that exits during the pass is skipped)."""
        stats: dict[int, tuple[int, int, int]] = {}
        for entry in self._proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stats[int(entry.name)] = parse_process_stat((entry / "stat").read_text())
            except (OSError, ValueError, IndexError):
                continue
        if self._pid not in stats:
            raise OSError(f"{self._proc / str(self._pid) / 'stat'} is not readable")
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        family: dict[int, tuple[int, int]] = {}
        unvisited = [self._pid]
        while unvisited:
            pid = unvisited.pop()
            if pid in family:
                continue
            family[pid] = stats[pid][1:]
            unvisited.extend(children.get(pid, ()))
        return family

    def _process(self) -> dict[str, float]:
        now = self._clock()
        elapsed, self._at = now - self._at, now
        if not self._has_proc:
            t = self._process_times()
            seconds = t.user + t.system
            used, self._cpu_seconds = seconds - self._cpu_seconds, seconds
            return {f"{PREFIX}process_cpu_percent": 100.0 * used / elapsed if elapsed > 0 else 0.0}
        family = self._family()
        # a process first seen now has no baseline yet: it counts from this sample on (0 now, as psutil)
        ticks = sum(t - self._proc_ticks.get(pid, t) for pid, (t, _) in family.items())
        self._proc_ticks = {pid: t for pid, (t, _) in family.items()}
        rss_pages = sum(pages for _, pages in family.values())
        cpu = 100.0 * ticks / self._ticks_per_s / elapsed if elapsed > 0 else 0.0
        return {
            f"{PREFIX}process_cpu_percent": max(0.0, cpu),
            f"{PREFIX}process_memory_mb": rss_pages * self._page / MB,
        }

    # -- GPUs ----------------------------------------------------------------------------------------------

    def _gpu(self) -> dict[str, float]:
        out: dict[str, float] = {}
        torch = sys.modules.get("torch")  # only if the script uses it: never imported here
        cuda = getattr(torch, "cuda", None)
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            for i in range(cuda.device_count()):
                out[f"{PREFIX}gpu{i}/memory_allocated_mb"] = cuda.memory_allocated(i) / MB
                out[f"{PREFIX}gpu{i}/memory_reserved_mb"] = cuda.memory_reserved(i) / MB
        if self._nvidia_smi:
            answer = self._run(
                [self._nvidia_smi, *NVIDIA_SMI_QUERY],
                capture_output=True,
                text=True,
                timeout=NVIDIA_SMI_TIMEOUT,
                check=True,
            )
            out.update(parse_nvidia_smi(answer.stdout))
        return out
