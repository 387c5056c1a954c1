"""The compact body of ``POST /runs/{id}/metrics`` (``application/x-reasonlab-points``, backend/metrics/
columns.py, written by reasonlab_sdk/points.py): the same batch stores the same points, latest rows and
roll-ups as its JSON twin (gaps apart from NaN, NaN and infinities stored as such, a repeated step, any
order, steps below the stored latest ones, given times and the server's clock); other media types are a 415; a malformed body is a 422 naming its field, a batch over the
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
from backend.metrics.rollups import ROLLUP_WIDTHS
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
    # NaN and the infinities as JSON's strings for them (the API's documented form, what the SDK sends)
    body = json.dumps({"points": points}, allow_nan=False).encode()
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
            (
                "metric",
                "SELECT key, step, value, nonfinite, time FROM metric WHERE run_id = :r ORDER BY key, step",
            ),
            (
                "latest",
                "SELECT key, step, value, nonfinite, vmin, vmax FROM metric_latest WHERE run_id = :r"
                " ORDER BY key",
            ),
            (
                "rollup",
                "SELECT key, width, block, s0, s1, vmin, vmax, n, vlast, tlast, nf, klast FROM metric_rollup"
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


LABELS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}
KINDS = {"nan": 1, "inf": 2, "-inf": 3}  # common/nonfinite.py's codes, written out here


def _label(v: float | None) -> float | str | None:
    return v if v is None or math.isfinite(v) else LABELS[str(v)]


def _iso(points: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """As JSON: times as ISO 8601 text, NaN and infinities as their strings."""
    return [{**p, "value": _label(p["value"]), "time": p["time"].isoformat()} for p in points]


def _stored_as(v: float | None) -> tuple[float | None, int | None]:
    """``(value, nonfinite)`` columns of a logged value, computed here: a gap is NULL in both."""
    if v is None:
        return None, None
    return (v, None) if math.isfinite(v) else (None, KINDS[str(v)])


def _expected_rollups(
    expected: dict[tuple[str, int], tuple[float | None, datetime]],
) -> dict[tuple[str, int, int], tuple[Any, ...]]:
    """Per (key, width, block): n, the finite min and max, the count of NaN and infinite points, the last
    point's finite value and kind, from the logged points directly."""
    out: dict[tuple[str, int, int], tuple[Any, ...]] = {}
    for width in ROLLUP_WIDTHS:
        blocks: dict[tuple[str, int], list[tuple[int, float | None]]] = {}
        for (key, step), (v, _) in expected.items():
            blocks.setdefault((key, step // width), []).append((step, v))
        for (key, block), pts in blocks.items():
            finite = [v for _, v in pts if v is not None and math.isfinite(v)]
            odd = [v for _, v in pts if v is not None and not math.isfinite(v)]
            last = max(pts)[1]
            out[(key, width, block)] = (
                len(pts),
                min(finite) if finite else None,
                max(finite) if finite else None,
                len(odd),
                *_stored_as(last),
            )
    return out


def test_a_compact_batch_stores_what_its_json_twin_stores(api: Api) -> None:
    """The same batches (finite values, NaN, +inf, -inf, gaps, a step sent twice, shuffled, steps below a
    series' stored latest step, overwrites) posted to one run as JSON and to another as the compact body:
    the same points, latest rows and roll-ups, equal to what is computed here from the logged values."""
    engine = get_engine(api.settings.database_url)
    as_json, as_compact = _run(api), _run(api)
    rng = random.Random(7)
    first = 0
    # what must be stored, computed here: the last point sent of each (key, step), as logged
    expected: dict[tuple[str, int], tuple[float | None, datetime]] = {}

    def note(points: list[dict[str, Any]]) -> None:
        for p in points:
            expected[(p["key"], p["step"])] = (p["value"], p["time"])

    def post(points: list[dict[str, Any]]) -> None:
        note(points)
        assert _post_json(api, as_json, _iso(points)).json() == {"accepted": len(points)}
        # the SDK's encoder takes a value as a float or as JSON's string for it (tracking.metric_value's)
        body = compact.encode(points)
        assert compact.encode([{**p, "value": _label(p["value"])} for p in points]) == body
        r = _post_compact(api, as_compact, body)
        assert r.status_code == 200, r.text
        assert r.json() == {"accepted": len(points)}

    # appends into partly filled blocks; the batch of 400 steps (1,600 points) goes by COPY, the others
    # by arrays in one pipeline (backend/metrics/points.py)
    for n_steps in (30, 1, 400, 17):
        post(_batch(rng, first, n_steps))
        first += n_steps + rng.choice([0, 5, 1200])
    # new steps far ahead, then new steps below them (MLflow's client's out-of-order batches: appended
    # under the savepoint, not merged), by arrays and by COPY
    post(_batch(rng, first + 5000, 12))
    post(_batch(rng, first + 20, 9))
    post(_batch(rng, first + 1000, 300))
    # a batch overwriting stored steps (a resumed run): the merge path
    post(_batch(rng, 10, 40))
    # a batch of only the odd values, overwriting some stored points and adding new ones
    odd = [math.nan, math.inf, -math.inf, None]
    post([{"key": "loss", "step": s, "value": odd[s % 4], "time": T0} for s in range(25, 45)])
    stored = _rows(engine, as_compact)
    assert stored == _rows(engine, as_json)
    metric = {(k, s): (v, c, t) for k, s, v, c, t in stored["metric"]}
    assert metric == {point: (*_stored_as(v), t) for point, (v, t) in expected.items()}
    assert stored["metric"][0][0] == "acc"  # keys in order, ...
    assert {row[0] for row in stored["metric"]} == {"loss", "acc", "ünïcode/κλειδί", "lr"}
    # ... the repeated step's later value, NaN, +inf and -inf as their kinds, gaps as NULL in both
    kinds = {(v is None, c) for _, _, v, c, _ in stored["metric"]}
    assert kinds == {(False, None), (True, 1), (True, 2), (True, 3), (True, None)}
    # each series' latest point and its finite extremes
    for key, step, value, code, vmin, vmax in stored["latest"]:
        top = max(s for k, s in expected if k == key)
        assert (step, value, code) == (top, *_stored_as(expected[(key, top)][0]))
        finite = [v for (k, _), (v, _) in expected.items() if k == key and v is not None and math.isfinite(v)]
        assert (vmin, vmax) == (min(finite), max(finite))
    # the roll-ups: counts, finite min and max, non-finite counts and the last point's kind
    rollups = {(r[0], r[1], r[2]): (r[7], r[5], r[6], r[10], r[8], r[11]) for r in stored["rollup"]}
    assert rollups == _expected_rollups(expected)
    _assert_rollups_match(engine, as_compact)


def test_points_without_a_time_take_the_servers_clock(api: Api) -> None:
    run_id = _run(api)
    before = datetime.now(UTC)
    body = compact.encode([{"key": "loss", "step": s, "value": s / 2} for s in range(5)])
    assert _post_compact(api, run_id, body).json() == {"accepted": 5}
    rows = _rows(get_engine(api.settings.database_url), run_id)["metric"]
    assert [(k, s, v, c) for k, s, v, c, _ in rows] == [("loss", s, s / 2, None) for s in range(5)]
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
    gap: list[int] | None = None,
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
        ((1 if time is not None else 0) | (2 if gap is not None else 0)) if flags is None else flags,
    )
    out = head + struct.pack(f"<{len(keys)}H", *(len(k) for k in keys)) + b"".join(keys)
    out += struct.pack(f"<{len(key)}I", *key) + struct.pack(f"<{len(step)}q", *step)
    out += struct.pack(f"<{len(value)}d", *value)
    if time is not None:
        out += struct.pack(f"<{len(time)}q", *time)
    if gap is not None:
        out += bytes(gap)
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
    ("gap byte not 0 or 1", _body([b"loss"], [0, 0], [1, 2], [1.0, 0.0], None, [0, 2]), "body.points.1.gap"),
    ("gap flag, no gap column", _body([b"loss"], [0], [1], [1.0], flags=2), "body"),
    ("gap column, no flag", _body([b"loss"], [0], [1], [1.0], None, [1], flags=0), "body"),
]


def test_a_hand_written_gap_column_tells_a_gap_from_a_nan(api: Api) -> None:
    """Written field by field, not by the SDK: a gap byte 1 stores a gap whatever its value, a NaN with a
    gap byte 0 (or no gap column) a NaN, with the time column before the gap column."""
    engine = get_engine(api.settings.database_url)
    run_id = _run(api)
    t = int((T0 - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()) * 1_000_000
    body = _body(
        [b"loss"], [0] * 4, [1, 2, 3, 4], [math.nan, math.nan, 5.0, -math.inf], [t] * 4, [1, 0, 1, 0]
    )
    assert _post_compact(api, run_id, body).json() == {"accepted": 4}
    assert _post_compact(api, run_id, _body([b"loss"], [0], [5], [math.nan])).json() == {"accepted": 1}
    rows = [(s, v, c) for _, s, v, c, _ in _rows(engine, run_id)["metric"]]
    assert rows == [(1, None, None), (2, None, 1), (3, None, None), (4, None, 3), (5, None, 1)]


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
