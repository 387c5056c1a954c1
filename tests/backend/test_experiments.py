from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from backend.db import get_engine, session_factory
from backend.models import Experiment, Run
from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL is the subject: SQLite and Postgres (tests/backend/conftest.py)


def _counts(api: Api) -> tuple[int, int]:
    with session_factory(get_engine(api.settings.database_url))() as s:
        return s.scalar(select(func.count()).select_from(Experiment)) or 0, s.scalar(
            select(func.count()).select_from(Run)
        ) or 0


def test_empty_spec_is_valid_and_gets_every_default(api: Api) -> None:
    r = api.submit({})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["run_count"] == 1 and body["status_counts"] == {"queued": 1}
    run = body["runs"][0]
    assert run["status"] == "queued" and run["attempt"] == 1 and run["queue"] == "cpu"
    assert run["spec"]["seed"] == 0 and run["spec"]["train"]["steps"] == 200


def test_grid_random_and_seeds_combine(api: Api) -> None:
    sweep = {
        "grid": {"train.lr": [0.1, 0.01]},
        "random": {"n": 2, "seed": 3, "params": {"data.noise": {"dist": "uniform", "low": 0.0, "high": 0.2}}},
        "seeds": [1, 2],
    }
    r = api.submit({"train": {"steps": 5}}, sweep)
    assert r.status_code == 201, r.text
    runs = r.json()["runs"]
    assert len(runs) == 2 * 2 * 2
    assert {(x["params"]["train.lr"], x["params"]["seed"]) for x in runs} == {
        (a, b) for a in (0.1, 0.01) for b in (1, 2)
    }
    for x in runs:
        assert x["spec"]["train"]["lr"] == x["params"]["train.lr"]
        assert x["spec"]["seed"] == x["params"]["seed"]
        assert 0.0 <= x["spec"]["data"]["noise"] <= 0.2 and x["spec"]["train"]["steps"] == 5
    # the expansion is reproducible: the preview of the same body gives the same params
    p = api.client.post(
        "/api/v1/experiments/preview",
        json={"name": "x", "kind": "diagnostic", "spec": {"train": {"steps": 5}}, "sweep": sweep},
        headers=api.h(),
    )
    assert p.status_code == 200 and p.json()["count"] == 8
    assert [q["params"] for q in p.json()["runs"]] == [x["params"] for x in runs]


def test_gpu_resources_route_to_the_gpu_queue(api: Api) -> None:
    r = api.submit({"resources": {"gpus": 1}})
    assert r.json()["runs"][0]["queue"] == "gpu"


def test_unknown_kind_is_422_naming_kind(api: Api) -> None:
    r = api.submit({}, kind="nope")
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "kind"]
    assert _counts(api) == (0, 0)


def test_wrong_type_and_out_of_range_name_the_field(api: Api) -> None:
    r = api.submit({"train": {"lr": "fast"}})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "spec", "train", "lr"]
    r = api.submit({"train": {"steps": -3}})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "spec", "train", "steps"]
    r = api.submit({"train": {"stepz": 3}})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "spec", "train", "stepz"]
    assert _counts(api) == (0, 0)


def test_malformed_body_is_422(api: Api) -> None:
    r = api.client.post(
        "/api/v1/experiments", content=b"{not json", headers={**api.h(), "content-type": "application/json"}
    )
    assert r.status_code == 422
    r = api.client.post("/api/v1/experiments", json={"kind": "diagnostic", "spec": []}, headers=api.h())
    assert r.status_code == 422
    locs = [e["loc"] for e in r.json()["errors"]]
    assert ["body", "name"] in locs and ["body", "spec"] in locs


def test_one_bad_sweep_combination_rejects_everything(api: Api) -> None:
    r = api.submit({}, {"grid": {"train.lr": [0.1, -1.0, 0.01], "seed": [1, 2]}})
    assert r.status_code == 422, r.text
    errs = r.json()["errors"]
    assert errs[0]["loc"] == ["body", "sweep", 2, "train", "lr"]
    assert "train.lr" in errs[0]["msg"] and "-1.0" in errs[0]["msg"]
    assert _counts(api) == (0, 0)


def test_cross_field_error_names_the_later_field(api: Api) -> None:
    r = api.submit({"data": {"n_samples": 16}, "train": {"batch_size": 64}})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "spec", "train"]


def test_bad_sweep_definition(api: Api) -> None:
    r = api.submit(
        {}, {"random": {"n": 2, "params": {"train.lr": {"dist": "loguniform", "low": 0, "high": 1}}}}
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][:3] == ["body", "sweep", "random"]
    r = api.submit({}, {"grid": {"train..lr": [1]}})
    assert r.status_code == 422
    r = api.submit({}, {"grid": {"train.lr.x": [1]}})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "sweep", 0, "train", "lr"]
    r = api.submit({"train": {"lr": 0.1}}, {"grid": {"train.lr.x": [1]}})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "sweep", 0]
    assert "not an object" in r.json()["errors"][0]["msg"]
    assert _counts(api) == (0, 0)


def test_list_and_get_experiments_with_cursor(api: Api) -> None:
    ids = [api.submit({}, name=f"e{i}").json()["id"] for i in range(5)]
    page1 = api.client.get("/api/v1/experiments?limit=2", headers=api.h()).json()
    assert [e["id"] for e in page1["items"]] == ids[::-1][:2]
    page2 = api.client.get(
        f"/api/v1/experiments?limit=2&cursor={page1['next_cursor']}", headers=api.h()
    ).json()
    assert [e["id"] for e in page2["items"]] == ids[::-1][2:4]
    e = api.client.get(f"/api/v1/experiments/{ids[0]}", headers=api.h()).json()
    assert e["name"] == "e0" and len(e["runs"]) == 1 and e["author"] == "admin"


def test_kinds_list_schemas_and_defaults(api: Api) -> None:
    kinds = {k["name"]: k for k in api.client.get("/api/v1/kinds", headers=api.h()).json()}
    assert "diagnostic" in kinds
    assert kinds["diagnostic"]["defaults"]["train"]["steps"] == 200
    assert "properties" in kinds["diagnostic"]["spec_schema"]


def test_the_kinds_document_is_made_once_and_follows_a_reloaded_registry(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from backend.kinds import service
    from tests.kind_plugin import write_plugin
    from worker.specs import registry
    from worker.specs.registry import PLUGINS_ENV

    first = api.client.get("/api/v1/kinds", headers=api.h()).content
    assert service.public_json() is service.public_json()  # written once, not per request
    assert json.loads(first) == [k.model_dump(mode="json") for k in service.public()]
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGINS_ENV, write_plugin(tmp_path))
    try:
        registry.reload()  # a kind added in this process: the document is written again
        names = [k["name"] for k in api.client.get("/api/v1/kinds", headers=api.h()).json()]
        assert "throwaway" in names
    finally:
        monkeypatch.delenv(PLUGINS_ENV)
        for name in [m for m in sys.modules if m.startswith("throwaway_kind")]:
            del sys.modules[name]
        registry.reload()
    assert api.client.get("/api/v1/kinds", headers=api.h()).content == first


def test_kinds_name_their_result_kinds(api: Api) -> None:
    kinds = {k["name"]: k for k in api.client.get("/api/v1/kinds", headers=api.h()).json()}
    assert kinds["diagnostic"]["result_kinds"] == ["diagnostic"]
    assert kinds["smoe_sraven"]["result_kinds"] == ["sraven_cell"]


def test_an_empty_integer_range_is_422_not_500(api: Api) -> None:
    sweep = {"random": {"n": 2, "params": {"model.layers": {"dist": "int_uniform", "low": 0.5, "high": 0.6}}}}
    r = api.submit({}, sweep)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][:3] == ["body", "sweep", "random"]


def test_nul_bytes_are_refused_with_a_clear_error(api: Api) -> None:
    r = api.submit({}, name="bad\x00name")
    assert r.status_code in (201, 422)  # SQLite stores it; Postgres refuses it, as a 422 rather than a 500
    assert r.status_code != 500


def _key_orders(value: object, path: str = "") -> dict[str, list[str]]:
    """Every object's keys in order, by its path in ``value``."""
    found: dict[str, list[str]] = {}
    if isinstance(value, dict):
        found[path] = list(value)
        for k, v in value.items():
            found.update(_key_orders(v, f"{path}.{k}"))
    return found


# keys in neither alphabetical nor jsonb's order (shorter first, then bytewise), at every level
WRITTEN = {
    "train": {"steps": 5, "lr": 0.05, "batch_size": 16},
    "seed": 3,
    "data": {"n_samples": 64, "noise": 0.1, "n_features": 4},
    "model": {"layers": 1, "hidden": 8},
}


def _written_first(got: object, written: object, path: str = "spec") -> None:
    """``got`` lists ``written``'s keys first and in its order, at every level (defaults after them)."""
    if isinstance(written, dict):
        assert isinstance(got, dict), path
        assert list(got)[: len(written)] == list(written), path
        for k, v in written.items():
            _written_first(got[k], v, f"{path}.{k}")


def test_a_spec_reads_back_in_the_order_written(api: Api) -> None:
    """On Postgres the spec column is jsonb (migration 0020), which reorders keys; the API answers from the
    text kept beside it (migration 0025), so both databases answer the order written."""
    for order in (sorted, lambda keys: sorted(keys, key=lambda k: (len(k), k))):
        assert any(list(o) != order(o) for o in _key_orders(WRITTEN).values())
    one = api.submit(WRITTEN, name="one").json()
    swept = api.submit(WRITTEN, {"grid": {"train.lr": [0.1, 0.2]}}, name="swept").json()
    h = api.h()
    for exp in (one, swept):
        e = api.client.get(f"/api/v1/experiments/{exp['id']}", headers=h).json()
        listed = [
            x for x in api.client.get("/api/v1/experiments", headers=h).json()["items"] if x["id"] == e["id"]
        ]
        assert _key_orders(listed[0]["spec"]) == _key_orders(e["spec"])
        for run in e["runs"]:
            got = api.client.get(f"/api/v1/runs/{run['id']}", headers=h).json()["spec"]
            _written_first(got, WRITTEN)
            assert _key_orders(run["spec"]) == _key_orders(got)
    # a sweep's experiment spec is the body as written, tagged with its kind: exactly its keys, in order
    e = api.client.get(f"/api/v1/experiments/{swept['id']}", headers=h).json()
    assert _key_orders(e["spec"]) == _key_orders({**WRITTEN, "kind": "diagnostic"})
    _written_first(api.client.get(f"/api/v1/experiments/{one['id']}", headers=h).json()["spec"], WRITTEN)
    # the runs list answers the same order
    page = api.client.get(f"/api/v1/runs?experiment_id={swept['id']}", headers=h).json()["items"]
    assert len(page) == 2
    for run in page:
        _written_first(run["spec"], WRITTEN)
    # so do the seed groups' keys (every spec field but seed)
    groups = api.client.get(
        "/api/v1/runs",
        params={"project": "default", "group_by": "default", "q": f"experiment = {swept['id']}"},
        headers=h,
    )
    assert groups.status_code == 200, groups.text
    assert len(groups.json()["groups"]) == 2
    for g in groups.json()["groups"]:
        _written_first(g["key"], {k: v for k, v in WRITTEN.items() if k != "seed"})
    # queries read the jsonb column: params.<path> still filters (and on Postgres that column has lost the order)
    q = api.client.get(
        "/api/v1/runs", params={"q": "params.train.lr = 0.2 and params.data.n_samples = 64"}, headers=h
    )
    assert q.status_code == 200, q.text
    assert [r["id"] for r in q.json()["items"]] == [
        r["id"] for r in swept["runs"] if r["spec"]["train"]["lr"] == 0.2
    ]
    with session_factory(get_engine(api.settings.database_url))() as s:
        stored = s.execute(select(Run.spec).where(Run.id == one["runs"][0]["id"])).scalar_one()
    if api.settings.database_url.startswith("postgresql"):
        assert list(stored) != list(WRITTEN)  # jsonb's own order: what the API no longer answers
    else:
        _written_first(stored, WRITTEN)


def test_a_topk_eval_perplexity_over_the_example_row_cap_is_422_naming_max_tokens(api: Api) -> None:
    """ceil(max_tokens / window) perplexity windows, a row each in the run's ``windows`` table: at the
    platform's cap (1,000,000 rows a table) the spec passes, one window over it is a 422 at the field."""
    body = {
        "name": "ppl",
        "kind": "topk_eval",
        "spec": {"target": {"type": "hf", "window": 2, "max_tokens": 2_000_000}},
    }
    at = api.client.post("/api/v1/experiments/preview", json=body, headers=api.h())
    assert at.status_code == 200, at.text
    body["spec"]["target"]["max_tokens"] = 2_000_001  # type: ignore[index]
    over = api.client.post("/api/v1/experiments/preview", json=body, headers=api.h())
    assert over.status_code == 422
    (error,) = over.json()["errors"]
    assert error["loc"] == ["body", "spec", "target", "hf", "max_tokens"]
    assert "1,000,001 perplexity windows" in error["msg"] and "at most 1,000,000" in error["msg"]


def test_a_spec_changed_outside_the_api_reads_back_as_stored(api: Api) -> None:
    """The jsonb value is what a spec says: a statement that sets ``spec`` without the ORM's events (a bulk
    UPDATE, SQL by hand) leaves the kept text stale, and the API then answers the stored value, not the text
    (the worker runs what the API answers: a stale text would run a spec other than the one stored)."""
    from sqlalchemy import update

    exp = api.submit(WRITTEN, name="changed").json()
    rid = exp["runs"][0]["id"]
    changed = {"train": {"steps": 7, "lr": 0.5}, "seed": 3}
    with session_factory(get_engine(api.settings.database_url))() as s:
        s.execute(update(Run).where(Run.id == rid).values(spec=changed))
        s.commit()
    got = api.client.get(f"/api/v1/runs/{rid}", headers=api.h()).json()["spec"]
    assert got == changed
    # an unchanged run of the same experiment still reads back in the order written
    other = api.submit(WRITTEN, name="unchanged").json()["runs"][0]["id"]
    _written_first(api.client.get(f"/api/v1/runs/{other}", headers=api.h()).json()["spec"], WRITTEN)
