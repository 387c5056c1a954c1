"""Every route of the API x every kind of caller: anonymous, viewer, member, project admin, site admin,
the worker token, and a user of another project. Generated from the app's route table: a new route with
no entry in POLICY fails the test, so no route ships without a decision on who may call it.

Denials are exact (401 anonymous, 403 a role too low or the worker token off its routes, 404 a project
the caller cannot see); an allowed call may still answer 4xx for its own reasons (409 on a finished run,
422...), never 401, 403 or 404.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.routing import APIRoute

from backend.auth.dependencies import WORKER_OPERATIONS
from backend.main import API_PREFIX
from tests.backend.conftest import USER_PASSWORD, Api

# who may call each operation, in the project that owns the resource:
#   public: anyone; user: any logged-in user (lists are filtered); viewer/member/admin: that role or
#   higher; lifecycle: the worker token or a site admin; writer: the worker token or a member;
#   site_admin: site admins only
POLICY: dict[str, str] = {
    "health-get": "public",
    "server-config": "user",
    "auth-login": "public",
    "auth-me": "user",
    "auth-list_tokens": "user",
    "auth-create_token": "user",
    "auth-revoke_token": "user",
    "kinds-list": "user",
    "projects-list": "user",
    "projects-create": "site_admin",
    "projects-members": "viewer",
    "projects-set_member": "admin",
    "experiments-list": "user",
    "experiments-create": "member",
    "experiments-preview": "user",  # validates a spec, stores and reads nothing of a project
    "experiments-get": "viewer",
    "experiments-runs-table": "viewer",
    "experiments-runs-export": "viewer",
    "exports-parquet": "user",  # converts the posted table, reads and stores nothing
    "results-list_experiment": "viewer",
    "reviews-experiment_comments": "viewer",
    "reviews-comment_experiment": "member",
    "reviews-review": "member",
    "reviews-list": "viewer",
    "reviews-star": "viewer",
    "reviews-unstar": "viewer",
    "reviews-tag_experiment": "member",
    "reviews-untag_experiment": "member",
    "reviews-activity": "viewer",
    "runs-list": "user",
    "runs-get": "viewer",
    "runs-events": "viewer",
    "runs-read_ticket": "viewer",
    "runs-events_ticket": "viewer",  # the read ticket's deprecated path
    "runs-logs": "viewer",
    "metrics-keys": "viewer",
    "metrics-get": "viewer",
    "metrics-batch": "viewer",  # every run of ids: another project's is a 404, as metrics-get answers
    "results-list_run": "viewer",
    "reviews-run_comments": "viewer",
    "reviews-comment_run": "member",
    "reviews-tag_run": "member",
    "reviews-untag_run": "member",
    "runs-cancel": "member",
    "runs-retry": "member",
    "runs-patch": "member",  # renames a run (its own token may send what older workers did: ignored)
    "runs-claim": "lifecycle",
    "runs-heartbeat": "lifecycle",
    "runs-finish": "lifecycle",
    "runs-release": "lifecycle",
    "runs-resumed": "lifecycle",  # the run's own token (its attempt resumed from a checkpoint)
    "runs-attempts": "viewer",
    "runs-open_external": "member",  # a script's own run (backend/tracking/): a viewer may not open one
    "runs-provenance": "viewer",
    "runs-post_logs": "writer",
    "runs-post_params": "writer",
    "metrics-post": "writer",
    "results-post": "writer",
    "artifacts-list": "viewer",
    "artifacts-download": "viewer",
    "artifacts-upload": "lifecycle",
    "artifacts-delete": "lifecycle",
    "secrets-list": "viewer",  # names only, never a value
    "secrets-set": "admin",
    "secrets-set-hosts": "admin",
    "secrets-delete": "admin",
    "runs-secret": "run_only",  # the run's own token, for a secret its spec names
    "datasets-list": "viewer",
    "datasets-upload": "member",
    "datasets-delete": "member",  # and then only its uploader or a project admin (404 here: none yet)
    "runs-dataset": "run_only",  # the run's own token, for a dataset its spec names
    "examples-post": "writer",
    "examples-tables": "viewer",
    "examples-list": "viewer",
    "examples-diff": "viewer",
    "examples-peers": "viewer",
    "views-list": "viewer",
    "views-create": "member",
    "views-get": "viewer",
    # the view's author (meg, the member here) or a project admin; another member gets 403
    # (tests/backend/test_saved_views.py)
    "views-patch": "member",
    "views-delete": "member",
    # the same by the view's id alone: a view of a project the caller is not in is 404, as a missing one
    "views-get-by-id": "viewer",
    "views-patch-by-id": "member",
    "views-delete-by-id": "member",
    # claims (backend/claims/): any role reads, members state, edit, lock, comment on and review them;
    # deleting is the author's (meg here) or a project admin's: another member gets 403 (test_claims.py)
    "claims-list": "viewer",
    "claims-create": "member",
    "claims-get": "viewer",
    "claims-patch": "member",
    "claims-delete": "member",
    "claims-lock": "member",  # a second lock of the same version is 409: allowed, refused for its own reason
    "claims-versions": "viewer",
    "claims-comments": "viewer",
    "claims-comment": "member",
    "claims-review": "member",
    "claims-reviews": "viewer",
    # reports (backend/reports/): any role reads, members write, publish, comment, review and share; a
    # report's author (meg here) or a project admin deletes it (tests/backend/test_reports.py)
    "reports-list": "viewer",
    "reports-create": "member",
    "reports-get": "viewer",
    "reports-update": "member",
    "reports-delete": "member",
    "reports-data": "viewer",
    "reports-publish": "member",
    "reports-revisions": "viewer",
    "reports-revision": "viewer",
    "reports-export": "viewer",
    "reports-comments": "viewer",
    "reports-comment": "member",
    "reports-reviews": "viewer",
    "reports-review": "member",
    "reports-share": "member",
    "reports-shares": "member",
    "reports-revoke_share": "member",
    "reports-shared": "public",  # a share link's token in the path: one revision, nothing else
    # MLflow's REST API for its own client (backend/mlflowcompat/, left out of the OpenAPI document): the
    # project is in the path, so an outsider's call is 404 there; writes need a member
    "mlflow-experiments_create": "member",
    "mlflow-experiments_get": "viewer",
    "mlflow-experiments_get_by_name": "viewer",
    "mlflow-experiments_search": "viewer",
    "mlflow-experiments_search_get": "viewer",
    "mlflow-experiments_set_tag": "member",
    "mlflow-runs_create": "member",
    "mlflow-runs_update": "member",
    "mlflow-runs_get": "viewer",
    "mlflow-runs_log_metric": "member",
    "mlflow-runs_log_parameter": "member",
    "mlflow-runs_set_tag": "member",
    "mlflow-runs_delete_tag": "member",
    "mlflow-runs_log_batch": "member",
    "mlflow-runs_search": "viewer",
    "mlflow-logged_models_search": "viewer",  # none are kept: an empty page
    "mlflow-metrics_get_history": "viewer",
    "mlflow-artifacts_list": "viewer",
    "mlflow-artifacts_download": "viewer",
    "mlflow-artifacts_upload": "member",
}

# the roles the project-scoped policies need, lowest first
RANK = {"viewer": 1, "member": 2, "admin": 3}
CALLERS = ("anonymous", "viewer", "member", "project_admin", "site_admin", "worker", "outsider")
CLAIM = {
    "section": "4.2",
    "arms": [
        {"name": "a", "query": "params.train.lr = 0.1"},
        {"name": "b", "query": "params.train.lr = 0.2"},
    ],
    "metric": "loss",
    "direction": "less",
}
DIAGNOSTIC_RESULT = {"final_loss": 1.0, "initial_loss": 2.0, "steps": 1, "parameters": 3}


def expected(policy: str, caller: str, operation: str) -> int | None:
    """The denial a caller must get, or None when the call is allowed."""
    if policy == "public":
        return None
    if caller == "anonymous":
        return 401
    if caller == "worker":
        return None if operation in WORKER_OPERATIONS else 403
    if policy == "run_only":
        return 403
    if caller == "site_admin" or policy == "user":
        return None
    if policy == "site_admin":
        return 403
    if caller == "outsider":
        return 404
    role = {"viewer": 1, "member": 2, "project_admin": 3}[caller]
    if policy == "lifecycle":
        return 403
    if policy == "writer":
        return None if role >= RANK["member"] else 403
    return None if role >= RANK[policy] else 403


def _bodies(run_id: int, experiment_id: int) -> dict[str, Any]:
    run = {"run_id": str(run_id)}
    return {
        "mlflow-experiments_create": {"name": "matrix-mlflow"},
        "mlflow-experiments_search": {},
        "mlflow-experiments_set_tag": {"experiment_id": str(experiment_id), "key": "k", "value": "v"},
        "mlflow-runs_create": {"experiment_id": "0"},
        "mlflow-runs_update": {**run, "run_name": "matrix"},
        "mlflow-runs_log_metric": {**run, "key": "loss", "value": 1.0, "timestamp": 1, "step": 1},
        "mlflow-runs_log_parameter": {**run, "key": "p", "value": "1"},
        "mlflow-runs_set_tag": {**run, "key": "k", "value": "v"},
        "mlflow-runs_delete_tag": {**run, "key": "k"},
        "mlflow-runs_log_batch": {
            **run,
            "metrics": [{"key": "loss", "value": 1.0, "timestamp": 1, "step": 2}],
        },
        "mlflow-runs_search": {"experiment_ids": [str(experiment_id)]},
        "mlflow-logged_models_search": {"experiment_ids": [str(experiment_id)]},
        "mlflow-artifacts_upload": {"any": "bytes"},
        "auth-login": {"username": "meg", "password": USER_PASSWORD},
        "auth-create_token": {"name": "matrix"},
        "projects-create": {"name": "matrix-project"},
        "projects-set_member": {"username": "vic", "role": "viewer"},
        "experiments-create": {"name": "m", "kind": "diagnostic", "spec": {}},
        "experiments-preview": {"name": "m", "kind": "diagnostic", "spec": {}},
        "reviews-comment_experiment": {"body": "looks right"},
        "reviews-comment_run": {"body": "looks right"},
        "reviews-review": {"state": "approved"},
        "runs-patch": {"name": "matrix"},
        "runs-open_external": {"experiment": "matrix", "config": {"lr": 0.1}},
        "runs-claim": {"attempt": 1, "worker": "w"},
        "runs-heartbeat": {"attempt": 1},
        "runs-finish": {"attempt": 1, "status": "failed"},
        "runs-release": {"attempt": 1},
        "runs-resumed": {"attempt": 1, "step": 3},
        "runs-post_logs": {"lines": ["a line"]},
        "runs-post_params": {"params": {"derived": {"parameters": 3}}},
        "metrics-post": {"points": [{"key": "loss", "step": 1, "value": 1.0}]},
        "results-post": {"kind": "diagnostic", "payload": DIAGNOSTIC_RESULT},
        "examples-post": {"table": "items", "rows": [{"idx": 0, "key": "a", "data": {"x": 1}}]},
        "artifacts-upload": {"any": "bytes"},
        "secrets-set": {"value": "sk-matrix-0123"},
        "secrets-set-hosts": {"hosts": ["api.openai.com"]},
        "datasets-upload": {"any": "bytes"},
        "exports-parquet": {"columns": [{"name": "step", "values": [1, 2]}]},
        "views-create": {"name": "matrix", "page": "runs", "state": {"query": "status = 'failed'"}},
        "views-patch": {"name": "matrix view"},
        "views-patch-by-id": {"name": "matrix view by id"},
        "claims-create": {"name": "matrix", "definition": CLAIM},
        "claims-patch": {"definition": {**CLAIM, "alpha": 0.01}},
        "claims-comment": {"body": "which seeds?"},
        "claims-review": {"state": "approved"},
        "reports-create": {"title": "matrix", "blocks": []},
        # the version moves on with each allowed save: a stale one answers 409, which is allowed too
        "reports-update": {
            "base_version": 1,
            "title": "matrix",
            "blocks": [{"id": "b", "type": "markdown", "text": "x"}],
        },
        "reports-publish": {"base_version": 1},
        "reports-comment": {"block_id": "b", "body": "looks right"},
        "reports-review": {"state": "approved"},
        "reports-share": {"expires_in_days": 1},
    }


# query parameters an operation requires
QUERIES: dict[str, dict[str, Any]] = {"artifacts-upload": {"attempt": 1}, "artifacts-delete": {"attempt": 1}}


def _mlflow_queries(run_id: int, experiment_id: int) -> dict[str, dict[str, Any]]:
    return {
        "mlflow-experiments_get": {"experiment_id": str(experiment_id)},
        "mlflow-experiments_get_by_name": {"experiment_name": "matrix-mlflow-none"},
        "mlflow-runs_get": {"run_id": str(run_id)},
        "mlflow-metrics_get_history": {"run_id": str(run_id), "metric_key": "loss"},
        "mlflow-artifacts_list": {"path": f"{experiment_id}/{run_id}/artifacts"},
    }


def _operations(api: Api) -> dict[str, tuple[str, str]]:
    """operation id -> (method, path template), from the app's own OpenAPI document (its route table), and
    the API's routes left out of it (MLflow's REST API: backend/mlflowcompat/), from the routers."""
    document = api.client.app.openapi()  # type: ignore[attr-defined]
    operations = {
        operation["operationId"]: (method.upper(), path)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    }
    # every router of the backend's modules (the app includes each under /api/v1): their hidden routes
    routers = {
        id(value): value
        for name, module in list(sys.modules.items())
        if name.startswith("backend.")
        for value in vars(module).values()
        if isinstance(value, APIRouter)
    }
    for router in routers.values():
        for route in router.routes:
            if isinstance(route, APIRoute) and not route.include_in_schema:
                assert route.operation_id, f"{route.path} has no operation id"
                (method,) = route.methods
                operations[route.operation_id] = (method, f"{API_PREFIX}{route.path_format}")
    return operations


def test_every_route_has_a_policy(api: Api) -> None:
    operations = set(_operations(api))
    assert operations == set(POLICY), (
        f"routes without a policy: {sorted(operations - set(POLICY))}; "
        f"policies without a route: {sorted(set(POLICY) - operations)}"
    )
    assert operations >= WORKER_OPERATIONS


@pytest.mark.heavy
def test_authorization_matrix(api: Api) -> None:
    tokens: dict[str, str | None] = {
        "anonymous": None,
        "viewer": api.user("vic", role="viewer"),
        "member": api.user("meg", role="member"),
        "project_admin": api.user("pat", role="admin"),
        "site_admin": api.admin_token,
        "worker": "wk_test_worker_token_0123456789",
        "outsider": api.user("ozzie", project="elsewhere"),
    }
    experiment = api.submit({}).json()
    run_id = experiment["runs"][0]["id"]
    # a finished run: lifecycle writes answer 409 to those allowed, and the event stream ends at once
    assert api.client.post(f"/api/v1/runs/{run_id}/cancel", headers=api.h()).status_code == 200
    bodies = _bodies(run_id, experiment["id"])
    # saved views by the member: one to delete under the project, one to delete by id (views-delete and
    # views-delete-by-id run first, sorted), one the others read
    views = [
        api.client.post(
            f"/api/v1/projects/{experiment['project_id']}/views",
            json={"name": name, "page": "runs"},
            headers=api.h(tokens["member"]),
        ).json()["id"]
        for name in ("to delete", "to delete by id", "to read")
    ]
    # claims by the member: one to delete (claims-delete runs first, sorted), one the others read
    claims = [
        api.client.post(
            f"/api/v1/projects/{experiment['project_id']}/claims",
            json={"name": name, "definition": CLAIM},
            headers=api.h(tokens["member"]),
        ).json()["id"]
        for name in ("claim to delete", "claim to read")
    ]
    # reports by the member: one to delete, one the others read (published once, with two share links)
    project_url = f"/api/v1/projects/{experiment['project_id']}/reports"
    reports = [
        api.client.post(
            project_url,
            json={"title": title, "blocks": [{"id": "b", "type": "markdown", "text": "x"}]},
            headers=api.h(tokens["member"]),
        ).json()["id"]
        for title in ("to delete", "to read")
    ]
    api.client.post(
        f"/api/v1/reports/{reports[1]}/publish", json={"base_version": 1}, headers=api.h(tokens["member"])
    )
    # two links: reports-revoke_share revokes the first (it runs before reports-shared, sorted), the
    # anonymous reader opens the second
    revoked, share = (
        api.client.post(
            f"/api/v1/reports/{reports[1]}/revisions/1/shares", json={}, headers=api.h(tokens["member"])
        ).json()
        for _ in range(2)
    )
    params = {
        "claim_id": claims[1],
        "report_id": reports[1],
        "number": 1,
        "share_id": revoked["id"],
        "token": share["token"],
        "experiment_id": experiment["id"],
        "run_id": run_id,
        "project_id": experiment["project_id"],
        "token_id": 999_999,
        "tag": "matrix",
        "path": "outputs/none.txt",
        "name": "MATRIX_KEY",
        "view_id": views[2],
        "project": "default",
    }
    routes = _operations(api)
    wrong: list[str] = []
    for operation, policy in sorted(POLICY.items()):
        method, template = routes[operation]
        deleted = {"views-delete": views[0], "views-delete-by-id": views[1]}
        override: dict[str, Any] = {"view_id": deleted[operation]} if operation in deleted else {}
        if operation == "claims-delete":
            override = {"claim_id": claims[0]}
        elif operation == "reports-delete":
            override = {"report_id": reports[0]}
        if operation.startswith(
            "mlflow-artifacts"
        ):  # MLflow's artifact path: <experiment>/<run>/artifacts/...
            override = {"path": f"{experiment['id']}/{run_id}/artifacts/none.txt"}
        path = template.format(**(params | override))
        for caller in CALLERS:
            token = tokens[caller]
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            call: Callable[..., Any] = api.client.request
            kwargs: dict[str, Any] = {"headers": headers}
            if operation in bodies:
                kwargs["json"] = bodies[operation]
            queries = QUERIES | _mlflow_queries(run_id, experiment["id"])
            if operation in queries:
                kwargs["params"] = queries[operation]
            if operation in (
                "examples-list",
                "examples-diff",
                "examples-peers",
            ):  # the run diffed with itself
                kwargs["params"] = {"table": "items", "other": run_id}
            if operation == "metrics-batch":
                kwargs["params"] = {"ids": str(run_id), "key": "loss"}
            status = call(method, path, **kwargs).status_code
            want = expected(policy, caller, operation)
            if want is None:
                # token 999999 is nobody's; the run has no artifact outputs/none.txt; secret MATRIX_KEY may be unset
                natural_404 = operation in (
                    "auth-revoke_token",
                    "artifacts-download",
                    "secrets-delete",
                    "secrets-set-hosts",
                    "datasets-delete",
                    "views-delete",  # deleted by the member: gone for the admins after
                    "views-delete-by-id",
                    "claims-delete",  # deleted by the member: gone for the admins after
                    "reports-delete",  # deleted by the member: gone for the admins after
                    "mlflow-experiments_get_by_name",  # no such experiment
                    "mlflow-runs_delete_tag",  # the run has no tag k (yet)
                    "mlflow-artifacts_download",  # the run has no artifact none.txt
                )
                if status in (401, 403) or (status == 404 and not natural_404):
                    wrong.append(f"{caller:13} {method:6} {template}: {status}, expected to be allowed")
            elif status != want:
                wrong.append(f"{caller:13} {method:6} {template}: {status}, expected {want}")
    assert not wrong, "\n" + "\n".join(wrong)


@pytest.mark.parametrize("caller", CALLERS)
def test_the_policy_table_denies_somebody_everything_but_the_public_routes(caller: str) -> None:
    """Sanity of the expectations themselves: only health and login are open to the anonymous."""
    open_to = {op for op, policy in POLICY.items() if expected(policy, caller, op) is None}
    if caller == "anonymous":
        assert open_to == {"health-get", "auth-login", "reports-shared"}
    if caller == "worker":
        assert open_to == WORKER_OPERATIONS | {"auth-login", "reports-shared"}
