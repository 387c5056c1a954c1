"""GET /server: what the dashboard reads about the deployment, first where MLflow's UI is (the run page
shows "Open in MLflow" only where there is one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.settings import Settings
from tests.backend.conftest import Api


@pytest.mark.parametrize(
    ("tracking_uri", "ui_url", "expected"),
    [
        (
            "",
            "",
            None,
        ),  # embedded sqlite store, nothing serves it (reasonlab up --no-mlflow-ui, reasonlab api)
        ("", "http://127.0.0.1:5000/", "http://127.0.0.1:5000"),  # what reasonlab up sets for its UI
        ("http://mlflow:5000", "", "http://mlflow:5000"),  # a tracking server serves its own UI
        ("http://mlflow:5000", "https://mlflow.lab.example", "https://mlflow.lab.example"),  # compose: public
        ("http://mlflow:5000", "none", None),  # a server the users' browsers cannot reach
    ],
)
def test_the_mlflow_ui_is_the_set_url_else_a_tracking_server_else_none(
    tmp_path: Path, tracking_uri: str, ui_url: str, expected: str | None
) -> None:
    settings = Settings(home=tmp_path, mlflow_tracking_uri=tracking_uri, mlflow_ui_url=ui_url)
    assert settings.mlflow_ui == expected


def test_the_dashboard_reads_the_mlflow_ui_url_or_null(api: Api) -> None:
    got = api.client.get("/api/v1/server", headers=api.h())
    assert got.status_code == 200 and got.json()["mlflow_ui_url"] is None  # the test app's sqlite store
    api.settings.mlflow_ui_url = "http://127.0.0.1:5123"
    assert (
        api.client.get("/api/v1/server", headers=api.h()).json()["mlflow_ui_url"] == "http://127.0.0.1:5123"
    )
    assert api.client.get("/api/v1/server").status_code == 401
