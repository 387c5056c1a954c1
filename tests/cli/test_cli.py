"""The `reasonlab` command as a user runs it: `up` serves the API and stops cleanly; errors are messages."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from cli.main import main
from tests.integration.platform import free_port, up_env


@pytest.mark.slow  # a real `reasonlab up` each: spread over the xdist processes (tests/conftest.py)
def test_up_serves_health_writes_the_token_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    """... with two workers (`make up WORKERS=2`): both start and are ready, and both stop."""
    home, port = tmp_path / "home", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLAB_")}
    argv = ["up", "--home", str(home), "--port", str(port), "--no-mlflow-ui", "--workers", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # a wait on a condition, ended by it: generous, `make test` runs four pytest processes beside `up`
        deadline = time.monotonic() + 180
        healthy = False
        while time.monotonic() < deadline and not healthy:
            try:
                healthy = httpx.get(f"http://127.0.0.1:{port}/api/v1/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                time.sleep(0.3)
        assert healthy, "reasonlab up did not serve /api/v1/health"
        # `up` starts its worker once it has seen the API answer too, then prints its banner: a Ctrl-C
        # before that would stop it before the banner
        while time.monotonic() < deadline and not (home / "logs" / "worker-0.log").exists():
            time.sleep(0.1)
        # the home tells the CLI where its server is: no --api-url needed on a port other than 8000
        assert (home / "api.url").read_text().strip() == f"http://127.0.0.1:{port}"
        listed = CliRunner().invoke(main, ["runs", "list"], env={"REASONLAB_HOME": str(home)})
        assert listed.exit_code == 0, listed.output
        token_file = home / "admin.token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        token = token_file.read_text().strip()
        me = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"}
        )
        assert me.json()["username"] == "admin" and me.json()["is_admin"]
        logs = [home / "logs" / f"worker-{i}.log" for i in (0, 1)]
        while time.monotonic() < deadline and not all(
            f.exists() and f"embedded{i}@" in f.read_text() and " ready." in f.read_text()
            for i, f in enumerate(logs)
        ):
            time.sleep(0.3)
        assert all(" ready." in f.read_text() for f in logs), [f.read_text()[-2000:] for f in logs]
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert f"API token: {home / 'admin.token'}" in out and "stopped." in out
    assert "  workers:   2 (starting: a line below says when each is ready)" in out
    # the banner is followed by each worker's readiness, so a first run's wait is explained
    assert {line.split(" is ready")[0] for line in out.splitlines() if " is ready (" in line} == {
        "worker-0",
        "worker-1",
    }
    assert (home / "reasonlab.db").is_file() and (home / "broker").is_dir()


def test_submit_reports_a_missing_file_without_a_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["submit", str(tmp_path / "nope.yaml"), "--token", "x"])
    assert result.exit_code == 1 and "does not exist" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    result = CliRunner().invoke(main, ["submit", str(bad), "--token", "x"])
    assert result.exit_code == 1 and "not valid YAML" in result.output


def test_local_run_reports_an_invalid_spec_by_field(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("kind: diagnostic\ntrain: {steps: 0}\n")
    result = CliRunner().invoke(main, ["run", str(spec), "--out", str(tmp_path / "out"), "--no-mlflow"])
    assert result.exit_code == 1 and "train.steps" in result.output and "Traceback" not in result.output


def test_local_run_trains_and_writes_metrics(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("kind: diagnostic\ntrain: {steps: 12}\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(spec), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "succeeded" in result.output
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len([ln for ln in lines if '"loss"' in ln]) == 12
    assert (out / "mlflow.db").is_file()


def test_local_run_into_an_earlier_runs_folder_says_it_resumes_and_fresh_starts_over(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("kind: diagnostic\ntrain: {steps: 12}\n")
    out = tmp_path / "out"
    (out / "notes.txt").parent.mkdir()
    (out / "notes.txt").write_text("mine")  # a file of the user's in the folder: --fresh keeps it
    runner = CliRunner()
    first = runner.invoke(main, ["run", str(spec), "--out", str(out), "--no-mlflow"])
    assert first.exit_code == 0 and "earlier run" not in first.output, first.output
    again = runner.invoke(main, ["run", str(spec), "--out", str(out), "--no-mlflow"])
    assert again.exit_code == 0, again.output
    said = re.search(
        r"holds an earlier run of this spec \(succeeded\): resuming it from (.*?), its files", again.output
    )
    assert said is not None, again.output
    assert said.group(1).startswith("its checkpoint at step ") or said.group(1).startswith("the start")
    assert "reasonlab run --fresh" in again.output
    fresh = runner.invoke(main, ["run", str(spec), "--out", str(out), "--no-mlflow", "--fresh"])
    assert fresh.exit_code == 0 and "earlier run" not in fresh.output, fresh.output
    assert f"removed {out / 'status.json'}" in fresh.output
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len([ln for ln in lines if '"loss"' in ln]) == 12  # one run's points, not the earlier runs' too
    assert (out / "notes.txt").read_text() == "mine"


def test_local_run_writes_where_the_quickstart_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every output path section 4 of the quickstart names (`<name>` read as the spec's name) is there
    after `reasonlab run` without --out, from a folder with no REASONLAB_HOME: the docs said `runs/<name>/`
    while the outputs went to `.reasonlab/runs/<name>/`."""
    quickstart = (Path(__file__).parents[2] / "docs" / "quickstart.md").read_text()
    section = quickstart.split("## 4. Run a spec without a server", 1)[1].split("\n## ", 1)[0]
    paths = {
        p.replace("<name>", "diagnostic")
        for p in re.findall(r"(?:sqlite:///)?([\w.<>$/-]*runs/[^`\s]+)", section)
    }
    paths = {p.replace("$REASONLAB_HOME", ".reasonlab") for p in paths}
    assert {".reasonlab/runs/diagnostic/", ".reasonlab/runs/diagnostic/mlflow.db"} <= paths, paths
    monkeypatch.delenv("REASONLAB_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text("name: diagnostic\nkind: diagnostic\nspec: {train: {steps: 4}}\n")
    result = CliRunner().invoke(main, ["run", "spec.yaml"])
    assert result.exit_code == 0, result.output
    for path in sorted(paths):
        assert (tmp_path / path).exists(), (
            f"the quickstart names {path}; `reasonlab run` wrote {result.output}"
        )
    assert (tmp_path / ".reasonlab/runs/diagnostic/metrics.jsonl").is_file()


def _follow_events(url: str, auth: dict[str, str]) -> None:
    """Read a run's server-sent events until the server ends the stream (or goes away)."""
    with contextlib.suppress(httpx.HTTPError), httpx.stream("GET", url, headers=auth, timeout=None) as r:
        for _ in r.iter_bytes():
            pass


@pytest.mark.slow  # a real `reasonlab up` each: spread over the xdist processes (tests/conftest.py)
def test_ctrl_c_of_up_gives_a_running_run_back_before_the_api_stops(tmp_path: Path) -> None:
    """Ctrl-C in the terminal (SIGINT to the foreground process group) with a run in progress: the worker
    stops first, its job checkpoints and releases the run through the still-running API, then the API
    stops. The run is queued again as its next attempt, with one more allowed (no attempt used up)."""
    import sqlite3

    home, port = tmp_path / "home", free_port()
    env = up_env()
    api_url = f"http://127.0.0.1:{port}/api/v1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "up", "--home", str(home), "--port", str(port), "--no-mlflow-ui"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # a terminal of its own: its foreground process group is `up`'s
    )
    try:
        deadline = time.monotonic() + 120
        run_id, steps = None, 0
        while time.monotonic() < deadline and steps < 5:
            time.sleep(0.5)
            try:
                if run_id is None:
                    if httpx.get(f"{api_url}/health", timeout=1).status_code != 200:
                        continue
                    auth = {"Authorization": f"Bearer {(home / 'admin.token').read_text().strip()}"}
                    spec = {"train": {"steps": 2000, "checkpoint_every": 100_000, "step_delay": 0.05}}
                    body = {"name": "ctrl-c", "kind": "diagnostic", "spec": spec}
                    created = httpx.post(f"{api_url}/experiments", json=body, headers=auth, timeout=30)
                    run_id = created.json()["runs"][0]["id"]
                got = httpx.get(f"{api_url}/runs/{run_id}/metrics?keys=loss", headers=auth, timeout=5).json()
                steps = got["series"]["loss"]["total_points"]
            except httpx.HTTPError:
                continue
        assert run_id is not None and steps >= 5, "the run did not start"
        # a dashboard open on the run: its event stream never ends by itself, and must not hold the API up
        threading.Thread(
            target=_follow_events, args=(f"{api_url}/runs/{run_id}/events", auth), daemon=True
        ).start()
        time.sleep(1.0)
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert "stopped." in out and "did not stop in time" not in out, out[-3000:]
    # each service's stop is said as it happens, the worker's before the API's
    said = [line.split(" stopped (")[0].strip() for line in out.splitlines() if " stopped (" in line]
    assert said == ["worker-0", "api"], out[-3000:]
    with sqlite3.connect(home / "reasonlab.db") as db:
        status, attempt, released, max_attempts = db.execute(
            "SELECT status, attempt, released, max_attempts FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
    assert (status, attempt, released, max_attempts) == ("queued", 2, 1, 3), out[-3000:]
    worker_log = (home / "logs" / "worker-0.log").read_text()
    assert f"run {run_id} attempt 1 released at worker shutdown" in worker_log, worker_log[-3000:]
    # the API outlived the worker: no storm of connection errors from a worker whose API went away; and
    # the worker started once the API answered, so its start-up token check reached it (no warning)
    storm = [ln for ln in worker_log.splitlines() if "API unavailable" in ln or "onnection refused" in ln]
    assert not storm, "\n".join(storm[:20])
    assert "is not reachable yet" not in worker_log, worker_log[:3000]


# what the services print, which belongs in their logs and not in the terminal
CHATTER = (
    "celery@",  # Celery's banner: "-------------- embedded0@host v5.x"
    "[tasks]",
    "superuser privileges",  # Celery's root warning
    "No hostname was supplied",  # kombu
    "WARNING",  # MLflow's notices, Celery's warnings
    "GET /api/v1/health",  # uvicorn's access log
    "Uvicorn running",
    "alembic",
)


def _wait_for(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


@pytest.mark.slow  # a real `reasonlab up` each: spread over the xdist processes (tests/conftest.py)
def test_up_prints_a_short_banner_serves_mlflow_ui_and_logs_the_chatter(tmp_path: Path) -> None:
    """`reasonlab up` as a new user meets it: the terminal shows the URL, the login, the token file, the
    MLflow UI and where the logs are, and none of the services' chatter, which is in HOME/logs/. The
    API tells the dashboard where MLflow's UI is, and the link of a run ("Open in MLflow") answers."""
    home, port, mlflow_port = tmp_path / "home", free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("REASONLAB_")}
    argv = ["up", "--home", str(home), "--port", str(port), "--mlflow-port", str(mlflow_port)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    api, ui = f"http://127.0.0.1:{port}/api/v1", f"http://127.0.0.1:{mlflow_port}"
    try:
        assert _wait_for(f"{api}/health", 180), "reasonlab up did not serve /api/v1/health"
        auth = {"Authorization": f"Bearer {(home / 'admin.token').read_text().strip()}"}
        server = httpx.get(f"{api}/server", headers=auth).json()
        assert server["mlflow_ui_url"] == ui
        assert _wait_for(f"{ui}/health", 180), "MLflow's UI did not start"
        assert "<html" in httpx.get(f"{ui}/").text.lower()  # the page the link opens
        spec = {"train": {"steps": 20}}
        body = {"name": "mlflow-link", "kind": "diagnostic", "spec": spec}
        run_id = httpx.post(f"{api}/experiments", json=body, headers=auth, timeout=30).json()["runs"][0]["id"]
        deadline, run = time.monotonic() + 120, {}
        while time.monotonic() < deadline and run.get("status") != "succeeded":
            time.sleep(0.5)
            run = httpx.get(f"{api}/runs/{run_id}", headers=auth).json()
        assert run["status"] == "succeeded", run
        # the dashboard links to {mlflow_ui_url}/#/runs/{mlflow_run_id}: that server knows the run, which
        # the API's mirror (backend/mirror/) records and finishes there a moment after the run
        status, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline and status != "FINISHED":
            time.sleep(0.5)
            run = httpx.get(f"{api}/runs/{run_id}", headers=auth).json()
            if not run["mlflow_run_id"]:
                continue
            got = httpx.get(
                f"{ui}/api/2.0/mlflow/runs/get", params={"run_id": run["mlflow_run_id"]}, timeout=10
            )
            assert got.status_code == 200, got.text
            status = got.json()["run"]["info"]["status"]
        assert status == "FINISHED", run
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    lines = out.splitlines()
    banner = lines[: lines.index("Ctrl-C stops ReasonLab.") + 1]
    assert banner[0] == f"ReasonLab is up: http://127.0.0.1:{port}"
    assert "  login:     admin" in banner and any(ln.startswith("  password:  ") for ln in banner)
    assert f"  API token: {home / 'admin.token'} (mode 600)" in banner
    assert f"  MLflow UI: {ui}" in banner
    assert f"  logs:      {home / 'logs'}/ (api.log, worker-N.log, mlflow.log)" in banner
    assert len(banner) <= 12, banner
    for noise in CHATTER:
        assert noise not in out, f"{noise!r} reached the terminal:\n{out}"
    logs = {p.name: p.read_text() for p in (home / "logs").iterdir()}
    # (kombu's "No hostname was supplied" is gone with our filesystem transport, common/broker.py)
    assert "[tasks]" in logs["worker-0.log"] and "embedded0@" in logs["worker-0.log"]
    assert "GET /api/v1/health" in logs["api.log"]  # uvicorn's access log
    assert "Uvicorn running" in logs["mlflow.log"] or "Listening" in logs["mlflow.log"]
    assert "alembic" in logs["up.log"]


@contextlib.contextmanager
def _listening(port: int) -> Iterator[socket.socket]:
    """Another program's server on ``port`` (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        yield s


def _up(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["up", "--home", str(tmp_path / "home"), "--workers", "0", *args]
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *argv],
        env=up_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )


def test_up_refuses_a_taken_api_port_before_any_banner(tmp_path: Path) -> None:
    port = free_port()
    with _listening(port):
        done = _up(tmp_path, "--port", str(port), "--no-mlflow-ui")
    assert done.returncode == 1, done.stdout
    assert f"port {port} is in use (for the API): make up PORT=" in done.stdout
    suggested = int(re.search(r"make up PORT=(\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert suggested != port
    assert "ReasonLab is up" not in done.stdout and "Traceback" not in done.stdout
    assert not (tmp_path / "home").exists()  # nothing was started, nothing was written


def test_up_refuses_a_taken_mlflow_port_that_was_asked_for(tmp_path: Path) -> None:
    api_port, ui_port = free_port(), free_port()
    with _listening(ui_port):
        done = _up(tmp_path, "--port", str(api_port), "--mlflow-port", str(ui_port))
    assert done.returncode == 1, done.stdout
    assert f"port {ui_port} is in use (for MLflow's UI): make up MLFLOW_PORT=" in done.stdout
    assert "ReasonLab is up" not in done.stdout


class _OtherHealth(http.server.BaseHTTPRequestHandler):
    """Another server that answers /api/v1/health with 200, as another ReasonLab would."""

    nonce = ""

    def do_GET(self) -> None:
        self.send_response(200)
        if self.nonce:
            self.send_header("X-ReasonLab-Start", self.nonce)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: object) -> None:
        pass


@pytest.mark.parametrize(("answered", "ours"), [("", False), ("someone-else", False), ("n0nce", True)])
def test_the_health_check_of_up_knows_its_own_api(answered: str, ours: bool) -> None:
    """A 200 from another server on the port is not the API `up` started: only its nonce is."""
    from cli.server import _wait_healthy

    handler = type("Handler", (_OtherHealth,), {"nonce": answered})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert _wait_healthy(url, alive, timeout=1.5, nonce="n0nce") is ours
    finally:
        alive.kill()
        alive.wait()
        server.shutdown()
        server.server_close()


def test_an_api_that_lost_its_port_is_said_so(tmp_path: Path) -> None:
    from cli.server import _why_api_did_not_start

    log = tmp_path / "api.log"
    log.write_text("ERROR:    [Errno 98] error while attempting to bind on address: address already in use\n")
    gone = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    gone.wait()
    said = _why_api_did_not_start(gone, log, "127.0.0.1", 8000)
    assert said.startswith("port 8000 is in use by another server: make up PORT=")
    log.write_text("ImportError: something else\n")
    assert _why_api_did_not_start(gone, log, "127.0.0.1", 8000) == f"the API did not start; see {log}"
