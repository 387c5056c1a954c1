"""The job server: the process every run's job process is forked from, which never held a credential.

A run's code (its kind, reading an untrusted spec) holds its run's token and nothing else
(docs/operations.md, "Trust model"). A Celery pool process cannot be that process: it is a fork of the
worker, whose memory holds the worker token and the broker's URL, and memory once written keeps its
bytes whatever Python drops. So at its start (``worker_init``) the worker starts a job server: a fresh
interpreter (an exec: none of the worker's memory), with the allow-listed environment
(``worker.runtime.environment``), undumpable and without the capabilities that read undumpable processes (``CAP_SYS_PTRACE``...), which imports torch and the
kinds once and forks one job process per run, on request:

    worker: Celery's parent (the worker token, the broker URL; undumpable)
    ├── pool process: claims the run with the worker token, hands the claim (the run's token) to its job
    │   process, relays the shutdown's interrupt to it and waits for its outcome
    └── job server: nothing secret, torch and the kinds imported (undumpable, no CAP_SYS_PTRACE)
        └── job process: the run's token only; runs the kind

A pool process asks for a job process by passing one end of a fresh socket pair to the job server over
the worker's control socket (SCM_RIGHTS, a socket no job process keeps). The server forks at once and the
child keeps that end: the server never reads what travels on it (the claim and its run token), so no later
job process inherits an earlier run's token. When the server cannot be reached (it died), the pool process
starts the job process itself as a fresh interpreter (``python -m worker.jobs.server --job-fd N``): slower
(it imports its kind), never less confined.

Death follows the tree: the job server dies with the worker (``PR_SET_PDEATHSIG``, and the control
socket's end), a job process with its job server (the same) and with its pool process (its socket's end),
so a ``kill -9`` of the worker leaves no process running a run. This module is the mechanism; what a job
process runs is ``worker.jobs.server``'s.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from worker.runtime.environment import make_undumpable, split_environment

logger = logging.getLogger(__name__)

SERVER_MODULE = "worker.jobs.server"  # run with ``python -m``: the job server, or one job with JOB_FD_ARG
JOB_FD_ARG = "--job-fd"
CONTROL_FD_ENV = "REASONLAB_JOB_SERVER_FD"  # the job server's end of the control socket
PARENT_ENV = "REASONLAB_JOB_SERVER_PARENT"  # the process it must die with
LOGLEVEL_ENV = "REASONLAB_JOB_SERVER_LOGLEVEL"

ORPHAN_EXIT_CODE = 70  # what a job process exits with when its worker or its pool process is gone
EXIT_WAIT_SECONDS = 60.0  # after its outcome, how long a job process may take to exit before it is killed
# How long a pool process waits for a new job process's first frame: forked by the job server (a fork of a
# process that has torch imported: well under a second), or a fresh interpreter that imports torch itself.
# A job server that takes the request and does not answer (stopped, wedged) would otherwise hold the pool
# process, and the run it claimed, for ever.
FORK_HELLO_SECONDS = 30.0
SPAWN_HELLO_SECONDS = 300.0
_FRAME = struct.Struct(">I")
MAX_FRAME = 64 << 20

# The worker's end of the control socket and its job server (set by ``start`` in the worker's parent
# process, inherited by the pool processes it forks afterwards).
_control: socket.socket | None = None
_server: subprocess.Popen[bytes] | None = None


# --- frames: a length, then JSON -------------------------------------------------------------------------


def send_frame(sock: socket.socket, obj: Any) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(_FRAME.pack(len(data)) + data)


def _recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket) -> Any:
    """The next frame's object; None when the other end is closed (or sent something malformed)."""
    head = _recv_exactly(sock, _FRAME.size)
    if head is None:
        return None
    (size,) = _FRAME.unpack(head)
    if size > MAX_FRAME:
        return None
    body = _recv_exactly(sock, size)
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


# --- the confinement of the job server and of every job process ------------------------------------------


# The capabilities that open another process of the user to reading despite its being undumpable:
# CAP_SYS_PTRACE (its memory, /proc/<pid>/mem), CAP_SYS_ADMIN and CAP_PERFMON (its environment and maps,
# the ptrace "read" checks). A worker run as root has them; a job process needs none.
INTROSPECTION_CAPABILITIES = {"CAP_SYS_ADMIN": 21, "CAP_SYS_PTRACE": 19, "CAP_PERFMON": 38}


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_introspection_capabilities() -> None:
    """Give up ``INTROSPECTION_CAPABILITIES`` (effective, permitted and inheritable sets, and the bounding
    set, so an exec cannot get them back) where this process has them (a worker run as root): being
    undumpable keeps the worker's processes unreadable only to processes without them. Linux only; a
    process without them (the worker image's own user) is left as it is."""
    if not sys.platform.startswith("linux"):
        return
    pr_capbset_drop, version_3 = 24, 0x20080522
    libc = ctypes.CDLL(None, use_errno=True)
    for bit in INTROSPECTION_CAPABILITIES.values():  # needs CAP_SETPCAP, which such a root process has
        libc.prctl(pr_capbset_drop, bit, 0, 0, 0)
    header, data = _CapHeader(version_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return
    held = False
    for bit in INTROSPECTION_CAPABILITIES.values():
        word, mask = data[bit // 32], 1 << (bit % 32)
        held = held or bool((word.effective | word.permitted | word.inheritable) & mask)
        word.effective &= ~mask & 0xFFFFFFFF
        word.permitted &= ~mask & 0xFFFFFFFF
        word.inheritable &= ~mask & 0xFFFFFFFF
    if held and libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "could not give up CAP_SYS_PTRACE, CAP_SYS_ADMIN and CAP_PERFMON")


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when ``parent`` (the process that started it, from its main thread) ends; exit
    at once if it already has."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(ORPHAN_EXIT_CODE)


def confine() -> None:
    """What the job server (and a job process started without it) does first: undumpable (its memory,
    environment and file descriptors unreadable by other processes of its user, its children inherit it),
    without the capabilities that read undumpable processes."""
    make_undumpable()
    drop_introspection_capabilities()


def run_environment() -> dict[str, str]:
    """The environment a job server or job process starts with: the allow-list, whatever this one holds."""
    kept, _ = split_environment(os.environ)
    return kept


# --- the worker's side ------------------------------------------------------------------------------------


def start(loglevel: int = logging.INFO) -> subprocess.Popen[bytes]:
    """Start the job server (in the worker's parent process, from its main thread, before it forks any pool
    process: they inherit the control socket)."""
    global _control, _server
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = {
        **run_environment(),
        CONTROL_FD_ENV: str(theirs.fileno()),
        PARENT_ENV: str(os.getpid()),
        LOGLEVEL_ENV: str(loglevel),
    }
    try:
        server = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE],
            env=env,
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
    finally:
        theirs.close()
    _control, _server = mine, server
    logger.info("job server started (process %d)", server.pid)
    return server


def serve(control: socket.socket, run_job: Callable[[socket.socket], None]) -> None:
    """The job server's loop: for each socket end a pool process passes, fork a job process that runs
    ``run_job`` on it (and never returns here); returns when every holder of the worker's end is gone."""
    me = os.getpid()
    while True:
        ready, _, _ = select.select([control], [], [], 1.0)
        _reap()
        if not ready:
            continue
        try:
            _, fds, _, _ = socket.recv_fds(control, 16, 4)
        except (ConnectionResetError, OSError):
            return
        if not fds:
            return  # the worker and its pool processes are gone
        fd, *extra = fds  # a pool process passes one end per request
        for other in extra:
            os.close(other)
        if os.fork() == 0:
            code = 1
            try:
                control.close()
                die_with_parent(me)
                run_job(socket.socket(fileno=fd))
                code = 0
            except BaseException:
                logger.exception("job process %d failed", os.getpid())
            finally:
                for stream in (sys.stdout, sys.stderr):  # what a kind printed
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(code)
        os.close(fd)


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            logger.error("job process %d was ended by signal %s", pid, signal.Signals(-code).name)
        elif code:
            logger.warning("job process %d ended with code %d", pid, code)


class JobProcess:
    """A pool process's handle on the job process of one run: hand it the claim, relay the interrupt,
    wait for its outcome."""

    def __init__(self, conn: socket.socket, pid: int, spawned: subprocess.Popen[bytes] | None) -> None:
        self.conn = conn
        self.pid = pid
        self.spawned = spawned
        self.pidfd = os.pidfd_open(pid)

    def hand_over(self, request: dict[str, Any]) -> None:
        send_frame(self.conn, request)

    def interrupt(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signum)

    def wait(self) -> Any:
        """The job process's last frame (its outcome); None when it ended without one. Returns once it
        has exited (its GPU memory freed for the next run)."""
        message = recv_frame(self.conn)
        self._wait_exit()
        self.conn.close()
        return message

    def abandon(self) -> None:
        """Nothing to run (the claim was refused): the job process ends when its socket does."""
        self.conn.close()
        self._wait_exit()

    def _wait_exit(self) -> None:
        ready, _, _ = select.select([self.pidfd], [], [], EXIT_WAIT_SECONDS)
        if not ready:
            logger.error("job process %d did not exit after its run: killed", self.pid)
            self.interrupt(signal.SIGKILL)
            select.select([self.pidfd], [], [], 10.0)
        os.close(self.pidfd)
        if self.spawned is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.spawned.wait(10)


def open_job() -> JobProcess:
    """A fresh job process waiting for its run: forked by the job server, or a fresh interpreter started
    here when the server cannot be reached. Its first frame is its pid, sent once it is ready for the
    interrupt (so the pid names a live process when the pidfd is taken)."""
    if _control is not None:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            socket.send_fds(_control, [b"job"], [theirs.fileno()])
        except OSError as exc:
            logger.error("the job server cannot be reached (%s): this run's process starts on its own", exc)
            mine.close()
        else:
            theirs.close()
            hello = _hello(mine, FORK_HELLO_SECONDS)
            if isinstance(hello, dict) and isinstance(hello.get("pid"), int):
                return JobProcess(mine, hello["pid"], None)
            mine.close()
            if hello is _NO_ANSWER:
                # stopped or wedged: this pool process starts its job processes itself from now on
                logger.error(
                    "the job server did not answer in %.0f s: this run's process, and this pool process's "
                    "next ones, start on their own",
                    FORK_HELLO_SECONDS,
                )
                _forget_server()
            else:
                logger.error("the job server dropped the request: this run's process starts on its own")
    return _spawn_job()


_NO_ANSWER = object()


def _hello(sock: socket.socket, seconds: float) -> Any:
    """A job process's first frame, or _NO_ANSWER after ``seconds`` (the socket blocks again after)."""
    sock.settimeout(seconds)
    try:
        return recv_frame(sock)
    except TimeoutError:
        return _NO_ANSWER
    finally:
        sock.settimeout(None)


def _forget_server() -> None:
    global _control
    if _control is not None:
        _control.close()
    _control = None


def _spawn_job() -> JobProcess:
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        spawned = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, JOB_FD_ARG, str(theirs.fileno())],
            env={**run_environment(), PARENT_ENV: str(os.getpid())},
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
    finally:
        theirs.close()
    hello = _hello(mine, SPAWN_HELLO_SECONDS)
    if not (isinstance(hello, dict) and isinstance(hello.get("pid"), int)):
        mine.close()
        if hello is _NO_ANSWER:
            spawned.kill()
        spawned.wait()
        late = f"did not start in {SPAWN_HELLO_SECONDS:.0f} s" if hello is _NO_ANSWER else "did not start"
        raise RuntimeError(f"the job process {late} (exit code {spawned.returncode})")
    return JobProcess(mine, hello["pid"], spawned)


def wait_for_parent_or_socket(conn: socket.socket, parent: int, interval: float = 0.5) -> None:
    """In a job process (a thread): exit once its pool process is gone (its socket's end closed) or its
    parent changed. Only the end of the socket is awaited: the pool process sends nothing after the claim."""
    while True:
        ready, _, _ = select.select([conn], [], [], interval)
        if os.getppid() != parent:
            os._exit(ORPHAN_EXIT_CODE)
        if ready:
            try:
                data = conn.recv(1, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:
                logger.critical("job process %d: its worker's pool process is gone; exiting", os.getpid())
                os._exit(ORPHAN_EXIT_CODE)
            time.sleep(interval)
