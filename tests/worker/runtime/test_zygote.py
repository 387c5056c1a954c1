"""The job server's mechanism (worker/runtime/zygote.py), piece by piece, with real processes: a request
answered by a forked job process, the fallback when the server is gone, the confinement of what it forks,
and the pool process's side (the interrupt passed on, an outcome it does not know). The whole, in a real
worker: tests/integration/test_job_memory.py and test_worker_shutdown.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from worker.runtime import zygote

ROOT = Path(__file__).parents[3]

SERVER = """
import os, socket, sys
from worker.runtime import zygote

def run_job(conn):
    zygote.send_frame(conn, {"pid": os.getpid()})
    request = zygote.recv_frame(conn)
    if request is not None:
        zygote.send_frame(conn, {"outcome": request["say"], "parent": os.getppid()})

zygote.serve(socket.socket(fileno=int(sys.argv[1])), run_job)
"""


def _server() -> tuple[socket.socket, subprocess.Popen[bytes]]:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(theirs.fileno())], pass_fds=(theirs.fileno(),), cwd=ROOT
    )
    theirs.close()
    return mine, proc


def test_a_request_is_answered_by_a_job_process_forked_by_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    control, server = _server()
    monkeypatch.setattr(zygote, "_control", control)
    try:
        first, second = zygote.open_job(), zygote.open_job()
        assert first.spawned is None and len({first.pid, second.pid, server.pid}) == 3
        first.hand_over({"say": "one"})
        second.hand_over({"say": "two"})
        assert first.wait() == {"outcome": "one", "parent": server.pid}
        assert second.wait() == {"outcome": "two", "parent": server.pid}
        third = zygote.open_job()
        third.abandon()  # no claim: the job process ends without a word
        assert not Path(f"/proc/{third.pid}/cmdline").exists() or _zombie(third.pid)
    finally:
        control.close()  # the worker and its pool processes gone: the server leaves
        assert server.wait(10) == 0


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.heavy
def test_without_a_server_the_pool_process_starts_the_job_process_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server gone (its end of the control socket closed): the job process is a fresh interpreter of
    ``worker.jobs.server`` started by the pool process, confined as the server's would be."""
    control, gone = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gone.close()
    monkeypatch.setattr(zygote, "_control", control)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}:{ROOT / 'sdk'}")
    monkeypatch.setenv("REASONLAB_WORKER_TOKEN", "wk_not_for_jobs_0123456789abcdef")
    try:
        job = zygote.open_job()
        assert job.spawned is not None and job.spawned.pid == job.pid
        status = Path(f"/proc/{job.pid}/status").read_text()
        assert f"PPid:\t{os.getpid()}" in status
        effective = int(
            next(line for line in status.splitlines() if line.startswith("CapEff")).split()[1], 16
        )
        assert not effective & (1 << zygote.INTROSPECTION_CAPABILITIES["CAP_SYS_PTRACE"])
        if os.geteuid() == 0:  # it is undumpable: only root reads its environment from here
            assert b"wk_not_for_jobs" not in Path(f"/proc/{job.pid}/environ").read_bytes()
        job.abandon()
        assert job.spawned.returncode == 0
    finally:
        control.close()


@pytest.mark.heavy
def test_a_job_server_that_takes_the_request_and_never_answers_does_not_hold_the_pool_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stopped or wedged server: the pool process waits FORK_HELLO_SECONDS, starts the job process
    itself, and asks that server nothing more."""
    control, server_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    held: list[int] = []

    def wedged() -> None:  # takes each request and its socket, and never forks
        while True:
            try:
                _, fds, _, _ = socket.recv_fds(server_end, 16, 4)
            except OSError:
                return
            if not fds:
                return
            held.extend(fds)

    threading.Thread(target=wedged, daemon=True).start()
    monkeypatch.setattr(zygote, "_control", control)
    monkeypatch.setattr(zygote, "FORK_HELLO_SECONDS", 0.5)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", f"{ROOT}:{ROOT / 'sdk'}")
    try:
        job = zygote.open_job()
        assert job.spawned is not None and job.spawned.pid == job.pid and len(held) == 1
        assert zygote._control is None  # the next request goes straight to a fresh interpreter
        job.abandon()
        assert job.spawned.returncode == 0
    finally:
        server_end.close()
        for fd in held:
            os.close(fd)


def test_a_fresh_job_process_that_never_says_hello_is_killed_and_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zygote, "_control", None)
    monkeypatch.setattr(zygote, "SPAWN_HELLO_SECONDS", 0.5)
    started: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def silent(args: list[str], **kw: Any) -> subprocess.Popen[bytes]:  # started, and says nothing
        proc = real_popen(["/bin/sleep", "30"], pass_fds=kw.get("pass_fds", ()), stdin=subprocess.DEVNULL)
        started.append(proc)
        return proc

    monkeypatch.setattr(zygote.subprocess, "Popen", silent)
    with pytest.raises(RuntimeError, match="did not start in"):
        zygote.open_job()
    assert started[0].poll() is not None  # killed, not left behind


def test_the_environment_of_what_the_worker_starts_is_the_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_WORKER_TOKEN", "wk_not_for_jobs_0123456789abcdef")
    monkeypatch.setenv("REASONLAB_BROKER_URL", "redis://:password@broker:6379/0")
    monkeypatch.setenv("REASONLAB_HEARTBEAT_INTERVAL", "2")
    env = zygote.run_environment()
    assert "REASONLAB_WORKER_TOKEN" not in env and "REASONLAB_BROKER_URL" not in env
    assert env["REASONLAB_HEARTBEAT_INTERVAL"] == "2"


READER = """
import json, sys
from worker.runtime import zygote
if sys.argv[2] == "confined":
    zygote.confine()
seen = {}
for name in ("environ", "maps", "mem"):
    try:
        with open(f"/proc/{sys.argv[1]}/{name}", "rb") as f:  # the access check is the open's
            seen[name] = "read"
    except OSError:
        seen[name] = "refused"
print(json.dumps(seen))
"""


def test_a_confined_process_cannot_read_an_undumpable_one() -> None:
    """What the worker's processes are (undumpable) against what a job process is (confined): none of
    the target's environment, maps or memory, even for root (whose CAP_SYS_PTRACE, CAP_SYS_ADMIN and
    CAP_PERFMON would open them), while the target stays readable to a process that is not confined when
    that one is root."""
    import json

    target = subprocess.Popen(
        [sys.executable, "-c", "import ctypes, time; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0); time.sleep(30)"]
    )
    try:
        time.sleep(0.3)

        def read(mode: str) -> dict[str, Any]:
            out = subprocess.run(
                [sys.executable, "-c", READER, str(target.pid), mode],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            seen: dict[str, Any] = json.loads(out.stdout)
            return seen

        assert read("confined") == {"environ": "refused", "maps": "refused", "mem": "refused"}
        if os.geteuid() == 0:  # the check above is not a matter of ownership alone
            assert read("plain")["mem"] == "read"
    finally:
        target.kill()
        target.wait()


class _Job:
    """A pool process's handle on a job process, without the process: it records what the pool process
    passes on, and answers ``answer`` after the worker's interrupt reached the pool process."""

    pid = 4242

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.handed: list[dict[str, Any]] = []
        self.signals: list[int] = []

    def hand_over(self, request: dict[str, Any]) -> None:
        self.handed.append(request)

    def interrupt(self, signum: int) -> None:
        self.signals.append(signum)

    def wait(self) -> Any:
        os.kill(os.getpid(), signal.SIGUSR2)  # the worker shuts down while the run goes on
        return self.answer


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [({"outcome": "released"}, "released"), ({"outcome": "rm -rf"}, "lost"), (None, "lost")],
)
def test_the_pool_process_passes_the_interrupt_on_and_trusts_only_known_outcomes(
    monkeypatch: pytest.MonkeyPatch, answer: Any, outcome: str
) -> None:
    from worker import executor

    monkeypatch.setattr(executor, "_shutting_down", False)
    previous = signal.getsignal(executor.INTERRUPT_SIGNAL)
    job = _Job(answer)
    run = {"id": 7, "attempt": 2, "run_token": "rlrun.x", "kind": "diagnostic", "spec": {}}
    got = executor._run_in_job_process(job, run, 2, "host:1")  # type: ignore[arg-type]
    assert got == outcome
    assert job.handed == [{"run": run, "attempt": 2, "worker": "host:1", "shutting_down": False}]
    assert job.signals == [executor.INTERRUPT_SIGNAL] and executor.shutting_down()
    assert signal.getsignal(executor.INTERRUPT_SIGNAL) is previous  # the pool process's own handler back
