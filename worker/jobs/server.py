"""The job server's program, and what each job process runs (the mechanism: ``worker.runtime.zygote``).

    python -m worker.jobs.server            the job server: the worker starts it (worker/tasks.py)
    python -m worker.jobs.server --job-fd N   one job process on socket N (a pool process's fallback when
                                            the job server cannot be reached)

A job process sends its pid, receives its run's claim (the run with its token, the attempt, the worker's
name, whether the worker is shutting down), runs it with the run's token alone and sends the outcome back.
It never sees the worker token: the pool process that claimed holds that, and the job server it is forked
from was started from a fresh interpreter with the allow-listed environment.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Sequence

from common.settings import get_settings
from reasonlab_sdk.client import ReasonLabClient
from worker import executor
from worker.kinds import get_kind, kind_names
from worker.runtime import zygote

logger = logging.getLogger(__name__)

LOG_FORMAT = "[%(asctime)s: %(levelname)s/job-%(process)d] %(message)s"  # as Celery's, with the pid


def preload() -> None:
    """Import every kind in the job server, so each job process is forked with them loaded and starts its
    kind within milliseconds. Imports only: no torch op runs here, so neither CUDA nor an OpenMP thread
    pool exists before the fork. (MLflow is not loaded: the API mirrors runs to it.)

    torch itself always: every kind needs it, and a job process would take ~1.1 CPU-s to import it (the
    worker's own processes do not: they never run a kind)."""
    importlib.import_module("torch")
    if not get_settings().worker_preload:  # REASONLAB_WORKER_PRELOAD=false: each job process imports its kind
        return
    # torch._dynamo: torch.optim imports it at the first optimiser built (~3 s per process otherwise)
    for module in ("torch._dynamo",):
        try:
            importlib.import_module(module)
        except Exception as exc:
            logger.warning("preload of %s failed: %s", module, exc)
    for name in kind_names():
        try:
            get_kind(name)
        except Exception as exc:  # a broken kind fails its own runs, not the worker
            logger.warning("preload of kind %s failed: %s", name, exc)


def run_job(conn: socket.socket) -> None:
    """One job process: its pid, its claim, the run with the run's token, its outcome."""
    parent = os.getppid()
    zygote.send_frame(conn, {"pid": os.getpid()})
    request = zygote.recv_frame(conn)
    if not isinstance(request, dict):
        return  # the claim was refused (or the pool process is gone): nothing to run
    threading.Thread(
        target=zygote.wait_for_parent_or_socket, args=(conn, parent), name="reasonlab-pool-watch", daemon=True
    ).start()
    if request.get("shutting_down"):
        executor.note_shutdown()
    settings = get_settings()
    run = request["run"]
    with ReasonLabClient(settings.api_url, run["run_token"]) as api:
        outcome = executor.run_claimed(
            api, run, int(request["attempt"]), settings, worker=str(request["worker"]), exit_with_parent=True
        )
    zygote.send_frame(conn, {"outcome": outcome})


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    zygote.confine()
    parent = int(os.environ.pop(zygote.PARENT_ENV, "0") or 0)
    zygote.die_with_parent(parent)
    # Ctrl-C reaches the worker's whole process group: the worker decides (a warm shutdown, whose interrupt
    # the job processes get from their pool process), as Celery's pool processes ignore it too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the shutdown's interrupt: noted until a run installs its own handler (blocked by the worker before it
    # started this process, so one sent meanwhile waits for this handler)
    signal.signal(executor.INTERRUPT_SIGNAL, executor.note_shutdown)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {executor.INTERRUPT_SIGNAL})
    level = int(os.environ.pop(zygote.LOGLEVEL_ENV, str(logging.INFO)) or logging.INFO)
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request drowns the run's logs
    if args[:1] == [zygote.JOB_FD_ARG]:
        code = 1
        try:
            run_job(socket.socket(fileno=int(args[1])))
            code = 0
        except BaseException:
            logger.exception("job process %d failed", os.getpid())
        finally:
            _flush()
            os._exit(code)  # a kind's leftover threads must not keep the process
    control = socket.socket(fileno=int(os.environ.pop(zygote.CONTROL_FD_ENV)))
    preload()
    logger.info("job server ready (process %d)", os.getpid())
    zygote.serve(control, run_job)
    _flush()


if __name__ == "__main__":
    main()
