"""A worker that stops (SIGTERM: `docker compose stop`; Ctrl-C of `reasonlab up`) hands every running run
back: the job checkpoints, releases the run (queued again as attempt + 1, one more attempt allowed) and
the next worker resumes it; whatever the worker ran before.

The pool process of a worker's first run is forked by its main thread; every later one, with the
filesystem broker (embedded mode: Celery runs its pool with threads, no event loop), by billiard's
supervisor thread. The interrupt used to reach only the main thread's children, and Celery's parent-death
signal (PR_SET_PDEATHSIG, which Linux sends when the forking *thread* exits) SIGKILLed the job as soon as a
warm shutdown ended the supervisor thread. So these tests always run a few jobs first, on both pools (the
threaded one of the filesystem broker, the event loop of Redis). A run's code runs in a job process forked
by the worker's job server (worker/runtime/zygote.py); its pool process passes the interrupt on to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.platform import Platform, free_port, up_env, wait_for

EARLIER_JOBS = 2  # the worker runs these first: the run interrupted is its third job, its second pool
# process forked by the supervisor thread (the filesystem broker)
SHORT = {"train": {"steps": 3}}
# no periodic checkpoint: what a run keeps is the one written at the interrupt
LONG = {"seed": 11, "train": {"steps": 300, "checkpoint_every": 1_000_000, "step_delay": 0.03}}


def _children(pid: int) -> set[int]:
    """Every child of every thread of ``pid``."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found.update(int(p) for p in (task / "children").read_text().split())
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture(params=["filesystem", "redis"])
def platform(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Platform]:
    """The embedded platform (SQLite, filesystem broker: Celery's threaded pool) or the server one
    (Postgres, Redis: the pool in Celery's event loop). The server one keeps a real worker's default, every
    kind imported before the fork (REASONLAB_WORKER_PRELOAD), so each lifecycle test here runs with the
    preload and without it side by side."""
    home = tmp_path / "home"
    if request.param == "filesystem":
        p = Platform(home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://")
    else:
        p = Platform(
            home, request.getfixturevalue("postgres_url"), request.getfixturevalue("redis_db"), preload=True
        )
    try:
        yield p
    finally:
        p.stop()


def _run_earlier_jobs(platform: Platform) -> None:
    exp = platform.submit(SHORT, {"grid": {"seed": list(range(1, EARLIER_JOBS + 1))}}, name="earlier")
    runs = platform.wait_finished([r["id"] for r in exp["runs"]])
    assert [r["status"] for r in runs] == ["succeeded"] * EARLIER_JOBS, platform.diagnostics()


def _is_job_server(pid: int) -> bool:
    try:
        return b"worker.jobs.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _pool_process(worker: subprocess.Popen[bytes]) -> int:
    """The worker's one pool process (once the one of a job just done has exited and its successor is up);
    the worker's other child is its job server."""

    def one() -> set[int] | None:
        first = {p for p in _children(worker.pid) if not _is_job_server(p)}
        time.sleep(0.5)
        again = {p for p in _children(worker.pid) if not _is_job_server(p)}
        return first if len(first) == 1 and again == first else None

    (pid,) = wait_for(one, 30, "the worker's pool process")
    return pid


def _job_server(worker: subprocess.Popen[bytes]) -> int:
    (pid,) = wait_for(
        lambda: {p for p in _children(worker.pid) if _is_job_server(p)}, 30, "the worker's job server"
    )
    return pid


def _running_job(worker: subprocess.Popen[bytes]) -> int:
    """The process running the worker's run: the job server's one child."""
    server = _job_server(worker)
    (pid,) = wait_for(lambda: _children(server), 30, "the run's job process")
    return pid


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        for child in _children(todo.pop()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


@pytest.mark.slow
@pytest.mark.fault
def test_sigterm_gives_the_run_back_after_earlier_jobs_and_a_new_worker_resumes_it(
    platform: Platform,
) -> None:
    platform.start_api()
    worker = platform.start_worker()
    _run_earlier_jobs(platform)
    rid = platform.submit(LONG, name="long")["runs"][0]["id"]
    wait_for(lambda: len(platform.loss_steps(rid)) >= 10, 120, "the run to log its first steps")
    job = _running_job(worker)
    others = _descendants(worker.pid)  # its pool process and its job server too

    worker.send_signal(signal.SIGTERM)  # warm shutdown: docker compose stop, or `reasonlab up` at Ctrl-C
    assert worker.wait(60) == 0
    log = (platform.logs / "worker0.log").read_text()
    released = platform.client.get_run(rid)
    # the released attempt is counted apart, not against max_attempts
    assert (released["status"], released["attempt"], released["released"], released["max_attempts"]) == (
        "queued",
        2,
        1,
        3,
    ), log[-4000:]
    assert f"run {rid} attempt 1 released at worker shutdown" in log, log[-4000:]
    assert "SIGKILL" not in log and not _alive(job), log[-4000:]
    wait_for(lambda: not any(_alive(p) for p in others), 10, "the worker's other processes to exit")
    stopped_at = max(s for s, _ in platform.loss_steps(rid))
    assert 10 <= stopped_at < 300

    platform.start_worker()
    (final,) = platform.wait_finished([rid])
    assert (final["status"], final["attempt"]) == ("succeeded", 2), platform.diagnostics()
    (result,) = platform.client.get_results(rid, kind="diagnostic")
    # resumed from the checkpoint written at the interrupt (the spec asks for no other), not from step 0
    assert result["payload"]["resumed_from_step"] >= stopped_at - 1 > 0, result
    assert [s for s, _ in platform.loss_steps(rid)] == list(range(1, 301))


@pytest.mark.slow
@pytest.mark.fault
@pytest.mark.parametrize("earlier", [False, True])
def test_an_idle_pool_process_notes_the_interrupt_and_the_worker_stops_cleanly(
    platform: Platform, earlier: bool
) -> None:
    """The interrupt reaches the idle pool process too (the worker's first, forked by its main thread, or
    a later one): it notes the shutdown (it would refuse a run) and leaves with the pool, instead of dying
    of it (billiard's threaded pool replaced the process's handler with its exit handler: "exited with
    exitcode 70"). The job server leaves with the worker."""
    platform.start_api()
    worker = platform.start_worker()
    if earlier:
        _run_earlier_jobs(platform)
    idle = _pool_process(worker)
    server = _job_server(worker)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0
    log = (platform.logs / "worker0.log").read_text()
    assert "exited with" not in log and not _alive(idle), log[-3000:]
    wait_for(lambda: not _alive(server), 10, "the job server to exit with its worker")


@pytest.mark.slow
@pytest.mark.fault
def test_kill9_of_the_worker_alone_leaves_no_job_process(platform: Platform) -> None:
    """The pool processes no longer die by the parent-death signal (it follows the forking thread): each
    watches its worker instead; the job server dies with the worker, and a run's job process with its job
    server. A kill -9 of the worker process alone (not its group) takes its idle pool process, its job
    server and its running job process with it, so no orphan heartbeats a run the reaper should hand on."""
    platform.start_api()
    worker = platform.start_worker()
    _run_earlier_jobs(platform)
    idle = _pool_process(worker)  # forked by the supervisor thread with the filesystem broker
    left = _descendants(worker.pid)
    assert idle in left and _job_server(worker) in left
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(10)
    wait_for(lambda: not any(_alive(p) for p in left), 10, "the idle pool process and the job server to exit")

    worker = platform.start_worker()
    _run_earlier_jobs(platform)
    rid = platform.submit(LONG, name="long")["runs"][0]["id"]
    wait_for(lambda: len(platform.loss_steps(rid)) >= 5, 120, "the run to log its first steps")
    job = _running_job(worker)
    left = _descendants(worker.pid)
    assert job in left
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait(10)
    wait_for(lambda: not any(_alive(p) for p in left), 10, "the running job process to exit")


def _carma_data(cache: Path) -> str:
    from tests.worker.kinds.test_carma_kind import IDM_ROWS

    folder = cache / "data" / "shutdown"
    folder.mkdir(parents=True)
    (folder / "idm.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": w}) + "\n" for t, w in IDM_ROWS)
    )
    return "shutdown/idm.jsonl"


@pytest.mark.slow
@pytest.mark.fault
def test_a_carma_run_without_periodic_checkpoints_is_given_back_and_resumed(tmp_path: Path) -> None:
    """carma checkpoints only when it stops (``train.checkpoint_every`` 0): the interrupt makes it write
    one, so the next attempt goes on from there instead of training again from step 0. Embedded, as
    under `reasonlab up`."""
    cache, home = tmp_path / "cache", tmp_path / "home"
    path = _carma_data(cache)
    platform = Platform(home, f"sqlite:///{home / 'reasonlab.db'}", "filesystem://", cache=cache)
    spec = {
        "seed": 1,
        "model": {"name": "tiny-gpt2"},
        "data": {"source": "jsonl", "path": path},
        "carma": {"lambda": 0.3, "layers": [0, 1]},
        "train": {"batch_size": 4, "epochs": 500, "max_steps": 200, "warmup_steps": 1, "eval_interval": 100},
        "cap": {"enabled": False},
        "synonyms": {"enabled": False},
    }
    try:
        platform.start_api()
        worker = platform.start_worker()
        _run_earlier_jobs(platform)
        rid = platform.client.create_experiment("carma", "carma", spec)["runs"][0]["id"]

        def training() -> bool:
            assert platform.client.get_run(rid)["status"] != "failed", platform.diagnostics()
            series = platform.client.get_metrics(rid, keys=["loss"], max_points=10)["series"].get("loss")
            return bool(series and series["total_points"] >= 5)

        wait_for(training, 180, "carma to train a few steps")
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
        released = platform.client.get_run(rid)
        assert (released["status"], released["attempt"], released["released"], released["max_attempts"]) == (
            "queued",
            2,
            1,
            3,
        ), platform.diagnostics()
        platform.start_worker()
        (final,) = platform.wait_finished([rid], timeout=300)
        assert (final["status"], final["attempt"]) == ("succeeded", 2), platform.diagnostics()
        logs = "\n".join(item["line"] for item in platform.client.get_logs(rid, limit=10_000)["items"])
        assert "resumed from step" in logs and "resumed from step 0" not in logs, logs[-3000:]
        # every attempt left its trace: the release and the resume, told by a real worker
        attempts = platform.client.list_attempts(rid)
        assert [(a["attempt"], a["outcome"]) for a in attempts] == [(1, "released"), (2, "succeeded")], (
            attempts
        )
        assert (attempts[1]["resumed_step"] or 0) > 0, attempts
        assert "[reasonlab] attempt 1 released by worker" in logs, logs[-3000:]
        step = attempts[1]["resumed_step"]
        assert f"[reasonlab] attempt 2 resumed from the checkpoint at step {step}" in logs, logs[-3000:]
        (result,) = platform.client.get_results(rid, kind="carma_eval")
        assert result["payload"]["steps"] == 200
    finally:
        platform.stop()


# --- reasonlab up ----------------------------------------------------------------------------------------


def _up(home: Path, port: int, workers: int = 1) -> subprocess.Popen[str]:
    env = up_env()
    argv = ["up", "--home", str(home), "--port", str(port), "--no-mlflow-ui", "--workers", str(workers)]
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a terminal of its own: its foreground process group is `up`'s
    )


def _ctrl_c(proc: subprocess.Popen[str]) -> str:
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does: the foreground process group
    out, _ = proc.communicate(timeout=120)
    return out


class _Api:
    def __init__(self, home: Path, port: int, workers: int = 1) -> None:
        self.url = f"http://127.0.0.1:{port}/api/v1"
        self.home = home
        self.workers = workers

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/health", timeout=1).status_code == 200 and all(
                (self.home / "logs" / f"worker-{i}.log").exists() for i in range(self.workers)
            )
        except httpx.HTTPError:
            return False

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {(self.home / 'admin.token').read_text().strip()}"}

    def submit(self, spec: dict[str, Any], sweep: dict[str, Any] | None = None) -> list[int]:
        body: dict[str, Any] = {"name": "up", "kind": "diagnostic", "spec": spec}
        if sweep:
            body["sweep"] = sweep
        created = httpx.post(f"{self.url}/experiments", json=body, headers=self.auth, timeout=30)
        created.raise_for_status()
        return [r["id"] for r in created.json()["runs"]]

    def run(self, rid: int) -> dict[str, Any]:
        got: dict[str, Any] = httpx.get(f"{self.url}/runs/{rid}", headers=self.auth, timeout=10).json()
        return got

    def steps(self, rid: int) -> int:
        got = httpx.get(f"{self.url}/runs/{rid}/metrics?keys=loss", headers=self.auth, timeout=10).json()
        series = got["series"].get("loss")
        return int(series["total_points"]) if series else 0


@pytest.mark.slow
@pytest.mark.fault
def test_ctrl_c_of_up_gives_back_a_run_after_earlier_jobs_and_the_next_up_finishes_it(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    api = _Api(home, port)
    proc = _up(home, port)
    out = ""
    try:
        wait_for(api.ready, 120, "reasonlab up to serve its API and start its worker")
        earlier = api.submit(SHORT, {"grid": {"seed": list(range(1, EARLIER_JOBS + 1))}})
        wait_for(lambda: all(api.run(r)["status"] == "succeeded" for r in earlier), 120, "the earlier jobs")
        (rid,) = api.submit(LONG)
        wait_for(lambda: api.steps(rid) >= 10, 120, "the run to log its first steps")
    finally:
        out = _ctrl_c(proc)
    worker_log = (home / "logs" / "worker-0.log").read_text()
    assert proc.returncode == 0 and "stopped." in out and "did not stop in time" not in out, out[-3000:]
    with sqlite3.connect(home / "reasonlab.db") as db:
        row = db.execute(
            "SELECT status, attempt, released, max_attempts FROM runs WHERE id = ?", (rid,)
        ).fetchone()
    # Ctrl-C released the attempt: counted apart, the allowance unchanged
    assert row == ("queued", 2, 1, 3), worker_log[-4000:]
    assert f"run {rid} attempt 1 released at worker shutdown" in worker_log, worker_log[-4000:]
    assert "SIGKILL" not in worker_log, worker_log[-4000:]

    # the next `reasonlab up` on the same home resumes the run from the checkpoint of the interrupt
    proc = _up(home, port)
    try:
        wait_for(api.ready, 120, "reasonlab up to start again")
        wait_for(lambda: api.run(rid)["status"] == "succeeded", 180, "the run to finish")
        final = api.run(rid)
        assert (final["status"], final["attempt"], final["released"], final["max_attempts"]) == (
            "succeeded",
            2,
            1,
            3,
        ), final
        # the query language counts the attempts a failure would use: the released one is not among them
        for q, found in (("attempt = 1 and released = 1", [rid]), ("attempt > 1", [])):
            page = httpx.get(f"{api.url}/runs", params={"q": q}, headers=api.auth, timeout=10).json()
            assert [r["id"] for r in page["items"] if r["id"] == rid] == found, (q, page)
        results = httpx.get(f"{api.url}/runs/{rid}/results", headers=api.auth, timeout=10).json()
        (payload,) = [r["payload"] for r in results]
        assert payload["resumed_from_step"] >= 9, payload
    finally:
        out = _ctrl_c(proc)
    assert proc.returncode == 0, out[-3000:]


@pytest.mark.slow
@pytest.mark.fault
def test_ctrl_c_of_up_with_two_workers_gives_back_both_runs_they_hold(tmp_path: Path) -> None:
    """`make up WORKERS=2`: each worker holds a run at Ctrl-C; both runs are handed back, none counted."""
    home, port = tmp_path / "home", free_port()
    api = _Api(home, port, workers=2)
    proc = _up(home, port, workers=2)
    out = ""
    try:
        wait_for(api.ready, 120, "reasonlab up to serve its API and start both workers")
        rids = api.submit(LONG, {"grid": {"seed": [21, 22]}})
        wait_for(lambda: all(api.steps(r) >= 5 for r in rids), 120, "both runs to log their first steps")
        holders = {api.run(r)["worker"] for r in rids}
        assert len(holders) == 2, holders  # one run on each worker
    finally:
        out = _ctrl_c(proc)
    logs = "\n".join((home / "logs" / f"worker-{i}.log").read_text() for i in range(2))
    assert proc.returncode == 0 and "did not stop in time" not in out, out[-3000:]
    with sqlite3.connect(home / "reasonlab.db") as db:
        rows = [
            db.execute(
                "SELECT status, attempt, released, max_attempts FROM runs WHERE id = ?", (r,)
            ).fetchone()
            for r in rids
        ]
    assert rows == [("queued", 2, 1, 3)] * 2, logs[-4000:]
    for rid in rids:
        assert f"run {rid} attempt 1 released at worker shutdown" in logs, logs[-4000:]
    assert "SIGKILL" not in logs, logs[-4000:]


# --- the pieces, in this process ------------------------------------------------------------------------


def test_job_pids_finds_children_of_every_thread() -> None:
    """A child forked by another thread (while that thread lives: billiard's supervisor) is not in
    /proc/<pid>/task/<pid>/children, the main thread's, which is all the interrupt used to read;
    ``job_pids`` finds it."""
    from worker.jobs.pool import job_pids

    started: list[subprocess.Popen[bytes]] = []
    done = threading.Event()

    def fork_and_stay() -> None:
        started.append(subprocess.Popen(["sleep", "30"]))
        done.wait(30)

    forker = threading.Thread(target=fork_and_stay)
    forker.start()
    try:
        wait_for(lambda: started, 10, "the child")
        (child,) = started
        me = os.getpid()
        assert str(child.pid) not in Path(f"/proc/{me}/task/{me}/children").read_text().split()
        assert child.pid in job_pids()
    finally:
        done.set()
        forker.join()
        for child in started:
            child.kill()
            child.wait()


PDEATHSIG_CHILD = """
import ctypes, sys, time
ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # what Celery does in a pool process: SIGKILL at the parent's death
if sys.argv[1] == "outlive":
    from worker.jobs.pool import outlive_the_forking_thread
    outlive_the_forking_thread()
print("ready", flush=True)
time.sleep(30)
"""


@pytest.mark.parametrize("outlive", [False, True])
def test_a_pool_process_outlives_the_thread_that_forked_it(outlive: bool) -> None:
    """Linux sends the parent-death signal when the forking thread exits: without
    ``outlive_the_forking_thread`` the child dies with that thread, with it the child lives on."""
    started: list[subprocess.Popen[str]] = []

    def fork() -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", PDEATHSIG_CHILD, "outlive" if outlive else "die"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).parents[2],
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        started.append(child)

    forker = threading.Thread(target=fork)
    forker.start()
    forker.join()  # the forking thread is gone
    (child,) = started
    try:
        time.sleep(0.5)
        assert (child.poll() is None) is outlive, child.returncode
        if not outlive:
            assert child.returncode == -signal.SIGKILL
    finally:
        child.kill()
        child.wait()


def test_a_kind_that_ran_to_its_end_despite_the_interrupt_finishes_instead_of_being_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kind gets the interrupt in a phase that does not check ``should_stop`` (carma's final evaluations)
    and completes: its work is done, so the run finishes succeeded rather than going back to the queue to
    be run again."""
    from types import SimpleNamespace

    from common.settings import SharedSettings
    from tests.worker.worker_fake_api import FakeApi
    from worker import executor
    from worker.kinds import get_kind
    from worker.specs.diagnostic.diagnostic import DiagnosticResult
    from worker.tracking import WriterOptions

    def run_to_the_end(spec: Any, ctx: Any) -> None:
        os.kill(os.getpid(), executor.INTERRUPT_SIGNAL)  # the worker shuts down meanwhile
        wait_for(lambda: ctx.stop_reason == "interrupt", 5, "the interrupt")
        ctx.log_result(
            DiagnosticResult(final_loss=0.1, initial_loss=1.0, steps=1, resumed_from_step=None, parameters=1)
        )

    monkeypatch.setattr(
        executor, "get_kind", lambda name: SimpleNamespace(spec=get_kind(name).spec, run=run_to_the_end)
    )
    api = FakeApi(spec={"train": {"steps": 1}})
    settings = SharedSettings(home=tmp_path / "home", heartbeat_interval=0.05)
    options = WriterOptions(flush_interval=0.05, backoff_initial=0.01, backoff_max=0.05)
    outcome = executor.execute(
        api.run["id"], 1, settings, client=api.client(), writer_options=options, worker="w:1"
    )
    assert outcome == "succeeded"
    assert [f["status"] for f in api.finishes] == ["succeeded"] and api.run["attempt"] == 1
    assert len(api.results) == 1


EARLY_INTERRUPT = """
import os, signal, sys
from worker import executor, tasks
tasks._block_interrupt()  # the worker's start
pid = os.fork()  # a pool process
if pid == 0:
    os.kill(os.getpid(), executor.INTERRUPT_SIGNAL)  # the shutdown's signal, before its init ran
    tasks._note_interrupt_until_a_run()  # its init (worker_process_init)
    os._exit(0 if executor.shutting_down() else 1)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_the_interrupt_reaching_a_pool_process_before_its_handler_is_kept_for_it() -> None:
    """A pool process forked just as the worker shuts down may get the interrupt before it installed its
    handler: it is held (blocked since the worker's start) and noted once the handler is there, neither
    lost (the process would start a run) nor fatal (SIGUSR2's default action)."""
    out = subprocess.run(
        [sys.executable, "-c", EARLY_INTERRUPT], cwd=Path(__file__).parents[2], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]


def test_a_pool_process_keeps_its_own_interrupt_handler_through_billiards_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """billiard's threaded pool resets a pool process's signals (SIGUSR2 included) to its exit handler
    right after the process's init: the handler the init installed is put back, and an interrupt that
    arrives in between is delivered to it."""
    from worker.jobs import pool

    sig = signal.SIGUSR2
    seen: list[str] = []

    def own(*_: object) -> None:
        seen.append("own")

    class Billiard:  # what billiard.pool.Worker.after_fork does, in this order
        initializer: Any = None

        def after_fork(self) -> None:
            self.initializer()  # Celery's process_initializer: worker_process_init
            # the worker's interrupt, right then. A pool process has one thread after the fork, so the
            # signal is aimed at this one: os.kill here would let the kernel hand it to another thread of
            # the test process (pytest-xdist's), whose mask the pool process never had to set.
            signal.pthread_kill(threading.get_ident(), sig)
            signal.signal(sig, lambda *_: seen.append("billiard"))  # reset_signals(full=True)

    class JobProcess(pool._JobProcessMixin, Billiard):
        pass

    monkeypatch.setattr(pool, "_own_handlers", {sig})
    previous = signal.getsignal(sig)
    job = JobProcess()
    job.initializer = lambda: signal.signal(sig, own)
    try:
        job.after_fork()
        wait_for(lambda: seen, 5, "the interrupt")
        assert seen == ["own"] and signal.getsignal(sig) is own
    finally:
        signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
