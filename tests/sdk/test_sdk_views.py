"""Saved views from the SDK: list_views, get_view, create_view, update_view and delete_view (and by a view's id
alone: get_view_by_id, update_view_by_id, delete_view_by_id) against the real
API app (SQLite, in this process, reached through an httpx transport), with the API's role rule, and
view_runs_args, the dashboard's mapping of a view onto GET /runs (frontend/src/lib/runsQuery.ts: its test
cases are repeated here with the same expectations)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from backend.auth import service as auth_service
from backend.bootstrap import ensure_admin, migrate
from backend.db import get_engine, session_factory, session_scope
from backend.main import create_app
from backend.projects import service as projects
from backend.settings import Settings
from reasonlab_sdk import Conflict, Forbidden, Invalid, NotFound, ReasonLabClient, view_runs_args
from reasonlab_sdk.api_types import ViewState
from reasonlab_sdk.views import effective_query, group_by_param, metric_expr, metrics_param
from tests.backend.conftest import USER_PASSWORD, make_settings


@dataclass
class Live:
    http: TestClient
    settings: Settings
    admin_token: str

    def client(self, token: str | None = None) -> ReasonLabClient:
        """The SDK's client with ``token`` (the admin's by default), its requests answered by the app."""

        def forward(request: httpx.Request) -> httpx.Response:
            answer = self.http.request(
                request.method,
                request.url.raw_path.decode(),
                content=request.content,
                headers=request.headers,
            )
            headers = {k: v for k, v in answer.headers.items() if k.lower() != "content-encoding"}
            return httpx.Response(answer.status_code, headers=headers, content=answer.content)

        return ReasonLabClient(
            "http://testserver", token or self.admin_token, transport=httpx.MockTransport(forward)
        )

    def user(self, username: str, role: str = "member", project: str = "default") -> str:
        """A user with ``role`` in ``project``; its API token."""
        factory = session_factory(get_engine(self.settings.database_url))
        with session_scope(factory) as session:
            projects.get_or_create_project(session, project)
            user = projects.create_member(session, username, USER_PASSWORD, project=project, role=role)
            _, token = auth_service.create_token(session, user, "test")
        return token


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    settings = make_settings(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "home")
    migrate(settings)
    creds = ensure_admin(settings)
    assert creds is not None
    with TestClient(create_app(settings, background=False)) as http:
        yield Live(http, settings, creds.token)


ACC = {0.1: [0.71, 0.74, 0.69], 0.01: [0.52, 0.58, 0.55]}  # the last acc of each seed, per train.lr


def _seed(live: Live) -> dict[float, list[int]]:
    """Two variants (train.lr 0.1 / 0.01) x three seeds, each run's acc rising to the value of ACC, and a
    run named "probe 0.1" of another experiment (lr 0.5)."""
    admin = live.client()
    exp = admin.create_experiment(
        "lr sweep", "diagnostic", {}, {"grid": {"train.lr": [0.1, 0.01]}, "seeds": [0, 1, 2]}
    )
    by_lr: dict[float, list[int]] = {0.1: [], 0.01: []}
    for run in sorted(exp["runs"], key=lambda r: r["params"]["seed"]):
        by_lr[run["params"]["train.lr"]].append(run["id"])
    for lr, ids in by_lr.items():
        for rid, acc in zip(ids, ACC[lr], strict=True):
            admin.post_metrics(
                rid, [{"key": "acc", "step": 1, "value": acc - 0.2}, {"key": "acc", "step": 2, "value": acc}]
            )
    probe = admin.create_experiment("probe", "diagnostic", {"train": {"lr": 0.5}})
    admin.rename_run(probe["runs"][0]["id"], "probe 0.1")
    return by_lr


def _default_project(client: ReasonLabClient) -> int:
    return next(p["id"] for p in client.list_projects() if p["name"] == "default")


STATE: ViewState = {
    "query": "params.train.lr < 0.2",
    "columns": [{"field": "name"}, {"field": "metrics.acc", "aggregate": "max", "width": 120}],
    "group_by": ["params.train.lr"],
    "sort": {"field": "metrics.acc", "order": "desc", "aggregate": "max"},
    "chart": {"metric": "acc", "mode": "envelope"},
}


def test_members_save_read_update_and_delete_views_under_the_apis_role_rule(live: Live) -> None:
    meg, max_ = live.client(live.user("meg")), live.client(live.user("max"))
    viewer = live.client(live.user("vic", "viewer"))
    pid = _default_project(meg)

    view = meg.create_view(pid, "lr seeds", STATE)
    assert view["name"] == "lr seeds" and view["page"] == "runs" and view["author"] == "meg"
    assert view["can_edit"] is True and view["project_id"] == pid
    # the API fills in the defaults the state left out
    assert view["state"]["columns"][0] == {"field": "name", "aggregate": None, "width": None}
    assert view["state"]["chart"] == {"metric": "acc", "mode": "envelope", "x": "step"}

    # another member and a viewer read it; neither may change or delete it
    listed = max_.list_views(pid)
    assert [(v["id"], v["name"], v["can_edit"]) for v in listed] == [(view["id"], "lr seeds", False)]
    assert viewer.get_view(pid, view["id"])["state"] == view["state"]
    with pytest.raises(Forbidden):
        max_.update_view(pid, view["id"], name="mine")
    with pytest.raises(Forbidden):
        max_.delete_view(pid, view["id"])
    with pytest.raises(Forbidden):
        viewer.create_view(pid, "by a viewer", {})

    # a taken name is a 409 naming the field, a bad state a 422 naming its path
    with pytest.raises(Conflict) as taken:
        max_.create_view(pid, "lr seeds")
    assert taken.value.errors[0]["loc"] == ["body", "name"]
    median: Any = {"columns": [{"field": "metrics.acc", "aggregate": "median"}]}  # no such aggregate
    with pytest.raises(Invalid) as bad:
        meg.create_view(pid, "bad", median)
    assert ["body", "state", "columns", 0, "aggregate"] in [e["loc"] for e in bad.value.errors]
    with pytest.raises(ValueError, match="a new name, a new state or both"):
        meg.update_view(pid, view["id"])

    # the author renames it and replaces its whole state; an experiments view beside it
    updated = meg.update_view(pid, view["id"], name="lr runs", state={"query": "carma"})
    assert updated["name"] == "lr runs" and updated["state"]["group_by"] is None
    assert updated["state"] == {
        "query": "carma",
        "columns": [],
        "group_by": None,
        "sort": None,
        "chart": None,
        "charts": [],
        "runs": [],
    }
    assert meg.update_view(pid, view["id"], name="lr runs (2)")["state"] == updated["state"]
    other = max_.create_view(pid, "all experiments", {"query": "runs > 1"}, page="experiments")
    assert [v["name"] for v in meg.list_views(pid)] == ["all experiments", "lr runs (2)"]

    # the project admin deletes anyone's view; the author their own
    live.client().delete_view(pid, other["id"])
    meg.delete_view(pid, view["id"])
    assert meg.list_views(pid) == []
    with pytest.raises(NotFound):
        meg.get_view(pid, view["id"])


def test_a_view_by_its_id_alone_in_another_project(live: Live) -> None:
    """get_view_by_id, update_view_by_id and delete_view_by_id: no project named; a user of another project
    gets NotFound, as for a view that does not exist."""
    meg = live.client(live.user("meg", project="lab"))
    vic = live.client(live.user("vic", "viewer", project="lab"))
    ozzie = live.client(live.user("ozzie", project="elsewhere"))
    lab = next(p["id"] for p in meg.list_projects() if p["name"] == "lab")
    view = meg.create_view(lab, "lr seeds", STATE)

    assert meg.get_view_by_id(view["id"]) == meg.get_view(lab, view["id"])
    assert vic.get_view_by_id(view["id"])["project_id"] == lab
    with pytest.raises(NotFound, match=f"view {view['id']} not found"):
        ozzie.get_view_by_id(view["id"])
    with pytest.raises(NotFound):
        ozzie.delete_view_by_id(view["id"])
    with pytest.raises(NotFound, match=f"view {view['id'] + 1} not found"):
        meg.get_view_by_id(view["id"] + 1)
    with pytest.raises(Forbidden):
        vic.update_view_by_id(view["id"], name="mine")
    with pytest.raises(ValueError, match="a new name, a new state or both"):
        meg.update_view_by_id(view["id"])

    renamed = meg.update_view_by_id(view["id"], name="lr runs", state={"query": "carma"})
    assert renamed["name"] == "lr runs" and renamed["state"]["query"] == "carma"
    assert renamed["state"]["group_by"] is None and renamed["project_id"] == lab
    meg.delete_view_by_id(view["id"])
    assert meg.list_views(lab) == []
    with pytest.raises(NotFound):
        meg.get_view_by_id(view["id"])


def test_a_views_runs_args_list_the_runs_and_groups_it_shows(live: Live) -> None:
    by_lr = _seed(live)
    admin = live.client()
    pid = _default_project(admin)

    grouped = admin.create_view(pid, "lr seeds", STATE)
    args = view_runs_args(grouped)
    assert args == {
        "q": "params.train.lr < 0.2",
        "sort": "metric-mean:max(metrics.acc)",
        "order": "desc",
        "group_by": "params.train.lr",
        "metrics": ["max(metrics.acc)"],
    }
    page = admin.list_runs(project="default", **args)
    groups = page["groups"] or []
    assert page["items"] == [] and [g["key"] for g in groups] == [
        {"params.train.lr": 0.1},
        {"params.train.lr": 0.01},
    ]
    for group, lr in zip(groups, (0.1, 0.01), strict=True):
        assert sorted(group["run_ids"]) == sorted(by_lr[lr])
        stats = group["metrics"]["max(metrics.acc)"]
        assert stats["n"] == 3 and stats["mean"] == pytest.approx(statistics.mean(ACC[lr]))

    # not grouped: the runs, by the sort's metric aggregate; a plain word is a name search
    runs_view = admin.create_view(
        pid,
        "by acc",
        {
            "query": "params.train.lr < 0.2",
            "sort": {"field": "metrics.acc", "order": "asc", "aggregate": "min"},
        },
    )
    args = view_runs_args(runs_view)
    assert args == {"q": "params.train.lr < 0.2", "sort": "min(metrics.acc)", "order": "asc"}
    ids = [r["id"] for r in admin.list_runs(project="default", **args)["items"]]
    by_min = sorted(((acc - 0.2, rid) for lr in ACC for rid, acc in zip(by_lr[lr], ACC[lr], strict=True)))
    assert ids == [rid for _, rid in by_min]
    named = admin.create_view(pid, "probe", {"query": "probe"})
    assert view_runs_args(named) == {"q": 'name contains "probe"'}
    assert [r["name"] for r in admin.list_runs(project="default", **view_runs_args(named))["items"]] == [
        "probe 0.1"
    ]

    experiments_view = admin.create_view(pid, "experiments", {"query": "runs > 1"}, page="experiments")
    with pytest.raises(ValueError, match="view 'experiments' is a view of the experiments page"):
        view_runs_args(experiments_view)


def test_view_runs_args_is_the_dashboards_mapping() -> None:
    """frontend/src/lib/runsQuery.test.ts's cases, with its expectations."""
    assert effective_query("  ") is None
    assert effective_query("carma") == 'name contains "carma"'
    assert effective_query("carma lambda") == 'name contains "carma lambda"'
    assert effective_query("#12") == "id = 12"
    assert effective_query(" 12 ") == 'id = 12 or name contains "12"'
    assert effective_query("a\\b") == 'name contains "a\\\\b"'
    assert effective_query('status = "failed"') == 'status = "failed"'
    assert effective_query("tags exists") == "tags exists"
    assert effective_query("max(metrics.acc) > 0.9") == "max(metrics.acc) > 0.9"
    assert metric_expr("metrics.acc", None) == "metrics.acc"
    assert metric_expr("metrics.acc", "last") == "metrics.acc"
    assert metric_expr("metrics.val/loss", "min") == "min(metrics.val/loss)"
    assert metric_expr("metrics.eval acc", "best") == 'best(metrics."eval acc")'
    columns: list[Any] = [
        {"field": "name", "aggregate": None, "width": None},
        {"field": "metrics.acc", "aggregate": "max", "width": None},
        {"field": "metrics.loss", "aggregate": None, "width": 90},
        {"field": "metrics.acc", "aggregate": "max", "width": 200},
    ]
    assert metrics_param(columns) == ["max(metrics.acc)", "metrics.loss"]
    assert metrics_param([{"field": "name"}, {"field": "status"}]) is None
    assert group_by_param(None) is None
    assert group_by_param("all spec fields but seed") == "default"
    assert group_by_param(["params.lambda", "kind"]) == "params.lambda,kind"

    # sorts: created on its keyset, metrics by aggregate; groups by a metric's mean or a group field
    assert view_runs_args({"sort": None}) == {}
    created: ViewState = {"sort": {"field": "created", "order": "desc", "aggregate": None}}
    assert view_runs_args(created) == {"sort": "created_at", "order": "desc"}
    lr: ViewState = {"sort": {"field": "params.train.lr", "order": "asc"}}
    assert view_runs_args(lr) == {"sort": "params.train.lr", "order": "asc"}
    best: ViewState = {"sort": {"field": "metrics.acc", "order": "desc", "aggregate": "best"}}
    assert view_runs_args(best) == {"sort": "best(metrics.acc)", "order": "desc"}
    by_mean: ViewState = {
        "group_by": "all spec fields but seed",
        "sort": {"field": "metrics.acc", "order": "desc"},
        "columns": [{"field": "metrics.acc"}],
    }
    assert view_runs_args(by_mean) == {
        "sort": "metric-mean:metrics.acc",
        "order": "desc",
        "group_by": "default",
        "metrics": ["metrics.acc"],
    }
    by_field: ViewState = {"group_by": ["params.lambda"], "sort": {"field": "params.lambda"}}
    assert view_runs_args(by_field) == {"sort": "params.lambda", "order": "asc", "group_by": "params.lambda"}
    # a sort the groups do not have is left out; metric columns ask for nothing without a grouping
    not_a_group: ViewState = {"group_by": ["params.lambda"], "sort": {"field": "name"}}
    assert view_runs_args(not_a_group) == {"group_by": "params.lambda"}
    assert view_runs_args({"columns": [{"field": "metrics.acc"}]}) == {}
    assert view_runs_args({"group_by": [], "query": ""}) == {}
