"""GET /experiments/{id}/runs/export: the runs table as CSV or Parquet, read back
with the csv module and pyarrow; formula-safe CSV; 422 at the field; another project's member 404.
POST /exports/parquet: a chart's table as Parquet."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlalchemy import insert, text

from backend.db import get_engine
from backend.exports import tables
from backend.models import Run
from tests.backend.conftest import Api
from tests.backend.test_runs_table import _released_then_resumed

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _export(api: Api, experiment_id: int, token: str | None = None, **params: Any) -> Any:
    return api.client.get(
        f"/api/v1/experiments/{experiment_id}/runs/export", params=params, headers=api.h(token)
    )


def _csv_rows(body: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body.decode("utf-8"), newline="")))


def _sweep_with_metrics(api: Api) -> dict[str, Any]:
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01]}, "seeds": [0, 1]}, name="lr sweep").json()
    runs = exp["runs"]
    for r, points in ((runs[0], [("loss", 3, 0.5), ("acc", 3, 0.9)]), (runs[3], [("loss", 7, 1.25)])):
        body = {"points": [{"key": k, "step": s, "value": v} for k, s, v in points]}
        assert (
            api.client.post(f"/api/v1/runs/{r['id']}/metrics", json=body, headers=api.worker).status_code
            == 200
        )
    url = f"/api/v1/runs/{runs[1]['id']}"
    assert (
        api.client.post(f"{url}/claim", json={"attempt": 1, "worker": "w1"}, headers=api.worker).status_code
        == 200
    )
    fin = {"attempt": 1, "status": "succeeded"}
    assert api.client.post(f"{url}/finish", json=fin, headers=api.worker).status_code == 200
    with get_engine(api.settings.database_url).begin() as conn:
        conn.execute(text("UPDATE runs SET name = 'baseline' WHERE id = :id"), {"id": runs[1]["id"]})
    return exp


def test_csv_export_has_the_runs_tables_columns(api: Api) -> None:
    exp = _sweep_with_metrics(api)
    r = _export(api, exp["id"], format="csv")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/csv")
    assert f'filename="experiment-{exp["id"]}-lr_sweep-runs.csv"' in r.headers["content-disposition"]
    rows = _csv_rows(r.content)
    runs = sorted(exp["runs"], key=lambda x: x["index"])
    # every field of the resolved spec (steps, widths...: not only the swept ones), as MLflow's params
    spec_fields = sorted(f"params.{name}" for name in _flat(runs[0]["spec"]))
    assert {"params.seed", "params.train.lr", "params.train.steps"} <= set(spec_fields)
    assert list(rows[0]) == [
        "run_id", "number", "name", "status", "attempt", "released", "created_at", "started_at", "finished_at",
        "duration_s", *spec_fields, "metrics.acc", "metrics.loss",
    ]  # fmt: skip
    for row, run in zip(rows, runs, strict=True):
        assert row["params.train.steps"] == str(run["spec"]["train"]["steps"])
    assert [int(row["run_id"]) for row in rows] == [x["id"] for x in runs]
    assert [row["number"] for row in rows] == ["1", "2", "3", "4"]
    assert [row["name"] for row in rows] == ["", "baseline", "", ""]
    assert [row["status"] for row in rows] == ["queued", "succeeded", "queued", "queued"]
    assert [float(row["params.train.lr"]) for row in rows] == [x["params"]["train.lr"] for x in runs]
    assert [row["metrics.loss"] for row in rows] == ["0.5", "", "", "1.25"]
    assert [row["metrics.acc"] for row in rows] == ["0.9", "", "", ""]
    finished = rows[1]
    started_at = datetime.fromisoformat(finished["started_at"])
    finished_at = datetime.fromisoformat(finished["finished_at"])
    assert started_at.tzinfo is not None and finished_at >= started_at
    assert float(finished["duration_s"]) == (finished_at - started_at).total_seconds()
    assert rows[0]["started_at"] == "" and rows[0]["duration_s"] == ""


def _flat(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """The test's own flattening of a nested spec: dotted paths of every leaf."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(
            _flat(item, f"{prefix}{key}.") if isinstance(item, dict) and item else {f"{prefix}{key}": item}
        )
    return out


def test_export_has_the_params_a_run_logged(api: Api) -> None:
    exp = api.submit({}, sweep={"grid": {"seed": [1, 2]}}).json()
    first = exp["runs"][0]["id"]
    claim = {"attempt": 1, "worker": "w1"}
    got = api.client.post(f"/api/v1/runs/{first}/claim", json=claim, headers=api.worker)
    assert got.status_code == 200, got.text
    run_token = {"Authorization": f"Bearer {got.json()['run_token']}"}
    body = {"params": {"derived": {"parameters": 1234}}, "attempt": 1}
    posted = api.client.post(f"/api/v1/runs/{first}/params", json=body, headers=run_token)
    assert posted.status_code == 204, posted.text
    rows = _csv_rows(_export(api, exp["id"]).content)
    assert [row["logged.derived.parameters"] for row in rows] == ["1234", ""]
    table = pq.read_table(io.BytesIO(_export(api, exp["id"], format="parquet").content)).to_pydict()
    assert table["logged.derived.parameters"] == [1234, None]


def test_parquet_export_keeps_the_column_types(api: Api) -> None:
    exp = _sweep_with_metrics(api)
    r = _export(api, exp["id"], format="parquet")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/vnd.apache.parquet"
    assert f'filename="experiment-{exp["id"]}-lr_sweep-runs.parquet"' in r.headers["content-disposition"]
    t = pq.read_table(io.BytesIO(r.content))
    assert t.schema.field("number").type == pa.int64()
    assert t.schema.field("name").type == pa.string()
    assert t.schema.field("created_at").type == pa.timestamp("us", tz="UTC")
    assert t.schema.field("params.train.lr").type == pa.float64()
    assert t.schema.field("metrics.loss").type == pa.float64()
    data = t.to_pydict()
    assert data["number"] == [1, 2, 3, 4]
    assert data["name"] == [None, "baseline", None, None]
    assert data["metrics.loss"] == [0.5, None, None, 1.25]
    assert data["params.seed"] == [0, 1, 0, 1]
    assert data["finished_at"][1].tzinfo is not None and data["finished_at"][0] is None
    # the same table as the CSV
    rows = _csv_rows(_export(api, exp["id"]).content)
    assert [str(x) for x in data["run_id"]] == [row["run_id"] for row in rows]


def test_status_filter_keeps_only_those_runs(api: Api) -> None:
    exp = _sweep_with_metrics(api)
    rows = _csv_rows(_export(api, exp["id"], status=["succeeded", "running"]).content)
    assert [(row["number"], row["status"]) for row in rows] == [("2", "succeeded")]
    queued = pq.read_table(io.BytesIO(_export(api, exp["id"], format="parquet", status="queued").content))
    assert queued.column("number").to_pylist() == [1, 3, 4]


def test_csv_cells_a_spreadsheet_would_run_are_made_text(api: Api) -> None:
    """A run's name and a param's value are what a member typed: =, +, -, @ (and tab, CR) first is a
    formula in Excel and LibreOffice; such cells are written with a leading ' and stay text; numbers
    (a negative param) stay numbers."""
    exp = api.submit({}, sweep={"grid": {"train.lr": [0.1, 0.01, 0.001]}}).json()
    ids = [x["id"] for x in sorted(exp["runs"], key=lambda x: x["index"])]
    hostile = {
        ids[0]: ('=HYPERLINK("http://evil.example","click")', '{"train.lr": -0.5, "note": "+SUM(A1)"}'),
        ids[1]: ("@cmd|' /C calc'!A0", '{"train.lr": 0.01, "note": "-2+3"}'),
        ids[2]: ('plain, with "quotes"\nand a line', '{"train.lr": 0.001, "note": "\\tTAB"}'),
    }
    with get_engine(api.settings.database_url).begin() as conn:
        for run_id, (name, params) in hostile.items():
            conn.execute(
                text("UPDATE runs SET name = :n, params = :p WHERE id = :id"),
                {"n": name, "p": params, "id": run_id},
            )
    r = _export(api, exp["id"])
    rows = _csv_rows(r.content)
    assert [row["name"] for row in rows] == [
        '\'=HYPERLINK("http://evil.example","click")',
        "'@cmd|' /C calc'!A0",
        'plain, with "quotes"\nand a line',
    ]
    assert [row["params.note"] for row in rows] == ["'+SUM(A1)", "'-2+3", "'\tTAB"]
    assert [row["params.train.lr"] for row in rows] == ["-0.5", "0.01", "0.001"]
    # no unquoted cell of the file starts a formula
    for line in csv.reader(io.StringIO(r.content.decode(), newline="")):
        assert not any(cell.startswith(("=", "+", "@")) for cell in line), line


def test_a_bad_format_is_a_422_naming_the_field(api: Api) -> None:
    exp = api.submit({}).json()
    r = _export(api, exp["id"], format="xlsx")
    assert r.status_code == 422
    assert ["query", "format"] in [e["loc"] for e in r.json()["errors"]]
    r = _export(api, exp["id"], status="done")
    assert r.status_code == 422
    assert any(e["loc"][:2] == ["query", "status"] for e in r.json()["errors"])


def test_export_needs_a_visible_experiment(api: Api) -> None:
    exp = api.submit({}).json()
    assert _export(api, 999_999).status_code == 404
    outsider = api.user("ozzie", project="elsewhere")
    assert _export(api, exp["id"], outsider).status_code == 404
    assert _export(api, exp["id"], outsider, format="parquet").status_code == 404
    viewer = api.user("vic", role="viewer")
    assert _export(api, exp["id"], viewer).status_code == 200
    anonymous = api.client.get(f"/api/v1/experiments/{exp['id']}/runs/export")
    assert anonymous.status_code == 401


@pytest.mark.heavy
def test_ten_thousand_runs_export_in_both_formats(api: Api) -> None:
    exp = api.submit({}).json()
    first = exp["runs"][0]
    now = datetime.now(UTC)
    rows = [
        {
            "experiment_id": exp["id"], "project_id": exp["project_id"], "kind": "diagnostic", "index": i,
            "spec": {}, "params": {"train.lr": i / 10_000, "tag": f"t{i % 7}"}, "created_at": now,
        }
        for i in range(1, 10_000)
    ]  # fmt: skip
    with get_engine(api.settings.database_url).begin() as conn:
        conn.execute(insert(Run), rows)
    r = _export(api, exp["id"])
    assert r.status_code == 200
    lines = _csv_rows(r.content)
    assert len(lines) == 10_000
    assert lines[0]["run_id"] == str(first["id"]) and lines[-1]["number"] == "10000"
    assert lines[-1]["params.tag"] == "t3" and lines[-1]["params.train.lr"] == "0.9999"
    t = pq.read_table(io.BytesIO(_export(api, exp["id"], format="parquet").content))
    assert t.num_rows == 10_000 and t.column("number").to_pylist()[-1] == 10_000


def test_csv_of_a_table_is_streamed_in_pieces() -> None:
    columns: list[tables.Column] = [("n", list(range(1_201))), ("x", [0.5] * 1_201)]
    pieces = list(tables.csv_chunks(columns, rows_per_chunk=500))
    assert len(pieces) == 3
    assert b"".join(pieces).decode().split("\r\n")[:2] == ["n,x", "0,0.5"]


def test_csv_cells() -> None:
    assert [tables.csv_cell(v) for v in (None, True, 3, 0.1, float("nan"), float("inf"), -2.5)] == [
        "", "true", "3", "0.1", "", "", "-2.5",
    ]  # fmt: skip
    assert tables.csv_cell({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert tables.csv_cell(["=1+1"]) == '["=1+1"]'
    assert [tables.csv_cell(s) for s in ("=1+1", "+1", "-x", "@x", "\rx", "a=b", "")] == [
        "'=1+1", "'+1", "'-x", "'@x", "'\rx", "a=b", "",
    ]  # fmt: skip


def test_posted_table_comes_back_as_parquet(api: Api) -> None:
    body = {
        "columns": [
            {"name": "series", "values": ["loss", "loss", "acc"]},
            {"name": "step", "values": [1, 2, 1]},
            {"name": "value", "values": [0.5, None, 0.75]},
            {"name": "flag", "values": [True, False, None]},
            {"name": "mixed", "values": [1, "a", None]},
        ]
    }
    r = api.client.post("/api/v1/exports/parquet", json=body, headers=api.h())
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/vnd.apache.parquet"
    t = pq.read_table(io.BytesIO(r.content))
    assert [f.type for f in t.schema] == [pa.string(), pa.int64(), pa.float64(), pa.bool_(), pa.string()]
    assert t.to_pydict() == {
        "series": ["loss", "loss", "acc"],
        "step": [1, 2, 1],
        "value": [0.5, None, 0.75],
        "flag": [True, False, None],
        "mixed": ["1", "a", None],
    }


def test_posted_table_is_checked_at_the_field(api: Api) -> None:
    def post(columns: Any, headers: dict[str, str] | None = None) -> Any:
        return api.client.post(
            "/api/v1/exports/parquet", json={"columns": columns}, headers=headers or api.h()
        )

    ragged = post([{"name": "a", "values": [1, 2]}, {"name": "b", "values": [1]}])
    assert ragged.status_code == 422 and ragged.json()["errors"][0]["loc"] == ["body", "columns"]
    repeated = post([{"name": "a", "values": [1]}, {"name": "a", "values": [2]}])
    assert repeated.status_code == 422 and "repeated" in repeated.json()["errors"][0]["msg"]
    assert post([]).status_code == 422
    nested = post([{"name": "a", "values": [{"x": 1}]}])
    assert nested.status_code == 422 and nested.json()["errors"][0]["loc"][:3] == ["body", "columns", 0]
    too_many = post([{"name": "a", "values": [0] * 1_000_001}])
    assert too_many.status_code in (413, 422)
    anonymous = api.client.post("/api/v1/exports/parquet", json={"columns": [{"name": "a", "values": [1]}]})
    assert anonymous.status_code == 401


def test_duration_excludes_the_downtime_between_attempts(api: Api) -> None:
    """The export's duration_s of a run released and resumed an hour later is the seconds its
    attempts worked (the run page's run_seconds), not its first start to its end."""
    exp, run, _ = _released_then_resumed(api)
    fin = {"attempt": 2, "status": "succeeded"}
    assert api.client.post(f"/api/v1/runs/{run}/finish", json=fin, headers=api.worker).status_code == 200
    page = api.client.get(f"/api/v1/runs/{run}", headers=api.h()).json()
    rows = _csv_rows(_export(api, exp["id"], format="csv").content)
    resumed = rows[0]
    # attempt 2 after a release: its first counted attempt, the released one apart
    assert (resumed["status"], resumed["attempt"], resumed["released"]) == ("succeeded", "1", "1")
    span = datetime.fromisoformat(resumed["finished_at"]) - datetime.fromisoformat(resumed["started_at"])
    assert span.total_seconds() > 3600  # the first start to the end counts the hour of downtime
    assert 25.0 <= float(resumed["duration_s"]) < 120.0
    assert float(resumed["duration_s"]) == pytest.approx(page["run_seconds"], abs=0.01)
    assert rows[1]["duration_s"] == ""  # never ran
    table = pq.read_table(io.BytesIO(_export(api, exp["id"], format="parquet").content)).to_pydict()
    assert table["duration_s"][0] == pytest.approx(float(resumed["duration_s"]))
