"""The metric append path's array literals (backend/metrics/pgarray.py) read back by Postgres as the values
they were built from: keys a member chose (quotes, backslashes, braces, commas, the word NULL, spaces,
non-ASCII) stay one element each, floats keep every bit, NULL stays NULL."""

from __future__ import annotations

import math

import pytest
from sqlalchemy import text

from backend.db import get_engine
from backend.metrics import pgarray

HOSTILE_KEYS = [
    "loss",
    'a"b',
    "back\\slash",
    'end\\"',
    "{braces}",
    "com,ma",
    "NULL",
    "null",
    " padded ",
    "",
    "tab\there",
    "λ/accuracy",
    "x','y",
    '"},{"',
]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_the_literals_read_back_as_their_values(database_url: str) -> None:
    floats = [0.1, -0.0, 1e-300, 1.7976931348623157e308, 5e-324, None, math.inf, -math.inf, 1 / 3]
    ints = [0, -1, 2**62, -(2**63), None]
    with get_engine(database_url).connect() as conn:
        keys = conn.execute(
            text("SELECT CAST(:a AS varchar[])"),
            {"a": pgarray.texts_by_index(HOSTILE_KEYS, range(len(HOSTILE_KEYS)))},
        ).scalar()
        assert keys == HOSTILE_KEYS
        picked = conn.execute(
            text("SELECT CAST(:a AS varchar[])"), {"a": pgarray.texts_by_index(HOSTILE_KEYS, [3, 0, 3, 13])}
        ).scalar()
        assert picked == [HOSTILE_KEYS[3], HOSTILE_KEYS[0], HOSTILE_KEYS[3], HOSTILE_KEYS[13]]
        back = conn.execute(text("SELECT CAST(:a AS float8[])"), {"a": pgarray.floats(floats)}).scalar()
        assert back == floats and math.copysign(1.0, back[1]) == -1.0
        nan = conn.execute(text("SELECT CAST(:a AS float8[])"), {"a": pgarray.floats([math.nan])}).scalar()
        assert math.isnan(nan[0])
        assert conn.execute(text("SELECT CAST(:a AS int8[])"), {"a": pgarray.ints(ints)}).scalar() == ints
        plain = [3, -7, 2**40]
        assert (
            conn.execute(text("SELECT CAST(:a AS int8[])"), {"a": pgarray.plain_ints(plain)}).scalar()
            == plain
        )
        assert conn.execute(text("SELECT CAST(:a AS int8[])"), {"a": pgarray.plain_ints([])}).scalar() == []


def test_a_key_cannot_split_or_end_its_array() -> None:
    literal = pgarray.texts_by_index(['"},{"x'], [0])
    assert literal == '{"\\"},{\\"x"}'
