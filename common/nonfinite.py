"""NaN and infinities as stored metric values.

Postgres' double precision holds NaN and +-Infinity, SQLite's REAL holds the infinities but reads a NaN
back as NULL, and JSON has none of them. So a point's ``value`` column holds finite numbers only (NULL
otherwise) and a small integer column (``nonfinite``) says which non-finite value the point is: the same
rows and the same SQL on both databases, and ``MIN``/``MAX`` over ``value`` are the finite extremes by
construction (a NaN neither poisons them nor, as Postgres orders it, becomes every series' maximum). A
NULL value with a NULL kind is a gap (the client sent ``null``).

In JSON the kinds are the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``: protobuf's JSON for
them (what MLflow's client sends and reads), and what ``float()`` and pydantic's float fields parse.
"""

from __future__ import annotations

import math
from typing import Literal

NAN, POS_INF, NEG_INF = 1, 2, 3
Label = Literal["NaN", "Infinity", "-Infinity"]
# a summary's value in JSON: a finite number, a non-finite one's label, None for a gap
Shown = float | Label | None
LABELS: dict[int, Label] = {NAN: "NaN", POS_INF: "Infinity", NEG_INF: "-Infinity"}
_FLOATS = {NAN: math.nan, POS_INF: math.inf, NEG_INF: -math.inf}


def kind(value: float | None) -> int | None:
    """The ``nonfinite`` column of ``value``: None for a finite number or a gap."""
    if value is None or math.isfinite(value):
        return None
    if math.isnan(value):
        return NAN
    return POS_INF if value > 0 else NEG_INF


def finite(value: float | None) -> float | None:
    """The ``value`` column of ``value``: the number if finite, else None."""
    return value if value is not None and math.isfinite(value) else None


def to_float(value: float | None, code: int | None) -> float | None:
    """A stored ``(value, nonfinite)`` as the float it was logged as (None: a gap)."""
    return _FLOATS[code] if code is not None else value


def label(code: int | None) -> Label | None:
    """A stored kind as JSON's string for it (None for a finite value or a gap)."""
    return LABELS[code] if code is not None else None


def shown(value: float | None, code: int | None) -> float | Label | None:
    """A stored ``(value, nonfinite)`` as a summary shows it in JSON: the number, the label of a non-finite
    value (``"NaN"``), None for a gap."""
    return LABELS[code] if code is not None else value


def same(a: float | None, b: float | None) -> bool:
    """``a`` and ``b`` are the same stored value (a NaN is the same as a NaN, a gap as a gap)."""
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))
