"""`reasonlab claims create/list/show/lock/edit/delete` against the real API app (SQLite): a claim file
stated from the shell, its card as runs end, the lock's pre-registration, an edit's new version, and the
API's 422 printed with the field's path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from cli.main import main
from tests.cli.conftest import InProcessApi

NAME = "lr 0.2 beats lr 0.1"
CLAIM: dict[str, Any] = {
    "name": NAME,
    "definition": {
        "section": "4.2",
        "arms": [
            {"name": "slow", "query": "params.train.lr = 0.1"},
            {"name": "fast", "query": "params.train.lr = 0.2"},
        ],
        "metric": "acc",
        "direction": "greater",
        "min_effect": 0.01,
    },
}
ACC = {0.1: [0.60, 0.62, 0.61, 0.63], 0.2: [0.70, 0.71, 0.72, 0.74]}


def _run_all(cli_api: InProcessApi) -> None:
    body = {
        "name": "sweep",
        "kind": "diagnostic",
        "spec": {},
        "sweep": {"grid": {"train.lr": [0.1, 0.2]}, "seeds": [0, 1, 2, 3]},
    }
    runs = cli_api.http.post("/api/v1/experiments", json=body, headers=cli_api.auth).json()["runs"]
    worker = {"Authorization": "Bearer wk_test_worker_token_0123456789"}
    for run in runs:
        url = f"/api/v1/runs/{run['id']}"
        claimed = cli_api.http.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=worker)
        assert claimed.status_code == 200, claimed.text
        token = {"Authorization": f"Bearer {claimed.json()['run_token']}"}
        value = ACC[run["params"]["train.lr"]][run["params"]["seed"]]
        points = {"points": [{"key": "acc", "step": 1, "value": value}]}
        assert cli_api.http.post(f"{url}/metrics", json=points, headers=token).status_code == 200
        fin = {"attempt": 1, "status": "succeeded"}
        assert cli_api.http.post(f"{url}/finish", json=fin, headers=token).status_code == 200


def test_claims_from_the_shell(cli_api: InProcessApi, tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(CLAIM))
    out = runner.invoke(main, ["claims", "create", str(path)])
    assert out.exit_code == 0, out.output
    assert "verdict: inconclusive" in out.output and "pre-registration: not locked" in out.output
    out = runner.invoke(main, ["claims", "lock", NAME])
    assert out.exit_code == 0, out.output
    assert out.output.rstrip().endswith("pre-registered")
    _run_all(cli_api)
    out = runner.invoke(main, ["claims", "show", NAME])
    assert out.exit_code == 0, out.output
    assert "verdict: supported" in out.output and "pre-registration: pre-registered" in out.output
    assert "fast vs slow: supported" in out.output and "paired n=4" in out.output
    listed = runner.invoke(main, ["claims", "list"])
    assert listed.exit_code == 0 and "supported" in listed.output and "pre-registered" in listed.output
    # an edit after the runs started: version 2 decides and is not the locked one
    edited = dict(CLAIM, definition={**CLAIM["definition"], "alpha": 0.01})
    path.write_text(yaml.safe_dump(edited))
    out = runner.invoke(main, ["claims", "edit", NAME, str(path)])
    assert out.exit_code == 0, out.output
    assert "version 2 decided" in out.output and "pre-registration: edited after lock" in out.output
    # a bad query: the API's 422 with the field's path
    bad = dict(
        CLAIM,
        name="bad",
        definition={
            **CLAIM["definition"],
            "arms": [{"name": "a", "query": "colour = 1"}, {"name": "b", "query": "id > 0"}],
        },
    )
    path.write_text(yaml.safe_dump(bad))
    out = runner.invoke(main, ["claims", "create", str(path)])
    assert out.exit_code == 1 and "body.definition.arms.0.query" in out.output
    out = runner.invoke(main, ["claims", "show", "nope"])
    assert out.exit_code == 1 and "lr 0.2 beats lr 0.1" in out.output
    out = runner.invoke(main, ["claims", "delete", NAME])
    assert out.exit_code == 0 and "deleted" in out.output


def _findings_file(path: Path, alpha: float = 0.05) -> None:
    """A findings experiment: the sweep and its claims in one file, the arms naming the experiment."""
    claim = {
        "name": NAME,
        "definition": {
            **CLAIM["definition"],
            "alpha": alpha,
            "arms": [
                {"name": "slow", "query": 'experiment = "findings" and params.train.lr = 0.1'},
                {"name": "fast", "query": 'experiment = "findings" and params.train.lr = 0.2'},
            ],
        },
    }
    path.write_text(
        yaml.safe_dump(
            {
                "name": "findings",
                "kind": "diagnostic",
                "spec": {},
                "sweep": {"grid": {"train.lr": [0.1, 0.2]}, "seeds": [0, 1, 2, 3]},
                "claims": [claim],
            }
        )
    )


def test_submit_states_and_locks_the_files_claims_before_its_runs(
    cli_api: InProcessApi, tmp_path: Path
) -> None:
    runner = CliRunner()
    path = tmp_path / "findings.yaml"
    _findings_file(path)
    out = runner.invoke(main, ["submit", str(path)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("claim ") and "created, locked (sha256 " in lines[0], out.output
    assert lines[0].endswith("; pre-registered") and lines[1].startswith("experiment ")
    claims = cli_api.http.get("/api/v1/projects/1/claims", headers=cli_api.auth).json()["items"]
    assert [c["name"] for c in claims] == [NAME]
    # the runs end: the claim, locked before they started, decides pre-registered
    experiments = cli_api.http.get("/api/v1/experiments", headers=cli_api.auth).json()["items"]
    runs = cli_api.http.get(f"/api/v1/experiments/{experiments[0]['id']}", headers=cli_api.auth).json()[
        "runs"
    ]
    worker = {"Authorization": "Bearer wk_test_worker_token_0123456789"}
    for run in runs:
        url = f"/api/v1/runs/{run['id']}"
        claimed = cli_api.http.post(f"{url}/claim", json={"attempt": 1, "worker": "w"}, headers=worker)
        token = {"Authorization": f"Bearer {claimed.json()['run_token']}"}
        value = ACC[run["params"]["train.lr"]][run["params"]["seed"]]
        cli_api.http.post(
            f"{url}/metrics", json={"points": [{"key": "acc", "step": 1, "value": value}]}, headers=token
        )
        assert (
            cli_api.http.post(
                f"{url}/finish", json={"attempt": 1, "status": "succeeded"}, headers=token
            ).status_code
            == 200
        )
    shown = runner.invoke(main, ["claims", "show", NAME])
    assert "verdict: supported" in shown.output and "pre-registration: pre-registered" in shown.output
    # submitted again unchanged: the claim is reused and stays locked; its runs had started, nothing relocks
    out = runner.invoke(main, ["submit", str(path)])
    assert out.exit_code == 0 and "unchanged; pre-registered" in out.output, out.output
    # edited in the file after its runs started: a new version, locked late
    _findings_file(path, alpha=0.01)
    out = runner.invoke(main, ["submit", str(path)])
    assert out.exit_code == 0 and "edited (version 2), locked" in out.output and "locked late" in out.output


def test_submit_refuses_bad_claims_before_creating_the_experiment(
    cli_api: InProcessApi, tmp_path: Path
) -> None:
    runner = CliRunner()
    path = tmp_path / "findings.yaml"
    _findings_file(path)
    doc = yaml.safe_load(path.read_text())
    doc["claims"][0]["definition"]["arms"][1]["query"] = "colour = 1"
    path.write_text(yaml.safe_dump(doc))
    out = runner.invoke(main, ["submit", str(path)])
    assert (
        out.exit_code == 1 and "body.definition.arms.1.query" in out.output and "Traceback" not in out.output
    )
    assert "no experiment was created" in out.output
    assert cli_api.http.get("/api/v1/experiments", headers=cli_api.auth).json()["items"] == []
    for broken, said in [
        ({"claims": {"a": 1}}, "claims: a list"),
        ({"claims": [{"name": "x"}]}, "claims[0]: a mapping with a name and a definition"),
        ({"claims": [{"name": "x", "definition": {}, "colour": 1}]}, "unknown field(s) colour"),
        ({"claims": [doc["claims"][0], doc["claims"][0]]}, "stated twice"),
    ]:
        path.write_text(yaml.safe_dump({**doc, **broken}))
        out = runner.invoke(main, ["submit", str(path)])
        assert out.exit_code == 1 and said in out.output, out.output
    path.write_text(yaml.safe_dump(doc))
    out = runner.invoke(main, ["submit", str(path), "--name", "other"])
    assert out.exit_code == 1 and "not with --name" in out.output
