"""When two runs' rows of one example count as changed: the rule of a per-example diff.

A rule names the data fields that define a change (none: every field) and a tolerance for numbers. Two
values are the same when they are equal as JSON, except that two numbers, also inside arrays and objects,
are the same within the tolerance, by ``math.isclose``'s rule: ``|a - b| <= max(rel * max(|a|, |b|),
abs)``. A ReasonFormer's ``routing`` (router probabilities per step) differs in its last digits between
any two runs; a diff on every field with no tolerance calls every row changed. Booleans are not numbers
(``true`` is not ``1``), and a field a row lacks differs from one that holds ``null``.

The database only narrows the rows to those whose compared JSON text differs (backend/examples/repository.py,
``differing``): a superset of the changed ones, which this rule then decides on."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

# the relative tolerance when none is given: a float32 weight printed and parsed again still compares equal,
# a change in the fourth digit does not
DEFAULT_TOLERANCE = 1e-6
# a field named in a rule: what a kind names a data field, without the comma that separates the list or
# the quote that would end a JSON path's label in SQLite (`$."<field>"`)
FIELD_PATTERN = re.compile(r'^[^",\x00-\x1f\x7f]{1,64}$')
MAX_FIELDS = 32

_MISSING = object()  # a field the row lacks


@dataclass(frozen=True)
class DiffRule:
    fields: tuple[str, ...] = ()  # the fields that define a change; empty: every field
    rel: float = DEFAULT_TOLERANCE
    abs: float = 0.0


def _numbers_close(a: float, b: float, rule: DiffRule) -> bool:
    if a == b:
        return True
    try:
        return math.isclose(a, b, rel_tol=rule.rel, abs_tol=rule.abs)
    except OverflowError:  # an integer past a double's range: only equal ones are the same
        return False


def same(a: Any, b: Any, rule: DiffRule) -> bool:
    """Whether two JSON values are the same under ``rule``'s tolerance (numbers anywhere in them)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return _numbers_close(a, b, rule)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rule) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rule) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)  # strings, null; a string is never a number


def differing(a: dict[str, Any], b: dict[str, Any], rule: DiffRule) -> list[str]:
    """The fields of either row whose values are not the same (one row lacking it included), in the first
    row's order, then the fields only the second row has."""
    fields = list(a) + [f for f in b if f not in a]
    return [f for f in fields if not same(a.get(f, _MISSING), b.get(f, _MISSING), rule)]


def changed(fields_differing: list[str], rule: DiffRule) -> bool:
    """Whether the differing fields make the example changed: any of them, or any of the rule's fields."""
    if not rule.fields:
        return bool(fields_differing)
    return any(f in rule.fields for f in fields_differing)


def parse_fields(text: str | None) -> tuple[str, ...] | str:
    """The ``fields`` query parameter (comma-separated; blank items and repeats dropped), or what is wrong
    with it."""
    fields: list[str] = []
    for raw in (text or "").split(","):
        name = raw.strip()
        if not name or name in fields:
            continue
        if not FIELD_PATTERN.match(name):
            return (
                f"{name[:70]!r} is not a field name (1-64 characters, no comma, quote or control character)"
            )
        fields.append(name)
    if len(fields) > MAX_FIELDS:
        return f"at most {MAX_FIELDS} fields; {len(fields)} given"
    return tuple(fields)
