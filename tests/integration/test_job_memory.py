"""A run's job process holds its run's credentials and nothing else: the worker token is not in its memory,
and the worker's own processes cannot be read from it (docs/operations.md, "Trust model";
worker/runtime/zygote.py).

A real `reasonlab worker` runs a probe kind (a plugin) whose code reads every writable or anonymous region
of its own memory through ``/proc/self/mem``, and its environment, looking for the worker token's bytes;
the same scan must find the run token the job works with (so a scan that finds nothing is shown to look).
The token to look for travels in the spec in two halves and is matched as "first half, then second half":
the probe never builds it, so its own needle is no hit. The probe then tries to read the environment and
the memory of every other process of the worker (the Celery parent, its pool process, the job server).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.integration.platform import WORKER_TOKEN, Platform

pytestmark = pytest.mark.slow

PACKAGE = "memprobe_kind"
SPEC_MODULE = """
from typing import Literal

from pydantic import Field

from worker.specs import KindManifest, SpecBase, StrictModel


class MemProbeSpec(SpecBase):
    kind: Literal["memprobe"] = "memprobe"
    halves: list[str] = Field(default_factory=list, description="the worker token, cut in two")
    worker_pid: int = Field(0, ge=0, description="the worker's main process")


class MemProbeReport(StrictModel):
    kind: Literal["memprobe_report"] = "memprobe_report"
    pid: int
    scanned_bytes: int
    worker_token_in_memory: int
    run_token_in_memory: int
    worker_token_in_environ: int
    others: dict[str, dict[str, str]]
    run_token_halves: list[str]


MANIFEST = KindManifest(
    name="memprobe",
    description="scans its own process's memory for a credential (a test kind)",
    spec=MemProbeSpec,
    results=(MemProbeReport,),
    examples=(),
    runner="memprobe_kind.run:run",
)
"""
# How the probe (and the test, on the job server) looks for a token in a process's memory.
SCAN_MODULE = r'''
from pathlib import Path

CHUNK = 8 << 20
SKIPPED = ("[vvar]", "[vvar_vclock]", "[vsyscall]")


def _regions(pid):
    """(start, end) of the regions worth scanning: readable, and writable or anonymous (a read-only
    mapping of a file holds its code and constants, never a value the process received)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        perms, name = fields[1], (fields[5] if len(fields) > 5 else "")
        if "r" not in perms or name in SKIPPED:
            continue
        if "w" not in perms and name and not name.startswith("["):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        yield start, end


def _count(buf, needle):
    first, second = needle
    n, at = 0, buf.find(first)
    while at != -1:
        if buf[at + len(first) : at + len(first) + len(second)] == second:
            n += 1
        at = buf.find(first, at + 1)
    return n


def scan(pid, needles):
    """How often each needle (first half, second half) occurs in the memory of ``pid``; bytes read."""
    hits, total = [0] * len(needles), 0
    keep = max(len(a) + len(b) for a, b in needles) - 1
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for start, end in list(_regions(pid)):
            tail, addr = b"", start
            while addr < end:
                try:
                    mem.seek(addr)
                    data = mem.read(min(CHUNK, end - addr))
                except OSError:  # a guard page, a region unmapped meanwhile
                    break
                if not data:
                    break
                total += len(data)
                buf = tail + data
                for i, needle in enumerate(needles):
                    hits[i] += _count(buf, needle)
                tail, addr = buf[-keep:], addr + len(data)
    return hits, total


def _tree(root):
    """The processes below ``root`` (itself included), from every process's parent id."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(p for p, parent in parents.items() if parent == pid and p not in found)
    return found


def _try(pid, token):
    """Whether this process can read another one's environment and memory (and what it finds there)."""
    seen = {}
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        seen["environ"] = f"read, {_count(environ, token)} hits"
    except OSError as exc:
        seen["environ"] = f"refused: {type(exc).__name__}"
    try:
        hits, _ = scan(pid, [token])
        seen["mem"] = f"read, {hits[0]} hits"
    except OSError as exc:
        seen["mem"] = f"refused: {type(exc).__name__}"
    return seen


'''
RUN_MODULE = r"""
import ctypes
import os
from pathlib import Path

from memprobe_kind.scan import _count, _tree, _try, scan
from memprobe_kind.spec import MemProbeReport


def run(spec, ctx) -> None:
    worker_token = tuple(h.encode() for h in spec.halves)
    run_token = ctx._client.token  # the run's own credential: the job holds it, the scan must find it
    half = len(run_token) // 2
    run_needle = (run_token[:half].encode(), run_token[half:].encode())
    # a job process is undumpable, so for a user other than root its /proc/self files belong to root:
    # dumpable for the time of the scan (the worker's processes stay as they are)
    prctl = ctypes.CDLL(None).prctl
    prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    try:
        (in_memory, run_in_memory), scanned = scan("self", [worker_token, run_needle])
    finally:
        prctl(4, 0, 0, 0, 0)
    environ = Path("/proc/self/environ").read_bytes()
    me = os.getpid()
    mine = _tree(me)
    others = {str(pid): _try(pid, worker_token) for pid in sorted(_tree(spec.worker_pid) - mine)}
    ctx.log_result(
        MemProbeReport(
            pid=me,
            scanned_bytes=scanned,
            worker_token_in_memory=in_memory,
            run_token_in_memory=run_in_memory,
            worker_token_in_environ=_count(environ, worker_token),
            others=others,
            run_token_halves=[run_token[:half], run_token[half:]],  # dead once the attempt is over
        )
    )
"""


def _write_probe(root: Path) -> str:
    package = root / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text(SPEC_MODULE)
    (package / "scan.py").write_text(SCAN_MODULE)
    (package / "run.py").write_text(RUN_MODULE)
    return f"{PACKAGE}.spec"


def _job_server(worker: int) -> int:
    children = {
        int(p)
        for task in Path(f"/proc/{worker}/task").iterdir()
        for p in (task / "children").read_text().split()
    }
    (server,) = [p for p in children if b"worker.jobs.server" in Path(f"/proc/{p}/cmdline").read_bytes()]
    return server


def test_a_job_process_holds_its_run_token_but_not_the_worker_token(
    tmp_path: Path, embedded_platform: Platform
) -> None:
    p = embedded_platform
    module = _write_probe(tmp_path / "plugins")
    p.env["PYTHONPATH"] = f"{tmp_path / 'plugins'}:{p.env.get('PYTHONPATH', '')}"
    p.env["REASONLAB_KIND_PLUGINS"] = module
    p.start_api()
    worker = p.start_worker()
    cut = len(WORKER_TOKEN) // 2
    spec = {"halves": [WORKER_TOKEN[:cut], WORKER_TOKEN[cut:]], "worker_pid": worker.pid}
    exp = p.client.create_experiment("memprobe", "memprobe", spec)
    (run,) = p.wait_finished([r["id"] for r in exp["runs"]], timeout=180)
    assert run["status"] == "succeeded", p.diagnostics()
    (report,) = p.client.get_results(run["id"], kind="memprobe_report")
    seen = report["payload"]

    assert seen["scanned_bytes"] > 1 << 20, seen  # the scan read the process's memory
    assert seen["run_token_in_memory"] >= 1, seen  # and finds what is there: the run's own token
    assert seen["worker_token_in_memory"] == 0, seen
    assert seen["worker_token_in_environ"] == 0, seen
    # the worker's processes (its Celery parent, which holds the token, and whatever else it started)
    # cannot be read from the job: neither their environment nor their memory
    others = seen["others"]
    assert str(worker.pid) in others, seen
    for pid, what in others.items():
        assert what["environ"].startswith("refused") and what["mem"].startswith("refused"), (pid, others)

    if os.geteuid() != 0:  # reading the worker's undumpable processes from here takes root
        return
    # From here: the job server, which every job process is forked from, holds neither the worker token
    # nor the run token of the job it forked (it never reads a claim), while the worker itself holds the
    # worker token (what the scan, from outside, finds).
    scanner: dict[str, Any] = {}
    exec(SCAN_MODULE, scanner)
    worker_needle = (WORKER_TOKEN[:cut].encode(), WORKER_TOKEN[cut:].encode())
    run_needle = tuple(h.encode() for h in seen["run_token_halves"])
    (in_server, run_in_server), _ = scanner["scan"](_job_server(worker.pid), [worker_needle, run_needle])
    (in_worker,), _ = scanner["scan"](worker.pid, [worker_needle])
    assert (in_server, run_in_server) == (0, 0) and in_worker >= 1, (in_server, run_in_server, in_worker)
