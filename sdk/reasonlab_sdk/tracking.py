"""Track any training script: ``init`` opens a run, ``log`` records points, a background thread ships them.

    import reasonlab_sdk as rl

    with rl.init(project="default", experiment="mnist", config={"lr": 0.1}) as run:
        for step in range(100):
            run.log({"loss": 1 / (step + 1), "eval": {"acc": step / 100}})  # keys loss, eval/acc

``log`` validates and copies the values and returns at once: the calling thread does no I/O. A
background thread appends every record to the run's append-only log on disk (``spool.py``), sends points
in batches to ``POST /runs/{id}/metrics`` (an idempotent upsert on run, key and step) with the run's own
token, sends heartbeats, and marks what the API acknowledged. A server that is down costs a warning: the
points wait in the log and arrive when it is back. ``finish`` waits for the acknowledgements (with a
timeout) and says how many points are left and where the log is. ``mode="offline"`` (or
``REASONLAB_OFFLINE=1``) writes only the log, under ``./reasonlab-runs/<id>/`` (or ``REASONLAB_DIR``).

A second background thread samples the machine, the script's process and its GPUs every 15 s
(``REASONLAB_SYSTEM_METRICS_INTERVAL``; 0 turns it off) and logs them as the ``system/*`` series the
platform's workers log (``sysmetrics.py``), at steps of their own: seconds since the run was created.

Non-finite values (NaN, infinities) are stored as such: recorded and sent as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` (JSON has no literal for them), which the ingest route stores as
those values.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import math
import os
import platform
import queue
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Mapping
from datetime import datetime
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from reasonlab_sdk import points as compact_points
from reasonlab_sdk.client import ApiError, ApiUnavailable, Conflict, FinishStatus, ReasonLabClient
from reasonlab_sdk.spool import LOG_NAME, Spool
from reasonlab_sdk.spool import read as read_log
from reasonlab_sdk.sync import remember
from reasonlab_sdk.sysmetrics import PREFIX as SYSTEM_PREFIX
from reasonlab_sdk.sysmetrics import SystemSampler, interval_from_env

Mode = Literal["online", "offline"]
Resume = Literal["never", "allow", "must"]

BATCH = 5_000  # points per request (the API takes 10,000)
MAX_KEY = 250
MAX_DIFF = 200_000  # the API's bound on a stored diff
MAX_PACKAGES = 2_000
SENT = (
    "point",
    "params",
    "artifact",
)  # the records the sender ships (a resumed run re-sends unacknowledged ones)


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return float(value) if value else default


def run_dir() -> Path:
    """Where runs' local logs go: ``REASONLAB_DIR`` or ``./reasonlab-runs``."""
    return Path(os.environ.get("REASONLAB_DIR") or "reasonlab-runs")


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"eval": {"acc": 1}}`` -> ``{"eval/acc": 1}``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise ValueError(f"metric key {key!r} is not a string")
        full = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out |= flatten(value, full + "/")
        else:
            out[full] = value
    return out


def metric_value(key: str, value: Any) -> float | str:
    """A number as recorded and sent: a finite float, or ``"NaN"``, ``"Infinity"``, ``"-Infinity"`` (JSON's
    log line and the ingest route's body have no literal for them); ValueError naming ``key`` otherwise."""
    if not key or len(key) > MAX_KEY or key.startswith("_") or "\x00" in key:
        raise ValueError(f"metric key {key!r}: 1 to {MAX_KEY} characters, not starting with '_', no NUL")
    if value is None or isinstance(value, str):
        raise ValueError(f"metric {key!r}: {value!r} is not a number")
    try:
        number = float(value)  # ints, bools, numpy and torch scalars
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past a float's range
        raise ValueError(f"metric {key!r}: {type(value).__name__} {value!r} is not a number") from None
    if math.isfinite(number):
        return number
    return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"


@functools.cache
def _packages() -> tuple[str, ...]:
    """The installed distributions, read once a process: reading every distribution's metadata costs
    ~0.1 CPU-s, and a script that starts several runs does not change its environment between them."""
    return tuple(
        sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"])[
            :MAX_PACKAGES
        ]
    )


def provenance() -> dict[str, Any]:
    """The command line, git state, Python, packages and host of this process (what is known)."""
    out: dict[str, Any] = {
        "command": " ".join([sys.executable, *sys.argv])[:10_000],
        "python": platform.python_version(),
        "host": socket.gethostname()[:300],
        "packages": list(_packages()),
    }
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if commit.returncode == 0:
            out["git_commit"] = commit.stdout.strip()
            diff = subprocess.run(["git", "diff", "HEAD"], capture_output=True, text=True, timeout=10).stdout
            out["git_dirty"] = bool(diff)
            if diff:
                out["git_diff"] = diff[:MAX_DIFF]
    except (OSError, subprocess.SubprocessError):
        pass  # no git here: provenance without it
    return out


class Run:
    """One tracked run. Use ``init`` to get one."""

    def __init__(
        self,
        *,
        folder: Path,
        mode: Mode,
        step: int,
        run_id: int | None = None,
        attempt: int = 1,
        client: ReasonLabClient | None = None,
        seq: int = 0,
        pending: list[dict[str, Any]] | None = None,
    ) -> None:
        self.folder, self.mode, self.id, self.attempt = folder, mode, run_id, attempt
        self._client = client
        self._step = step
        self._seqs = itertools.count(
            seq + 1
        )  # the log's record numbers go on over a resume (next() is atomic)
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        # held while a record is numbered and queued, and while the run is marked finished: nothing (the
        # sampler's points included) lands in the queue after the finish record
        self._lock = threading.Lock()
        self._spool = Spool(folder)
        # logged and spooled, not yet acknowledged (a resumed run starts with what its last session left)
        self._pending: list[dict[str, Any]] = pending or []
        self._finished = False
        self._keys: set[str] = (
            set()
        )  # metric keys already found valid (``log``'s fast path skips their check)
        self._lost_lease = False
        self._warned_down = False
        self.cancel_requested = False
        self.summary = Summary(self)
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="reasonlab-sender", daemon=True)
        self._thread.start()
        self._stop_sampling = threading.Event()

    @property
    def spool_path(self) -> Path:
        return self._spool.path

    # -- the caller's side: validate, copy, enqueue ---------------------------------------------------

    def _put(self, *records: dict[str, Any]) -> None:
        with self._lock:
            if self._finished:
                raise RuntimeError("this run is finished")
            for record in records:
                self._queue.put({**record, "seq": next(self._seqs)})

    def log(self, values: Mapping[str, Any], step: int | None = None) -> None:
        """Record ``values`` (nested dicts flattened with ``/``) at ``step`` (the next step when omitted).
        A bad key or value raises ValueError and records nothing of this call."""
        if step is not None and (
            isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= compact_points.MAX_STEP
        ):
            raise ValueError(f"step must be an integer from 0 to {compact_points.MAX_STEP}, not {step!r}")
        points = self._points(values)
        at = self._step if step is None else step
        self._step = max(self._step, at + 1)
        now = time.time()
        with self._lock:  # as _put, each record built once with its number (the training thread's cost)
            if self._finished:
                raise RuntimeError("this run is finished")
            put, seqs = self._queue.put, self._seqs
            for k, v in points.items():
                put({"t": "point", "key": k, "step": at, "value": v, "time": now, "seq": next(seqs)})

    def _points(self, values: Mapping[str, Any]) -> dict[str, float | str]:
        """``values`` as ``metric_value`` records them. The common call (flat, every key seen before, every
        value a Python float or int) takes a fast path: no flattening, no key check, a float's finiteness
        by ``x - x == 0``; anything else goes the whole way, and its keys join the ones seen."""
        known, out = self._keys, {}
        for key, value in values.items():
            kind = type(value)
            if kind is float and key in known:
                out[key] = value if value - value == 0.0 else metric_value(key, value)
            elif kind is int and key in known:
                out[key] = metric_value(key, value)
            else:
                break
        else:
            return out
        out = {k: metric_value(k, v) for k, v in flatten(values).items()}
        known.update(out)
        return out

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Parameters the script derived (flattened with ``.`` by the API; the last value of a key kept)."""
        self._put({"t": "params", "params": dict(params)})

    def log_artifact(self, path: str | os.PathLike[str], name: str | None = None) -> None:
        """Upload the file at ``path`` as the run's artifact ``name`` (its file name by default)."""
        source = Path(path).resolve()
        if not source.is_file():
            raise ValueError(f"{source} is not a file")
        self._put({"t": "artifact", "path": str(source), "name": name or source.name})

    # -- finishing --------------------------------------------------------------------------------------

    def finish(
        self, status: FinishStatus = "succeeded", error: str | None = None, timeout: float = 60.0
    ) -> int:
        """Wait (up to ``timeout`` s) for the API to acknowledge every record, then end the run with
        ``status``. Returns the number of records left unsent (they stay in the log: ``reasonlab sync``)."""
        self._stop_sampling.set()
        with self._lock:
            if self._finished:
                return 0
            self._queue.put({"t": "finish", "status": status, "error": error, "seq": next(self._seqs)})
            self._finished = True
            self._queue.put(None)
        self._thread.join(timeout)
        left = sum(1 for r in self._pending if r["t"] != "finish")
        if self.mode == "offline":
            print(
                f"reasonlab: offline run saved in {self.folder} (`reasonlab sync {self.folder}`)",
                file=sys.stderr,
            )
        elif left:
            warnings.warn(
                f"reasonlab: {left} record(s) of run {self.id or self.folder.name} were not acknowledged; "
                f"they are kept in {self.spool_path} (`reasonlab sync {self.folder}` uploads them)",
                stacklevel=2,
            )
        self._spool.close()
        _forget(self)
        return left

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.finish()
        else:
            self.finish("failed", "".join(traceback.format_exception(kind, exc, tb))[-10_000:])

    # -- the system metrics thread ----------------------------------------------------------------------

    def _start_sampling(self, sampler: SystemSampler | None, every: float) -> None:
        """Sample the system every ``every`` seconds in a thread of its own (none without a sampler)."""
        if sampler is not None and every > 0:
            threading.Thread(
                target=self._sample_loop, args=(sampler, every), name="reasonlab-system-metrics", daemon=True
            ).start()

    def _sample_loop(self, sampler: SystemSampler, every: float) -> None:
        """A sample every ``every`` seconds until the run finishes, queued as points at the sampler's step
        (seconds since the run was created), apart from the script's own steps."""
        while not self._stop_sampling.wait(every):
            values = sampler.sample()
            now = time.time()
            step = sampler.step(now)
            records = [
                {"t": "point", "key": k, "step": step, "value": v, "time": now}
                for k, v in values.items()
                if math.isfinite(v)
            ]
            if not records:
                continue
            try:
                self._put(*records)
            except RuntimeError:  # finished meanwhile: the sample is dropped
                return

    # -- the sender thread ------------------------------------------------------------------------------

    def _loop(self) -> None:
        beat_every = _env_float("REASONLAB_HEARTBEAT_INTERVAL", 10.0)
        next_beat = 0.0
        backoff = 0.0
        done = False
        while True:
            try:
                record = self._queue.get(timeout=min(0.5, backoff) if backoff else 0.5)
            except queue.Empty:
                record = {}
            taken: list[dict[str, Any]] = []
            while record is not None:
                if record:
                    taken.append(record)
                try:
                    record = self._queue.get_nowait()
                except queue.Empty:
                    break
            else:
                done = True
            if taken:
                self._spool.append(*taken)
                if self.mode == "online":  # an offline run's log is the whole run: nothing to send
                    self._pending += taken
            if self.mode == "online" and not self._lost_lease:
                if time.monotonic() >= next_beat and not done:
                    self._send(self._heartbeat)
                    next_beat = time.monotonic() + beat_every
                ok = self._send(self._flush)
                backoff = 0.0 if ok else min(max(backoff * 2, 0.5), 5.0)
                if done and not ok:
                    # keep trying until finish()'s timeout gives up on us (the thread is a daemon)
                    time.sleep(backoff)
                    continue
            if done:
                return

    def _send(self, what: Any) -> bool:
        try:
            what()
        except Conflict as exc:
            self._lost_lease = True
            warnings.warn(f"reasonlab: run {self.id} was taken over or ended elsewhere: {exc}", stacklevel=1)
            return False
        except ApiUnavailable as exc:
            if not self._warned_down:
                warnings.warn(
                    f"reasonlab: the API is unreachable ({exc}); points wait in {self.spool_path}",
                    stacklevel=1,
                )
                self._warned_down = True
            return False
        except ApiError as exc:
            if exc.status is not None and exc.status >= 500:
                return False
            raise
        if self._warned_down:
            warnings.warn("reasonlab: the API is back; sending what waited", stacklevel=1)
            self._warned_down = False
        return True

    def _heartbeat(self) -> None:
        assert self._client is not None and self.id is not None
        if self._client.heartbeat(self.id, self.attempt).get("cancel_requested"):
            if not self.cancel_requested:
                warnings.warn(f"reasonlab: run {self.id} was cancelled in the dashboard", stacklevel=1)
            self.cancel_requested = True

    def _flush(self) -> None:
        """Send the pending records in order, marking each stretch acknowledged as it lands."""
        assert self._client is not None and self.id is not None
        while self._pending:
            head = self._pending[0]
            if head["t"] == "point":
                batch: list[dict[str, Any]] = []
                for r in self._pending:
                    if r["t"] != "point" or len(batch) == BATCH:
                        break
                    batch.append(r)
                points = [{"key": r["key"], "step": r["step"], "value": r["value"]} for r in batch]
                self._client.post_metrics(self.id, points, attempt=self.attempt, compact=True)
            elif head["t"] == "params":
                batch = [head]
                self._client.post_params(self.id, head["params"], attempt=self.attempt)
            elif head["t"] == "artifact":
                batch = [head]
                self._client.upload_artifact(self.id, head["name"], Path(head["path"]), attempt=self.attempt)
            else:  # finish
                batch = [head]
                self._client.finish(self.id, self.attempt, head["status"], error=head["error"])
            del self._pending[: len(batch)]
            self._spool.append({"t": "ack", "upto": batch[-1]["seq"]})


class Summary:
    """``run.summary["best_acc"] = 0.93``: a final value, stored as the logged param ``summary.<key>``."""

    def __init__(self, run: Run) -> None:
        self._run = run
        self._values: dict[str, Any] = {}

    def __setitem__(self, key: str, value: Any) -> None:
        self._values[key] = value
        self._run.log_params({"summary": {key: value}})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]


# the runs this process has open, finished on interpreter exit or an uncaught exception
_open: list[Run] = []
_hooked = False


def _forget(run: Run) -> None:
    if run in _open:
        _open.remove(run)


def _on_exit() -> None:
    for run in list(_open):
        run.finish()


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    text = "".join(traceback.format_exception(kind, exc, tb))[-10_000:]
    for run in list(_open):
        run.finish("failed", text)
    _previous_hook(kind, exc, tb)


_previous_hook = sys.excepthook


def _install_hooks() -> None:
    global _hooked, _previous_hook
    if not _hooked:
        _previous_hook = sys.excepthook
        sys.excepthook = _excepthook
        atexit.register(_on_exit)
        _hooked = True


def init(
    project: str = "default",
    experiment: str = "external",
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    tags: list[str] | tuple[str, ...] = (),
    group: str | None = None,
    id: int | str | None = None,
    resume: Resume = "never",
    mode: Mode | None = None,
    api_url: str | None = None,
    token: str | None = None,
    client: ReasonLabClient | None = None,
    system_metrics_interval: float | None = None,
) -> Run:
    """Open a run of this script: online (the API at ``api_url`` or ``REASONLAB_API_URL``, with ``token``
    or ``REASONLAB_TOKEN``, or through ``client``: one already configured, a custom transport) or offline
    (a local log only; ``reasonlab sync`` uploads it later). ``system_metrics_interval``: seconds between
    samples of the machine, the process and its GPUs (``system/*``); None: ``REASONLAB_SYSTEM_METRICS_INTERVAL``
    or 15 s; 0: none."""
    mode = mode or ("offline" if os.environ.get("REASONLAB_OFFLINE") == "1" else "online")
    every = interval_from_env() if system_metrics_interval is None else float(system_metrics_interval)
    if not every >= 0:
        raise ValueError(
            f"system_metrics_interval must be 0 (off) or more seconds, not {system_metrics_interval!r}"
        )
    body: dict[str, Any] = {
        "experiment": experiment,
        "name": name,
        "config": dict(config or {}),
        "tags": list(tags),
        "group": group,
        "resume": resume,
        "provenance": provenance(),
    }
    _install_hooks()
    run = (
        _offline(body, id, every)
        if mode == "offline"
        else _online(project, body, id, client or _client(api_url, token), every)
    )
    _open.append(run)
    return run


def _user_steps(records: list[dict[str, Any]]) -> list[int]:
    """The steps of the script's own points (the system samples' steps are seconds, not the script's)."""
    return [r["step"] for r in records if r.get("t") == "point" and not r["key"].startswith(SYSTEM_PREFIX)]


def _sampler(origin: float, every: float) -> SystemSampler | None:
    return SystemSampler(origin) if every > 0 else None


def _epoch(text: str | None) -> float:
    """An API timestamp as epoch seconds; now if absent or unreadable."""
    if text:
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return time.time()


def _offline(body: dict[str, Any], local_id: int | str | None, every: float) -> Run:
    resume = body["resume"]
    if local_id is None and resume == "must":
        raise ValueError("resume='must' needs the id of the run to resume")
    folder = run_dir() / str(local_id or uuid.uuid4().hex[:12])
    logged = read_log(folder / LOG_NAME).records
    if logged and resume == "never":
        raise ValueError(f"{folder} holds a run already: pass resume='allow' or 'must' to go on with it")
    if not logged and resume == "must":
        raise ValueError(f"no offline run to resume in {folder}")
    steps = _user_steps(logged)
    seq = max((r.get("seq", 0) for r in logged), default=0)
    # the run's creation, for the system samples' steps: when its log was started (a resume goes on from it)
    created = next((r["time"] for r in logged if r.get("t") == "init" and "time" in r), time.time())
    run = Run(folder=folder, mode="offline", step=max(steps) + 1 if steps else 0, seq=seq)
    run._put({"t": "resume" if logged else "init", **body, "project": None, "time": time.time()})
    run._start_sampling(_sampler(created, every), every)  # after the init record: the log starts with it
    return run


def _client(api_url: str | None, token: str | None) -> ReasonLabClient:
    url = api_url or os.environ.get("REASONLAB_API_URL") or "http://127.0.0.1:8000"
    return ReasonLabClient(url, token or os.environ.get("REASONLAB_TOKEN"))


def _online(
    project: str, body: dict[str, Any], run_id: int | str | None, client: ReasonLabClient, every: float
) -> Run:
    project_id = next((p["id"] for p in client.list_projects() if p["name"] == project), None)
    if project_id is None:
        raise ValueError(f"project {project!r} not found (or you are not in it)")
    if run_id is not None:
        body["id"] = int(run_id)
    opened = client.open_external_run(project_id, body)
    folder = run_dir() / str(opened["id"])
    folder.mkdir(parents=True, exist_ok=True)
    remember(folder, opened["id"], project_id)  # `reasonlab sync` finds the run of what is left here
    logged = read_log(folder / LOG_NAME).records
    acked = max((r["upto"] for r in logged if r.get("t") == "ack"), default=0)
    unsent = [r for r in logged if r.get("t") in SENT and r.get("seq", 0) > acked]
    last = opened["last_step"]
    steps = [last] if last is not None else []
    steps += _user_steps(unsent)
    run = Run(
        folder=folder,
        mode="online",
        step=max(steps) + 1 if steps else 0,
        run_id=opened["id"],
        attempt=opened["attempt"],
        client=client.with_token(opened["run_token"]),
        seq=max((r.get("seq", 0) for r in logged), default=0),
        pending=unsent,
    )
    run._start_sampling(_sampler(_epoch(opened["created_at"]), every), every)
    return run
