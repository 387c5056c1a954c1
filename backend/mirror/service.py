"""The MLflow mirror: every run copied from the platform database into MLflow by the API (its leader), so
workers need no MLflow URL and nothing has to catch the mirror up.

Per run (``mirror_runs``, its outbox row, marked pending by a trigger whenever the run's status changes):

1. the MLflow run: experiment ``reasonlab/experiment-<id>``, named after the run (``runs.name``, else
   ``run-<id>``; a rename sets MLflow's ``mlflow.runName`` tag, recorded in ``mirror_runs.name_sent``),
   starting when the run started (its first claim), tagged with the run, its
   experiment, attempt, kind, worker and sweep params, the resolved spec as params; recorded in
   ``runs.mlflow_run_id`` (the run page's "Open in MLflow"). Found again by its tags after a crash between
   its creation and that commit, never made twice. A new attempt re-tags it and sets it running again.
2. metric points, per series in step order after its watermark (``mirror_series.sent_step``), read a
   page at a time from the primary key (``LIMIT``: as many rows as there are points, whatever their
   steps), at most ``mirror_batch`` points a tick, 1,000 to an MLflow call. While the run is active a
   series' latest step is held back (the run may log it again); once it finished, everything is sent.
   A watermark is committed only after MLflow acknowledged the points and only if ingest did not change
   the series meanwhile (``seq``); a point that changed at or below a watermark (a resumed attempt that is
   not bit-exact, a point re-sent with another value) makes the mirror rebuild the run's MLflow run, once
   the run finished (``stale`` meanwhile: one rebuild however many such changes): a new one filled from the
   database, the old one deleted, since MLflow appends a re-logged step. A batch
   sent again after a crash of the API (acknowledged, not committed) is the same points with the same
   timestamps, which MLflow ignores.
   The params the run logged itself (``runs.logged_params``, ``POST /runs/{id}/params``) follow whenever
   their revision is not the one ``mirror_runs.params_sent`` records, compared with what the MLflow run
   has: a missing key is logged; a key it has with another value (MLflow params are immutable) keeps the
   value MLflow got first and the platform's value goes to the tag ``reasonlab.param_conflict.<key>``.
3. once the run finished and its points are all sent: its result records as JSON artifacts
   (``results/<kind>-<n>.json``), a succeeded run's outputs and final model copied from the artifact
   store (``outputs/``, ``model/``), then its MLflow status, with an end time that makes MLflow's duration
   (end - start) ReasonLab's run time: the seconds workers spent on it over all its attempts, the downtime
   between them not counted (``run_seconds``); so after such downtime MLflow's end time is earlier than
   the run's ``finished_at`` by it. Then the outbox row is no longer pending (unless the run's status
   moved meanwhile).

MLflow down: the run's row backs off (``retry_at``) and the tick stops; nothing is lost, the watermarks
say where to start. Every loop is bounded by what exists (points, keys, results, files), never by a step
range. On Postgres one API process mirrors at a time: the one holding the mirror's advisory lock.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.orm import Session, sessionmaker

from backend.db import session_scope, utcnow
from backend.mirror import repository as repo
from backend.mirror.mlflow import (
    MAX_METRICS_PER_BATCH,
    MAX_TAG_VALUE,
    MlflowTarget,
    Target,
    conflict_tag,
    mlflow_value,
)
from backend.settings import Settings
from backend.store import ArtifactStore, store_for
from common.mlflow_names import MLFLOW_STATUS, mlflow_key, param_values, result_artifact
from common.runs import FINISHED_STATUSES as FINISHED

log = logging.getLogger("reasonlab.mirror")

MIRROR_LOCK = 0x524C_4D49  # pg_advisory_lock key of the mirror ("RLMI")
RESULTS_PER_TICK = 200
FILES_PER_TICK = 20
MAX_BACKOFF = 300.0
ARTIFACT_FOLDERS = ("outputs", "model")  # what a succeeded run's MLflow run gets from the store


class Rebuild(Exception):
    """A point at or below a watermark changed: the run's MLflow run must be made again."""


@dataclass
class TickReport:
    runs: int = 0
    points: int = 0
    writes: int = 0  # MLflow calls that wrote something
    failed: int = 0
    rebuilt: int = 0


MLFLOW_RUN_NAME = "mlflow.runName"  # the tag MLflow keeps a run's name in (setting it renames the run)


def mlflow_run_name(run: repo.PendingRun) -> str:
    """The name of a run's MLflow run: the name a member gave the run, else ``run-<id>``."""
    return run.name or f"run-{run.run_id}"


def _ms(t: datetime | None) -> int | None:
    """A time as MLflow stores one: whole milliseconds since the epoch."""
    return None if t is None else int(t.timestamp() * 1000)


def experiment_name(experiment_id: int) -> str:
    return f"reasonlab/experiment-{experiment_id}"


def identity(run: repo.PendingRun, generation: int) -> dict[str, str]:
    """The tags that find a run's MLflow run again: its id, when it was created (another platform, or this
    one's database made again, sharing the MLflow server has runs of the same ids) and the mirror's
    generation (a rebuilt mirror is a new MLflow run)."""
    return {
        "reasonlab.run_id": str(run.run_id),
        "reasonlab.created": run.created_at.isoformat(),
        "reasonlab.mirror": str(generation),
    }


def run_tags(run: repo.PendingRun, generation: int) -> dict[str, str]:
    """The MLflow run's tags: what the workers' mirror set (reasonlab.run_id, experiment_id, attempt, kind,
    worker, param.*) and its identity."""
    tags = {
        **identity(run, generation),
        "reasonlab.experiment_id": str(run.experiment_id),
        "reasonlab.attempt": str(run.attempt),
        "reasonlab.kind": run.kind,
        "reasonlab.worker": run.worker or "",
        **{f"reasonlab.param.{mlflow_key(str(k))}": str(v) for k, v in run.params.items()},
    }
    return {k: v[:5000] for k, v in tags.items()}


def result_path(result_id: int, kind: str, key: str | None) -> str:
    """``results/<kind>-<n>.json`` for the n-th record of its kind (its key ``<kind>:<n>``, as the workers'
    mirror named it), else by the record's id."""
    if key is not None and key.startswith(f"{kind}:") and key[len(kind) + 1 :].isdigit():
        return result_artifact(kind, int(key[len(kind) + 1 :]))
    return f"results/{mlflow_key(f'{kind}-id{result_id}').replace('/', '_')}.json"


class Mirror:
    """The mirror's loop (a thread of the API's leader) and one round of it (``tick``)."""

    def __init__(
        self,
        settings: Settings,
        factory: sessionmaker[Session],
        *,
        target: Target | None = None,
        store: ArtifactStore | None = None,
    ) -> None:
        self.settings = settings
        self.factory = factory
        self._target = target
        self._store = store
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock_conn: Connection | None = None

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = MlflowTarget(
                self.settings.mlflow_tracking_uri, Path(self.settings.artifact_root) / "mlflow"
            )
        return self._target

    @property
    def store(self) -> ArtifactStore:
        if self._store is None:
            self._store = store_for(self.settings.artifact_url)
        return self._store

    # -- one round ----------------------------------------------------------------------------------------

    def tick(self) -> TickReport:
        """Serve up to ``mirror_runs_per_tick`` pending runs, with at most ``mirror_batch`` points in all.
        An MLflow failure backs the run off and ends the round (MLflow is likely down for all of them)."""
        report = TickReport()
        with session_scope(self.factory) as session:
            runs = repo.pending_runs(session, utcnow(), self.settings.mirror_runs_per_tick)
        for run in runs:
            if self._stop.is_set() or report.points >= self.settings.mirror_batch:
                break
            report.runs += 1
            try:
                self._serve(run, report)
            except Exception as exc:
                report.failed += 1
                self._failed(run, exc)
                break
        return report

    def _serve(self, run: repo.PendingRun, report: TickReport) -> None:
        if run.mlflow_run_id is None:
            if not run.started:  # cancelled while queued: it never ran, MLflow never hears of it
                with session_scope(self.factory) as session:
                    repo.clear_pending(session, run.run_id, run.wanted)
                return
            run = self._create(run, run.generation, report)
        elif run.attempt_tagged != run.attempt:
            self._new_attempt(run, report)
            run = replace(run, attempt_tagged=run.attempt)
        if run.name_sent != mlflow_run_name(run):
            run = self._rename(run, report)
        if run.params_due:
            run = self._params(run, report)
        try:
            if run.stale and run.status in FINISHED:
                raise Rebuild
            caught_up = self._metrics(run, report)
        except Rebuild:
            self._rebuild(run, report)
            return
        if run.status in FINISHED and caught_up:
            self._finish(run, report)
        else:
            with session_scope(self.factory) as session:
                repo.update_run(
                    session, run.run_id, serviced_at=utcnow(), failures=0, retry_at=None, error=None
                )

    def _failed(self, run: repo.PendingRun, exc: Exception) -> None:
        failures = run.failures + 1
        delay = min(self.settings.mirror_interval * 2**failures, MAX_BACKOFF)
        error = f"{type(exc).__name__}: {exc}"[:2000]
        (log.warning if failures <= 3 or error != run.error else log.info)(
            "MLflow mirror of run %s failed (%d in a row; next try in %.0f s): %s",
            run.run_id,
            failures,
            delay,
            error,
        )
        try:
            with session_scope(self.factory) as session:
                repo.update_run(
                    session,
                    run.run_id,
                    failures=failures,
                    retry_at=utcnow() + timedelta(seconds=delay),
                    serviced_at=utcnow(),
                    error=error,
                )
        except Exception:
            log.exception("run %s: the mirror's failure not recorded", run.run_id)

    # -- the MLflow run -----------------------------------------------------------------------------------

    def _create(self, run: repo.PendingRun, generation: int, report: TickReport) -> repo.PendingRun:
        """The run's MLflow run (the one a crash left, found by its tags, or a new one) with its params,
        recorded (in the outbox row and ``runs.mlflow_run_id``) only after MLflow made it."""
        name = mlflow_run_name(run)
        mlflow_run_id = self.target.ensure_run(
            experiment_name(run.experiment_id),
            name,
            run_tags(run, generation),
            identity(run, generation),
            _ms(run.started_at),
        )
        self.target.log_params(mlflow_run_id, param_values(run.spec))
        report.writes += 2
        with session_scope(self.factory) as session:
            repo.reset_series(session, run.run_id)
            repo.update_run(
                session,
                run.run_id,
                mlflow_run_id=mlflow_run_id,
                generation=generation,
                attempt=run.attempt,
                done=None,
                finishing=None,
                results_after=0,
                artifacts_after="",
                stale=False,
                params_sent=None,
                name_sent=name,
            )
            repo.record_mlflow_run(session, run.run_id, mlflow_run_id)
        log.info("run %s mirrored to MLflow run %s", run.run_id, mlflow_run_id)
        return replace(
            run,
            mlflow_run_id=mlflow_run_id,
            generation=generation,
            attempt_tagged=run.attempt,
            done=None,
            finishing=None,
            results_after=0,
            artifacts_after="",
            stale=False,
            params_sent=None,
            name_sent=name,
        )

    def _rename(self, run: repo.PendingRun, report: TickReport) -> repo.PendingRun:
        """The run's name (a member renamed it) onto its MLflow run: MLflow's ``mlflow.runName`` tag is
        its run name. Recorded as ``name_sent`` after MLflow has it (a crash in between sends it again)."""
        assert run.mlflow_run_id is not None
        name = mlflow_run_name(run)
        self.target.set_tags(run.mlflow_run_id, {MLFLOW_RUN_NAME: name})
        report.writes += 1
        with session_scope(self.factory) as session:
            repo.update_run(session, run.run_id, name_sent=name)
        log.info("run %s: its MLflow run %s renamed %r", run.run_id, run.mlflow_run_id, name)
        return replace(run, name_sent=name)

    def _params(self, run: repo.PendingRun, report: TickReport) -> repo.PendingRun:
        """The params the run logged (``runs.logged_params``) into its MLflow run, compared with what the
        MLflow run has (so a crash between MLflow's answer and the commit repeats nothing): a key it lacks
        is logged; a key it has with another value (MLflow params are immutable: logged again by the run,
        or the spec's value of that key) keeps its value there, and the platform's goes to the tag
        ``reasonlab.param_conflict.<key>``, kept up to date. Recorded as ``params_sent``."""
        assert run.mlflow_run_id is not None
        with session_scope(self.factory) as session:
            logged, rev = repo.logged_params(session, run.run_id)
        wanted = param_values(logged)
        have, tags = self.target.run_params(run.mlflow_run_id)
        new = {k: v for k, v in wanted.items() if k not in have}
        conflicts: dict[str, str] = {}
        for key, value in wanted.items():
            tag, text = conflict_tag(key), value[:MAX_TAG_VALUE]
            if key in have and (have[key] != value or tag in tags) and tags.get(tag) != text:
                conflicts[tag] = text
        if new:
            self.target.log_params(run.mlflow_run_id, new)
            report.writes += 1
        if conflicts:
            self.target.set_tags(run.mlflow_run_id, conflicts)
            report.writes += 1
            log.info(
                "run %s: %d logged params differ from the values its MLflow run has (tagged %s...)",
                run.run_id,
                len(conflicts),
                next(iter(conflicts)),
            )
        with session_scope(self.factory) as session:
            repo.update_run(session, run.run_id, params_sent=rev)
        return replace(run, params_sent=rev, params_rev=rev)

    def _new_attempt(self, run: repo.PendingRun, report: TickReport) -> None:
        assert run.mlflow_run_id is not None
        self.target.set_tags(
            run.mlflow_run_id, {"reasonlab.attempt": str(run.attempt), "reasonlab.worker": run.worker or ""}
        )
        report.writes += 1
        if run.status not in FINISHED:
            self.target.set_status(run.mlflow_run_id, "RUNNING")
            report.writes += 1
        with session_scope(self.factory) as session:
            repo.update_run(session, run.run_id, attempt=run.attempt)

    def _rebuild(self, run: repo.PendingRun, report: TickReport) -> None:
        """A mirrored point changed: a new MLflow run, filled from the database from the next tick on; the
        old one (and any other of this run) deleted once the new one is recorded."""
        made = self._create(run, run.generation + 1, report)
        report.rebuilt += 1
        log.warning(
            "run %s: a point already in MLflow changed (another value, or a new point below the mirrored "
            "steps): mirror rebuilt as MLflow run %s",
            run.run_id,
            made.mlflow_run_id,
        )
        assert made.mlflow_run_id is not None
        try:
            same_run = identity(run, 0)
            del same_run["reasonlab.mirror"]
            self.target.delete_runs(experiment_name(run.experiment_id), same_run, made.mlflow_run_id)
        except Exception as exc:  # left over in MLflow; the run page links the new one
            log.warning("run %s: the old MLflow run was not deleted: %s", run.run_id, exc)

    # -- metric points --------------------------------------------------------------------------------------

    def _metrics(self, run: repo.PendingRun, report: TickReport) -> bool:
        """Send the run's points after its watermarks, within the tick's budget; True when every series
        is sent up to its horizon (its latest step once the run finished, the one before while active)."""
        assert run.mlflow_run_id is not None
        finished = run.status in FINISHED
        with session_scope(self.factory) as session:
            repo.ensure_series(session, run.run_id)
            states = repo.series_states(session, run.run_id)
        changed = [
            s
            for s in states
            if s.changed_from is not None and s.sent_step is not None and s.changed_from <= s.sent_step
        ]
        if changed and finished:
            raise Rebuild
        if changed:  # the run may change more: one rebuild once it finished
            with session_scope(self.factory) as session:
                repo.mark_stale(session, run.run_id, [s.key for s in changed])
            for s in changed:
                s.changed_from = None
            self._note_stale(run)
        todo = [s for s in states if s.sent_step is None or s.sent_step < self._horizon(s, finished)]
        if not todo:
            return True
        while todo:
            room = self.settings.mirror_batch - report.points
            if room <= 0:
                return False
            batch: list[tuple[str, float, int, int]] = []
            tops: dict[str, tuple[repo.SeriesState, int]] = {}  # key -> (state, last step in the batch)
            with session_scope(self.factory) as session:
                while todo and len(batch) < min(MAX_METRICS_PER_BATCH, room):
                    state = todo[0]
                    after = tops[state.key][1] if state.key in tops else state.sent_step
                    want = min(MAX_METRICS_PER_BATCH, room) - len(batch)
                    page = repo.points(
                        session, run.run_id, state.key, after, self._horizon(state, finished), want
                    )
                    name = mlflow_key(state.key)
                    batch.extend(
                        (name, mlflow_value(v), int(t.timestamp() * 1000), step) for step, v, t in page
                    )
                    if page:
                        tops[state.key] = (state, page[-1][0])
                    if len(page) < want:
                        todo.pop(0)  # this series is sent up to its horizon (once the batch is)
            if not batch:
                break
            self.target.log_metrics(run.mlflow_run_id, batch)
            report.points += len(batch)
            report.writes += 1
            self._advance(run, tops, finished)
        return not todo

    def _note_stale(self, run: repo.PendingRun) -> None:
        if not run.stale:
            log.info(
                "run %s: a point already in MLflow changed; its MLflow run is rebuilt once the run finished",
                run.run_id,
            )

    @staticmethod
    def _horizon(state: repo.SeriesState, finished: bool) -> int:
        """The largest step of a series to send now: its latest once the run finished, else the one
        before (a running run may log its latest step again)."""
        return state.latest if finished else state.latest - 1

    def _advance(
        self, run: repo.PendingRun, tops: dict[str, tuple[repo.SeriesState, int]], finished: bool
    ) -> None:
        """Commit the watermarks of the points MLflow acknowledged; a series that changed meanwhile at or
        below them means a rebuild (once the run finished)."""
        run_id = run.run_id
        with session_scope(self.factory) as session:
            for key, (state, step) in tops.items():
                seq = state.seq
                while not repo.advance(session, run_id, key, step, seq):
                    _, seq, changed_from = repo.series_state(session, run_id, key)
                    if changed_from is not None and changed_from <= step:
                        if finished:
                            session.commit()  # the other series' watermarks hold
                            raise Rebuild
                        repo.mark_stale(session, run_id, [key])
                        self._note_stale(run)
                state.sent_step, state.seq, state.changed_from = step, seq, None

    # -- the finish -----------------------------------------------------------------------------------------

    def _finish(self, run: repo.PendingRun, report: TickReport) -> None:
        """A finished run whose points are all in MLflow: results, a succeeded run's outputs and final
        model, then the status; a page at a time, each step's cursor committed after MLflow has it."""
        assert run.mlflow_run_id is not None
        finish = f"{run.attempt}:{run.status}"
        results_after, artifacts_after = run.results_after, run.artifacts_after
        if run.finishing != finish:
            results_after, artifacts_after = 0, ""
            with session_scope(self.factory) as session:
                repo.update_run(session, run.run_id, finishing=finish, results_after=0, artifacts_after="")
        if run.done != finish:
            with session_scope(self.factory) as session:
                results = repo.results_after(session, run.run_id, results_after, RESULTS_PER_TICK)
            for result_id, kind, key, payload in results:
                self.target.log_dict(run.mlflow_run_id, payload, result_path(result_id, kind, key))
                report.writes += 1
                with session_scope(self.factory) as session:
                    repo.update_run(session, run.run_id, results_after=result_id)
            if len(results) == RESULTS_PER_TICK:
                return  # more next tick
            if run.status == "succeeded" and not self._copy_artifacts(run, artifacts_after, report):
                return
            with session_scope(self.factory) as session:
                seconds = repo.run_seconds(session, run.run_id)
            duration_ms = None if seconds is None else round(seconds * 1000)
            self.target.set_status(run.mlflow_run_id, MLFLOW_STATUS[run.status], duration_ms)
            report.writes += 1
        with session_scope(self.factory) as session:
            repo.update_run(
                session,
                run.run_id,
                done=finish,
                serviced_at=utcnow(),
                failures=0,
                retry_at=None,
                error=None,
            )
            repo.clear_pending(session, run.run_id, run.wanted)

    def _copy_artifacts(self, run: repo.PendingRun, after: str, report: TickReport) -> bool:
        """A succeeded run's outputs and final model, from the artifact store into MLflow, in path order
        after ``after``; True once all are copied."""
        assert run.mlflow_run_id is not None
        files = [
            f
            for f in self.store.files(run.run_id)
            if f.path.split("/", 1)[0] in ARTIFACT_FOLDERS and "/" in f.path and f.path > after
        ]
        for stored in files[:FILES_PER_TICK]:
            folder, name = stored.path.rsplit("/", 1)
            with tempfile.TemporaryDirectory(prefix="reasonlab-mirror-") as tmp:
                local = Path(tmp) / name
                with open(local, "wb") as fh:
                    for chunk in self.store.chunks(run.run_id, stored.path):
                        fh.write(chunk)
                self.target.log_file(run.mlflow_run_id, local, folder)
            report.writes += 1
            with session_scope(self.factory) as session:
                repo.update_run(session, run.run_id, artifacts_after=stored.path)
        return len(files) <= FILES_PER_TICK

    # -- the loop -------------------------------------------------------------------------------------------

    def _leader(self) -> bool:
        """Whether this process mirrors: on Postgres, the one holding the mirror's advisory lock (on a
        connection of its own, released when the process dies); embedded (SQLite), the only API process."""
        engine = self.factory.kw["bind"]
        if engine.dialect.name != "postgresql":
            return True
        if self._lock_conn is not None:
            try:
                self._lock_conn.execute(text("SELECT 1"))
                self._lock_conn.commit()
                return True
            except Exception:
                log.warning("the mirror's lock connection broke; taking the lock again")
                self._release_lock()
        conn = engine.connect()
        try:
            got = bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": MIRROR_LOCK}).scalar())
            conn.commit()
        except Exception:
            conn.invalidate()
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._lock_conn = conn
        log.info("this API process mirrors runs to MLflow (%s)", self.settings.mlflow_tracking_uri)
        return True

    def _release_lock(self) -> None:
        conn, self._lock_conn = self._lock_conn, None
        if conn is None:
            return
        try:
            # unlocked before the connection goes: the lock is free when this returns. Closing alone frees
            # it only once the server's backend has seen the socket close, a moment later (another API
            # process asking at once was refused: test_one_mirror_among_api_processes at load 8)
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIRROR_LOCK})
            conn.commit()
        except Exception:  # a broken connection: the session and its lock end with it
            pass
        try:
            conn.invalidate()  # never back to the pool: the session (and any lock left) ends with it
            conn.close()
        except Exception:
            pass

    def _loop(self) -> None:
        delay = self.settings.mirror_interval
        while not self._stop.is_set():
            try:
                if self._leader():
                    report = self.tick()
                    busy = report.points >= self.settings.mirror_batch and not report.failed
                    delay = 0.01 if busy else self.settings.mirror_interval
                else:
                    delay = self.settings.mirror_interval * 5
            except Exception:
                log.exception("mirror tick failed")
                delay = min(max(delay, self.settings.mirror_interval) * 2, 60.0)
            self._wake.wait(delay)
            self._wake.clear()
        self._release_lock()

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="reasonlab-mirror", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def __enter__(self) -> Mirror:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
