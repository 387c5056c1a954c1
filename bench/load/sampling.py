"""The machine while the load runs: the API processes' RSS and CPU, our Postgres backends' CPU, the
generator's own CPU and event-loop lag, the load average (from /proc)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from bench.load.generator import sleep_until
from bench.load.recorder import Recorder

TICKS = os.sysconf("SC_CLK_TCK")
PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (field 3 = index 0)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def session_pids(sid: int) -> list[int]:
    """Every process of the session we started the API in (the server and its worker processes)."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(entry.name)
            if st is not None and int(st[3]) == sid:
                out.append(int(entry.name))
    return out


def rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_MIB
    except OSError:
        return 0.0


def cpu_seconds(pid: int | str) -> float:
    st = _stat(pid)
    return (int(st[11]) + int(st[12])) / TICKS if st else 0.0


def postgres_pids(db: str) -> list[int]:
    """Postgres backends serving our database (their process title names it)."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if cmd.startswith(b"postgres: ") and f" {db} ".encode() in cmd:
            out.append(int(entry.name))
    return out


def loadavg() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def uptime_line() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# -- machine sampling --------------------------------------------------------------------------------


@dataclass
class Sample:
    t: float  # monotonic
    rss: list[float]  # MiB per API process
    api_cpu: float  # CPU seconds of the API processes (cumulative)
    pg_cpu: float  # CPU seconds of our database's Postgres backends (cumulative, live ones)
    gen_cpu: float  # this process
    load1: float
    lag_max: float  # generator event-loop lag since the last sample


class Sampler:
    def __init__(self, api_sids: list[int], db: str) -> None:
        self.api_sids = api_sids  # the sessions the API's processes were started in (api, ingest)
        self.db = db
        self.samples: list[Sample] = []
        self.loop_lag: list[tuple[float, float]] = []
        self._lag_max = 0.0
        self._pg_seen: dict[int, float] = {}  # backend pid -> its last CPU seconds (backends come and go)
        self._pg_total = 0.0

    def take(self) -> Sample:
        pids = [pid for sid in self.api_sids for pid in session_pids(sid)]
        for pid in postgres_pids(self.db):
            now = cpu_seconds(pid)
            self._pg_total += now - self._pg_seen.get(pid, 0.0)
            self._pg_seen[pid] = now
        s = Sample(
            t=time.monotonic(),
            rss=[rss_mib(p) for p in sorted(pids)],
            api_cpu=sum(cpu_seconds(p) for p in pids),
            pg_cpu=self._pg_total,
            gen_cpu=sum(os.times()[:2]),
            load1=loadavg(),
            lag_max=self._lag_max,
        )
        self._lag_max = 0.0
        self.samples.append(s)
        return s

    async def lag_probe(self, end: float) -> None:
        while time.monotonic() < end:
            t0 = time.perf_counter()
            await asyncio.sleep(0.1)
            lag = time.perf_counter() - t0 - 0.1
            self.loop_lag.append((time.monotonic(), lag))
            self._lag_max = max(self._lag_max, lag)

    async def run(self, every: float, end: float, rec: Recorder, on_sample: Any) -> None:
        while True:
            s = self.take()
            on_sample(s)
            if not await sleep_until(time.monotonic() + every, end):
                self.take()
                return
