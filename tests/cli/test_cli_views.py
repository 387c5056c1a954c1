"""`reasonlab views list/show/delete` and `reasonlab runs list --view NAME_OR_ID` against the real API app
(sqlite): a saved view's query, sort and grouping applied from the shell, options given there overriding
the view's, the API's role rule on delete, and errors as messages that name what exists."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner

import cli.client as cli_client
from backend.auth import service as auth_service
from backend.db import get_engine, session_factory, session_scope
from backend.projects import service as projects
from cli.main import main
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import USER_PASSWORD
from tests.cli.conftest import InProcessApi

ACC = {0.1: [0.71, 0.74, 0.69], 0.01: [0.52, 0.58, 0.55]}  # each seed's last acc, per train.lr


def _member(tmp_path: Path, username: str) -> str:
    """A member of the default project in the cli_api fixture's database (tmp_path/db.sqlite); its token."""
    factory = session_factory(get_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))
    with session_scope(factory) as session:
        user = projects.create_member(session, username, USER_PASSWORD, project="default", role="member")
        _, token = auth_service.create_token(session, user, "test")
    return token


def _as(cli_api: InProcessApi, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's commands from now on send ``token`` instead of the admin's."""

    def forward(request: httpx.Request) -> httpx.Response:
        answer = cli_api.http.request(
            request.method, request.url.raw_path.decode(), content=request.content, headers=request.headers
        )
        headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-encoding"}
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)

    transport = httpx.MockTransport(forward)
    monkeypatch.setattr(
        cli_client, "_client", lambda *_: ReasonLabClient("http://testserver", token, transport=transport)
    )


def _seed(cli_api: InProcessApi) -> dict[float, list[int]]:
    """train.lr 0.1 / 0.01 x seeds 0-2, each run's acc rising to its value in ACC; another experiment's
    run at lr 0.5 without metrics."""
    body = {
        "name": "lr sweep",
        "kind": "diagnostic",
        "spec": {},
        "sweep": {"grid": {"train.lr": [0.1, 0.01]}, "seeds": [0, 1, 2]},
    }
    exp = cli_api.http.post("/api/v1/experiments", json=body, headers=cli_api.auth).json()
    by_lr: dict[float, list[int]] = {0.1: [], 0.01: []}
    for run in sorted(exp["runs"], key=lambda r: r["params"]["seed"]):
        by_lr[run["params"]["train.lr"]].append(run["id"])
    for lr, ids in by_lr.items():
        for rid, acc in zip(ids, ACC[lr], strict=True):
            points = [{"key": "acc", "step": 1, "value": acc - 0.2}, {"key": "acc", "step": 2, "value": acc}]
            res = cli_api.http.post(
                f"/api/v1/runs/{rid}/metrics", json={"points": points}, headers=cli_api.auth
            )
            assert res.status_code == 200, res.text
    lone = {"name": "lone", "kind": "diagnostic", "spec": {"train": {"lr": 0.5}}}
    assert cli_api.http.post("/api/v1/experiments", json=lone, headers=cli_api.auth).status_code == 201
    return by_lr


def _view(
    cli_api: InProcessApi, name: str, state: dict[str, Any], page: str = "runs", token: str = ""
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else cli_api.auth
    pid = next(
        p["id"]
        for p in cli_api.http.get("/api/v1/projects", headers=headers).json()
        if p["name"] == "default"
    )
    res = cli_api.http.post(
        f"/api/v1/projects/{pid}/views", json={"name": name, "page": page, "state": state}, headers=headers
    )
    assert res.status_code == 201, res.text
    return res.json()


GROUPED = {
    "query": "params.train.lr < 0.2",
    "columns": [{"field": "name"}, {"field": "metrics.acc", "aggregate": "max"}],
    "group_by": ["params.train.lr"],
    "sort": {"field": "metrics.acc", "order": "desc", "aggregate": "max"},
}
BY_ACC = {
    "query": "params.train.lr < 0.2",
    "sort": {"field": "metrics.acc", "order": "asc", "aggregate": "min"},
}


def _ids(output: str) -> list[int]:
    return [int(line.split()[0]) for line in output.splitlines()[1:] if line.split()]


def _groups(output: str) -> list[tuple[str, int, str]]:
    """(group, n, first metric cell) per row of a groups table."""
    rows = []
    for line in output.splitlines()[1:]:
        m = re.fullmatch(r"(\S.*?) {2,}(\d+) {2}(.*)", line)
        assert m, line
        rows.append((m[1], int(m[2]), m[3].strip()))
    return rows


def test_runs_list_view_applies_the_views_query_grouping_and_sort(cli_api: InProcessApi) -> None:
    by_lr = _seed(cli_api)
    grouped = _view(cli_api, "lr seeds", GROUPED)
    _view(cli_api, "by acc", BY_ACC)
    runner = CliRunner()

    out = runner.invoke(main, ["runs", "list", "--view", "lr seeds"])
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].split() == ["group", "n", "max(metrics.acc)"]
    mean_a, mean_b = statistics.mean(ACC[0.1]), statistics.mean(ACC[0.01])
    rows = _groups(out.output)
    # the view's sort: the groups by their mean of max(acc), the higher first; the lone lr 0.5 run is out
    assert [(g, n) for g, n, _ in rows] == [("params.train.lr=0.1", 3), ("params.train.lr=0.01", 3)]
    assert rows[0][2].startswith(f"{mean_a:.4g} ± ") and rows[1][2].startswith(f"{mean_b:.4g} ± ")
    # by id, the same
    assert runner.invoke(main, ["runs", "list", "--view", str(grouped["id"])]).output == out.output

    # an explicit --where replaces the view's query; --sort and --asc its sort; the grouping stays
    narrowed = runner.invoke(
        main, ["runs", "list", "--view", "lr seeds", "--where", "params.train.lr < 0.05"]
    )
    assert narrowed.exit_code == 0, narrowed.output
    assert [(g, n) for g, n, _ in _groups(narrowed.output)] == [("params.train.lr=0.01", 3)]
    resorted = runner.invoke(
        main, ["runs", "list", "--view", "lr seeds", "--sort", "params.train.lr", "--asc"]
    )
    assert [g for g, _, _ in _groups(resorted.output)] == ["params.train.lr=0.01", "params.train.lr=0.1"]
    # a --group-by of one's own (the view's metric columns kept), and --metric replacing them
    by_seed = runner.invoke(main, ["runs", "list", "--view", "lr seeds", "--group-by", "params.seed"])
    assert by_seed.exit_code == 0, by_seed.output
    assert sorted((g, n) for g, n, _ in _groups(by_seed.output)) == [
        ("params.seed=0", 2),
        ("params.seed=1", 2),
        ("params.seed=2", 2),
    ]
    last = runner.invoke(main, ["runs", "list", "--view", "lr seeds", "--metric", "metrics.acc"])
    assert last.exit_code == 0, last.output  # the view's sort, by max(acc)'s mean, went with its column
    assert last.output.splitlines()[0].split() == ["group", "n", "metrics.acc"]
    assert sorted(n for _, n, _ in _groups(last.output)) == [3, 3]

    # a view without grouping lists its runs in its order: by each run's min(acc), ascending
    runs_out = runner.invoke(main, ["runs", "list", "--view", "by acc"])
    assert runs_out.exit_code == 0, runs_out.output
    by_min = sorted((acc - 0.2, rid) for lr in ACC for rid, acc in zip(by_lr[lr], ACC[lr], strict=True))
    assert _ids(runs_out.output) == [rid for _, rid in by_min]
    by_id = runner.invoke(main, ["runs", "list", "--view", "by acc", "--sort", "id", "--asc"])
    assert _ids(by_id.output) == sorted(by_lr[0.1] + by_lr[0.01])
    ungrouped_metric = runner.invoke(main, ["runs", "list", "--view", "by acc", "--metric", "metrics.acc"])
    assert ungrouped_metric.exit_code == 2 and "the view has none, add --group-by" in ungrouped_metric.output


def test_an_unknown_view_or_another_pages_view_is_a_message(cli_api: InProcessApi) -> None:
    runner = CliRunner()
    none = runner.invoke(main, ["runs", "list", "--view", "lr seeds"])
    assert (
        none.exit_code == 1
        and "no view 'lr seeds' in project 'default': it has no saved views" in none.output
    )
    a = _view(cli_api, "lr seeds", GROUPED)
    b = _view(cli_api, "experiments", {"query": "runs > 1"}, page="experiments")
    unknown = runner.invoke(main, ["runs", "list", "--view", "lr seed"])
    assert unknown.exit_code == 1
    assert (
        f"no view 'lr seed' in project 'default'; its views: 'experiments' ({b['id']}), 'lr seeds' ({a['id']})"
        in (unknown.output)
    )
    wrong_page = runner.invoke(main, ["runs", "list", "--view", "experiments"])
    assert wrong_page.exit_code == 1
    assert "view 'experiments' is a view of the experiments page, not of the runs page" in wrong_page.output
    elsewhere = runner.invoke(main, ["views", "list", "--project", "nope"])
    assert elsewhere.exit_code == 1 and "project 'nope' not found" in elsewhere.output
    for out in (none, unknown, wrong_page, elsewhere):
        assert "Traceback" not in out.output


def test_views_list_show_and_delete_under_the_apis_role_rule(
    cli_api: InProcessApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["views", "list"]).output == "project 'default' has no saved views\n"
    meg = _member(tmp_path, "meg")
    mine = _view(cli_api, "lr seeds", GROUPED)
    hers = _view(cli_api, "by acc", BY_ACC, token=meg)

    listed = runner.invoke(main, ["views", "list"])
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.output.splitlines()
    assert header.split() == ["id", "page", "author", "updated", "name", "query"]
    assert [r.split()[:3] for r in rows] == [
        [str(hers["id"]), "runs", "meg"],
        [str(mine["id"]), "runs", "admin"],
    ]
    assert rows[0].endswith("by acc    params.train.lr < 0.2") and hers["updated_at"][:19] in rows[0]

    shown = runner.invoke(main, ["views", "show", "lr seeds"])
    assert shown.exit_code == 0, shown.output
    assert yaml.safe_load(shown.output) == mine
    as_json = runner.invoke(main, ["views", "show", str(hers["id"]), "--json"])
    assert json.loads(as_json.output)["state"] == hers["state"]

    # a member may delete only her own views; the project admin anyone's
    _as(cli_api, meg, monkeypatch)
    refused = runner.invoke(main, ["views", "delete", "lr seeds"])
    assert refused.exit_code == 1 and "403 only the view's author or a project admin" in refused.output
    assert "Traceback" not in refused.output
    own = runner.invoke(main, ["views", "delete", str(hers["id"])])
    assert own.exit_code == 0 and own.output == f"view {hers['id']} (by acc) deleted\n"
    assert [line.split()[0] for line in runner.invoke(main, ["views", "list"]).output.splitlines()[1:]] == [
        str(mine["id"])
    ]


def test_a_view_id_needs_no_project_and_a_name_does(
    cli_api: InProcessApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`views show|delete ID` and `runs list --view ID` find a view of any project the caller is in by its
    id (GET /views/{id}); a name is looked up in --project (default: default)."""
    runner = CliRunner()
    assert (
        cli_api.http.post("/api/v1/projects", json={"name": "lab"}, headers=cli_api.auth).status_code == 201
    )
    lab = next(
        p["id"]
        for p in cli_api.http.get("/api/v1/projects", headers=cli_api.auth).json()
        if p["name"] == "lab"
    )
    body = {
        "name": "lab sweep",
        "kind": "diagnostic",
        "spec": {},
        "project": "lab",
        "sweep": {"seeds": [0, 1]},
    }
    in_lab = cli_api.http.post("/api/v1/experiments", json=body, headers=cli_api.auth).json()
    cli_api.http.post(
        "/api/v1/experiments", json={"name": "d", "kind": "diagnostic", "spec": {}}, headers=cli_api.auth
    )
    res = cli_api.http.post(
        f"/api/v1/projects/{lab}/views",
        json={"name": "lab runs", "page": "runs", "state": {"query": "params.seed >= 0"}},
        headers=cli_api.auth,
    )
    assert res.status_code == 201, res.text
    view = res.json()

    shown = runner.invoke(main, ["views", "show", str(view["id"]), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output) == view
    listed = runner.invoke(main, ["runs", "list", "--view", str(view["id"])])
    assert listed.exit_code == 0, listed.output
    assert sorted(_ids(listed.output)) == sorted(r["id"] for r in in_lab["runs"])  # the view's project's runs
    # a name is looked up in --project (default: default)
    by_name = runner.invoke(main, ["views", "show", "lab runs"])
    assert by_name.exit_code == 1 and "no view 'lab runs' in project 'default'" in by_name.output
    assert (
        yaml.safe_load(runner.invoke(main, ["views", "show", "lab runs", "--project", "lab"]).output) == view
    )

    # a member of the project default only: the lab's view is not found, as a missing one
    _as(cli_api, _member(tmp_path, "meg"), monkeypatch)
    hidden = runner.invoke(main, ["views", "delete", str(view["id"])])
    assert hidden.exit_code == 1 and f"no view '{view['id']}' in project 'default'" in hidden.output
    assert "Traceback" not in hidden.output
    _as(cli_api, cli_api.auth["Authorization"].removeprefix("Bearer "), monkeypatch)  # the admin again
    deleted = runner.invoke(main, ["views", "delete", str(view["id"])])
    assert deleted.exit_code == 0 and deleted.output == f"view {view['id']} (lab runs) deleted\n"
    assert cli_api.http.get(f"/api/v1/views/{view['id']}", headers=cli_api.auth).status_code == 404
    for command in (["views", "show"], ["views", "delete"]):
        text = " ".join(runner.invoke(main, [*command, "--help"]).output.split())
        assert "its id, in any project you are in, or its name in --project (default: default)" in text
        assert "the project of a view given by name (default: default); an id needs none" in text


def test_runs_list_help_says_the_options_override_the_view() -> None:
    text = " ".join(CliRunner().invoke(main, ["runs", "list", "--help"]).output.split())
    assert "--view NAME_OR_ID" in text
    assert "its id (any project you are in), or its name (in --project, default: default)" in text
    assert "--where, --sort, --asc, --group-by and --metric given here override the view's" in text
