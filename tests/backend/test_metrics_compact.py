"""The compact body of ``POST /runs/{id}/metrics`` (``application/x-reasonlab-points``, backend/metrics/
columns.py, written by reasonlab_sdk/points.py): the same batch stores the same points, latest rows and
roll-ups as its JSON twin (gaps, NaN and infinities, a repeated step, any order, given times and the
server's clock); other media types are a 415; a malformed body is a 422 naming its field, a batch over the
limit a 413; hostile bodies (random bytes, a valid body with bytes flipped or cut) never crash the API;
the SDK falls back to JSON for an API that answers the compact body 415."""

from __future__ import annotations

import json
import math
import random
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text

from backend.db import get_engine
from reasonlab_sdk import points as compact
from reasonlab_sdk.client import ReasonLabClient
from tests.backend.conftest import Api
from tests.backend.test_metric_rollups import _assert_rollups_match

pytestmark = pytest.mark.dialect_matrix  # the writes are SQL: SQLite and Postgres

CONTENT_TYPE = "application/x-reasonlab-points"
T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def _run(api: Api) -> int:
    run_id: int = api.submit({}).json()["runs"][0]["id"]
    return run_id


def _post_compact(api: Api, run_id: int, body: bytes, content_type: str = CONTENT_TYPE) -> httpx.Response:
    headers = {**api.worker, "Content-Type": content_type}
    return api.client.post(f"/api/v1/runs/{run_id}/metrics", content=body, headers=headers)


def _post_json(api: Api, run_id: int, points: list[dict[str, Any]]) -> httpx.Response:
    # Python's json writes NaN and Infinity, which the API's JSON reader takes (as FastAPI's did)
    body = json.dumps({"points": points}).encode()
    headers = {**api.worker, "Content-Type": "application/json"}
    return api.client.post(f"/api/v1/runs/{run_id}/metrics", content=body, headers=headers)


def _rows(engine: Engine, run_id: int) -> dict[str, list[tuple[Any, ...]]]:
    def norm(value: Any) -> Any:  # a time as an aware datetime (SQLite's raw rows: text)
        if isinstance(value, str) and value[:4].isdigit() and value[4:5] == "-":
            value = datetime.fromisoformat(value)
        return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value

    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for table, sql in (
            ("metric", "SELECT key, step, value, time FROM metric WHERE run_id = :r ORDER BY key, step"),
            (
                "latest",
                "SELECT key, step, value, vmin, vmax FROM metric_latest WHERE run_id = :r ORDER BY key",
            ),
            (
                "rollup",
                "SELECT key, width, block, s0, s1, vmin, vmax, n, vlast, tlast FROM metric_rollup"
                " WHERE run_id = :r ORDER BY key, width, block",
            ),
        ):
            out[table] = [tuple(norm(v) for v in row) for row in conn.execute(text(sql), {"r": run_id})]
    return out


def _batch(rng: random.Random, first_step: int, n_steps: int) -> list[dict[str, Any]]:
    """A training loop's points, shuffled, with gaps, NaN and infinities, a step sent twice (the later
    wins) and a time per step."""
    keys = ["loss", "acc", "ünïcode/κλειδί", "lr"]
    points = []
    for step in range(first_step, first_step + n_steps):
        for key in keys:
            value = rng.choice([rng.gauss(0, 1), rng.gauss(0, 1), None, math.nan, math.inf, -math.inf, 1e300])
            points.append({"key": key, "step": step, "value": value, "time": T0 + timedelta(seconds=step)})
    rng.shuffle(points)
    points.append({"key": "loss", "step": first_step + 3, "value": 42.0, "time": T0})  # sent again, last
    return points


def _iso(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "time": p["time"].isoformat()} for p in points]


def test_a_compact_batch_stores_what_its_json_twin_stores(api: Api) -> None:
    engine = get_engine(api.settings.database_url)
    as_json, as_compact = _run(api), _run(api)
    rng = random.Random(7)
    first = 0
    # what must be stored, computed here: the last point sent of each (key, step), a non-finite value a gap
    expected: dict[tuple[str, int], tuple[float | None, datetime]] = {}

    def note(points: list[dict[str, Any]]) -> None:
        for p in points:
            v = p["value"]
            expected[(p["key"], p["step"])] = (v if v is not None and math.isfinite(v) else None, p["time"])

    # appends into partly filled blocks; the batch of 400 steps (1,600 points) goes by COPY, the others
    # by arrays in one pipeline (backend/metrics/points.py)
    for n_steps in (30, 1, 400, 17):
        points = _batch(rng, first, n_steps)
        note(points)
        first += n_steps + rng.choice([0, 5, 1200])
        assert _post_json(api, as_json, _iso(points)).json() == {"accepted": len(points)}
        r = _post_compact(api, as_compact, compact.encode(points))
        assert r.status_code == 200, r.text
        assert r.json() == {"accepted": len(points)}
    # a batch overwriting stored steps (a resumed run): the merge path
    again = _batch(rng, 10, 40)
    note(again)
    _post_json(api, as_json, _iso(again))
    assert _post_compact(api, as_compact, compact.encode(again)).status_code == 200
    stored = _rows(engine, as_compact)
    assert stored == _rows(engine, as_json)
    assert {(k, s): (v, t) for k, s, v, t in stored["metric"]} == expected
    assert stored["metric"][0][0] == "acc"  # keys in order, ...
    assert {row[0] for row in stored["metric"]} == {"loss", "acc", "ünïcode/κλειδί", "lr"}
    # ... the repeated step's later value, gaps for None, NaN and the infinities (as JSON's are stored)
    loss = {row[1]: row[2] for row in stored["metric"] if row[0] == "loss"}
    assert loss[3] == 42.0
    values = [row[2] for row in stored["metric"]]
    assert None in values and all(v is None or math.isfinite(v) for v in values)
    _assert_rollups_match(engine, as_compact)


def test_points_without_a_time_take_the_servers_clock(api: Api) -> None:
    run_id = _run(api)
    before = datetime.now(UTC)
    body = compact.encode([{"key": "loss", "step": s, "value": s / 2} for s in range(5)])
    assert _post_compact(api, run_id, body).json() == {"accepted": 5}
    rows = _rows(get_engine(api.settings.database_url), run_id)["metric"]
    assert [(k, s, v) for k, s, v, _ in rows] == [("loss", s, s / 2) for s in range(5)]
    assert all(
        before - timedelta(seconds=1) <= t <= datetime.now(UTC) + timedelta(seconds=1) for *_, t in rows
    )


def test_the_compact_body_carries_the_attempt(api: Api) -> None:
    run_id = _run(api)
    api.client.post(f"/api/v1/runs/{run_id}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker)
    points = [{"key": "loss", "step": 1, "value": 1.0}]
    ok = _post_compact(api, run_id, compact.encode(points, attempt=1))
    assert ok.status_code == 200, ok.text
    stale = _post_compact(api, run_id, compact.encode(points, attempt=2))
    assert stale.status_code == 409 and stale.json()["code"] == "conflict"


def test_other_media_types_are_415_and_json_is_still_taken(api: Api) -> None:
    run_id = _run(api)
    body = compact.encode([{"key": "loss", "step": 1, "value": 1.0}])
    for media_type in ("text/plain", "application/octet-stream", "application/x-www-form-urlencoded"):
        r = _post_compact(api, run_id, body, media_type)
        assert r.status_code == 415, (media_type, r.text)
        assert r.json()["code"] == "unsupported_media_type"
        assert CONTENT_TYPE in r.json()["detail"]
    # the media type's case and parameters do not matter; JSON with a charset, or without a Content-Type
    assert _post_compact(api, run_id, body, "Application/X-ReasonLab-Points; v=1").status_code == 200
    text_body = json.dumps({"points": [{"key": "loss", "step": 2, "value": 2.0}]}).encode()
    assert _post_compact(api, run_id, text_body, "application/json; charset=utf-8").status_code == 200
    r = api.client.post(f"/api/v1/runs/{run_id}/metrics", content=text_body, headers=api.worker)
    assert r.status_code == 200, r.text


def _body(
    keys: list[bytes],
    key: list[int],
    step: list[int],
    value: list[float],
    time: list[int] | None = None,
    *,
    n: int | None = None,
    attempt: int = 0,
    flags: int | None = None,
    magic: bytes = b"RLP1",
) -> bytes:
    """A compact body written field by field (independently of the SDK's writer)."""
    count = len(step) if n is None else n
    head = struct.pack(
        "<4sIIII",
        magic,
        count,
        attempt,
        len(keys),
        (1 if time is not None else 0) if flags is None else flags,
    )
    out = head + struct.pack(f"<{len(keys)}H", *(len(k) for k in keys)) + b"".join(keys)
    out += struct.pack(f"<{len(key)}I", *key) + struct.pack(f"<{len(step)}q", *step)
    out += struct.pack(f"<{len(value)}d", *value)
    if time is not None:
        out += struct.pack(f"<{len(time)}q", *time)
    return out


GOOD = _body([b"loss"], [0, 0], [1, 2], [1.0, 2.0])

MALFORMED: list[tuple[str, bytes, str]] = [
    ("empty", b"", "body"),
    ("short header", b"RLP1\x00", "body"),
    ("wrong magic", GOOD.replace(b"RLP1", b"JSON", 1), "body"),
    ("cut short", GOOD[:-3], "body"),
    ("a byte too many", GOOD + b"\x00", "body"),
    ("unknown flags", _body([b"loss"], [0], [1], [1.0], flags=6), "body.flags"),
    ("attempt too large", _body([b"loss"], [0], [1], [1.0], attempt=1_000_001), "body.attempt"),
    ("key lengths past the end", struct.pack("<4sIIII", b"RLP1", 0, 0, 9, 0) + b"\x01\x00", "body.keys"),
    ("more keys than points", _body([b"a", b"b"], [0], [1], [1.0]), "body.keys"),
    ("key not UTF-8", _body([b"lo\xffss"], [0], [1], [1.0]), "body.keys.0"),
    ("encoded surrogate", _body([b"\xed\xa0\x80"], [0], [1], [1.0]), "body.keys.0"),
    ("empty key", _body([b"", b"loss"], [1, 1], [1, 2], [1.0, 2.0]), "body.keys.0"),
    ("platform key", _body([b"loss", b"_steps"], [0, 1], [1, 1], [1.0, 1.0]), "body.keys.1"),
    ("NUL in key", _body([b"lo\x00ss"], [0], [1], [1.0]), "body.keys.0"),
    ("key too long", _body([b"k" * 251], [0], [1], [1.0]), "body.keys.0"),
    ("key index out of range", _body([b"loss"], [0, 1], [1, 2], [1.0, 2.0]), "body.points.1.key"),
    ("negative step", _body([b"loss"], [0, 0], [1, -1], [1.0, 2.0]), "body.points.1.step"),
    ("step too large", _body([b"loss"], [0], [2**62 + 1], [1.0]), "body.points.0.step"),
    ("time past 9999", _body([b"loss"], [0], [1], [1.0], [2**62]), "body.points.0.time"),
]


@pytest.mark.parametrize(("case", "body", "field"), MALFORMED, ids=[c for c, _, _ in MALFORMED])
def test_a_malformed_compact_body_is_422_naming_its_field(
    api: Api, case: str, body: bytes, field: str
) -> None:
    run_id = _run(api)
    r = _post_compact(api, run_id, body)
    assert r.status_code == 422, (case, r.status_code, r.text)
    answer = r.json()
    assert answer["code"] == "invalid"
    assert ".".join(str(p) for p in answer["errors"][0]["loc"]) == field, answer
    assert answer["detail"].startswith(field + ":")
    assert _rows(get_engine(api.settings.database_url), run_id)["metric"] == []


def test_a_good_hand_written_body_is_taken_and_over_the_limit_is_413(api: Api) -> None:
    run_id = _run(api)
    assert _post_compact(api, run_id, GOOD).json() == {"accepted": 2}
    limit = api.settings.max_metric_batch
    over = _body([b"loss"], [0] * (limit + 1), list(range(limit + 1)), [0.5] * (limit + 1))
    r = _post_compact(api, run_id, over)
    assert r.status_code == 413 and r.json()["code"] == "too_large", r.text
    # the count is checked before the columns are read: a header claiming too many points is a 413 too
    r = _post_compact(api, run_id, struct.pack("<4sIIII", b"RLP1", 2**32 - 1, 0, 0, 0))
    assert r.status_code == 413, r.text


def test_hostile_compact_bodies_never_crash_the_api(api: Api) -> None:
    """Random bytes, random headers, and valid bodies with bytes flipped, cut or repeated: every answer
    is a 200 or a 4xx with the platform's error body, and what was stored stays consistent (roll-ups equal
    a recomputation from the points)."""
    engine = get_engine(api.settings.database_url)
    run_id = _run(api)
    rng = random.Random(2026)
    valid = compact.encode(_batch(rng, 0, 20))
    statuses: dict[int, int] = {}
    for i in range(150):
        kind = i % 5
        if kind == 0:
            body = rng.randbytes(rng.randint(0, 200))
        elif kind == 1:
            body = b"RLP1" + rng.randbytes(rng.randint(0, 120))
        elif kind == 2:
            body = struct.pack(
                "<4sIIII", b"RLP1", *(rng.choice([0, 1, 2, 3, 2**31, 2**32 - 1]) for _ in range(4))
            )
            body += rng.randbytes(rng.randint(0, 64))
        elif kind == 3:
            flipped = bytearray(valid)
            for _ in range(rng.randint(1, 6)):
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            body = bytes(flipped)
        else:
            cut = rng.randrange(len(valid))
            body = valid[:cut] + valid[cut:][: rng.randint(0, 40)] * rng.randint(0, 3)
        r = _post_compact(api, run_id, body)
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        assert r.status_code == 200 or 400 <= r.status_code < 500, (i, r.status_code, r.text)
        if r.status_code != 200:
            assert set(r.json()) == {"detail", "code", "errors"}, r.text
    assert statuses.get(422, 0) > 50  # most are refused, with the field named
    _assert_rollups_match(engine, run_id)
    # and the API still takes a good batch
    assert (
        _post_compact(api, run_id, compact.encode([{"key": "after", "step": 1, "value": 1.0}])).status_code
        == 200
    )


def test_the_sdk_sends_json_to_an_api_without_the_compact_body() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        media_type = request.headers.get("content-type", "")
        seen.append(media_type)
        if media_type == CONTENT_TYPE:
            return httpx.Response(415, json={"detail": "no", "code": "unsupported_media_type", "errors": []})
        points = json.loads(request.content)["points"]
        return httpx.Response(200, json={"accepted": len(points)})

    client = ReasonLabClient("http://api.test", "t", transport=httpx.MockTransport(answer))
    points = [{"key": "loss", "step": 1, "value": 1.0}]
    assert client.post_metrics(1, points, compact=True) == 1
    assert client.post_metrics(1, points, compact=True) == 1  # straight to JSON now
    assert seen == [CONTENT_TYPE, "application/json", "application/json"]
