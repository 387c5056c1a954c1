"""The rule of a per-example diff (backend/examples/compare.py): numbers the same within a
tolerance wherever they sit in the JSON, everything else equal as JSON, and the fields that define a change."""

from __future__ import annotations

import pytest

from backend.examples.compare import (
    DEFAULT_TOLERANCE,
    MAX_FIELDS,
    DiffRule,
    changed,
    differing,
    parse_fields,
    same,
)

EXACT = DiffRule(rel=0.0)


def test_numbers_are_the_same_within_the_relative_or_absolute_tolerance() -> None:
    assert same(0.25, 0.25 * (1 + DEFAULT_TOLERANCE / 2), DiffRule())
    assert not same(0.25, 0.25 * (1 + DEFAULT_TOLERANCE * 2), DiffRule())
    assert not same(0.25, 0.25000001, EXACT) and same(0.25, 0.25, EXACT)
    assert same(1000.0, 1000.5, DiffRule(rel=1e-3)) and not same(1000.0, 1002.0, DiffRule(rel=1e-3))
    assert same(0.0, 1e-12, DiffRule(rel=0.0, abs=1e-9))  # near zero only an absolute tolerance helps
    assert not same(0.0, 1e-12, DiffRule(rel=0.5))
    assert same(1, 1.0, EXACT) and same(3, 3, EXACT)
    assert same(10**400, 10**400, EXACT) and not same(10**400, 10**400 + 1, DiffRule(rel=0.5))


def test_numbers_nested_in_arrays_and_objects_take_the_tolerance() -> None:
    routing = [{"step": 1, "skills": ["sort"], "probs": {"sort": 0.6, "reverse": 0.4}, "stop_gate": 0.1}]
    nudged = [
        {"step": 1, "skills": ["sort"], "probs": {"sort": 0.6000001, "reverse": 0.3999999}, "stop_gate": 0.1}
    ]
    assert same(routing, nudged, DiffRule()) and not same(routing, nudged, EXACT)
    assert not same(routing, [*routing, routing[0]], DiffRule(rel=1.0))  # another length
    assert not same({"a": 1}, {"a": 1, "b": 1}, DiffRule(rel=1.0))  # other keys
    assert not same([["sort"]], [["reverse"]], DiffRule(rel=1.0))  # strings are compared exactly


def test_booleans_strings_and_null_are_never_numbers() -> None:
    loose = DiffRule(rel=1.0, abs=10.0)
    assert not same(True, 1, loose) and not same(0, False, loose) and same(True, True, loose)
    assert not same("1", 1, loose) and not same(None, 0, loose) and same(None, None, loose)
    assert not same({"x": True}, {"x": 1.0}, loose)


def test_differing_lists_fields_that_differ_including_one_a_row_lacks() -> None:
    a = {"prediction": "a", "correct": True, "routing": [0.5, 0.5]}
    b = {"prediction": "b", "correct": True, "routing": [0.5000001, 0.4999999], "note": None}
    assert differing(a, b, DiffRule()) == ["prediction", "note"]
    assert differing(a, b, EXACT) == ["prediction", "routing", "note"]
    assert differing({"x": None}, {}, DiffRule()) == ["x"]  # null is not a missing field


def test_changed_counts_only_the_rules_fields_when_it_names_any() -> None:
    assert changed(["routing"], DiffRule()) and not changed([], DiffRule())
    rule = DiffRule(fields=("prediction", "correct"))
    assert not changed(["routing", "note"], rule)
    assert changed(["routing", "correct"], rule)


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        (None, ()),
        ("", ()),
        (" , ,", ()),
        ("prediction,correct", ("prediction", "correct")),
        (" prediction , correct,prediction ", ("prediction", "correct")),
        ("gold answer,score@5", ("gold answer", "score@5")),
    ],
)
def test_the_fields_parameter_is_a_comma_separated_list(text: str | None, fields: tuple[str, ...]) -> None:
    assert parse_fields(text) == fields


@pytest.mark.parametrize("text", ['a,"b', "x" * 65, "a\tb", ",".join(f"f{i}" for i in range(MAX_FIELDS + 1))])
def test_a_bad_fields_parameter_says_what_is_wrong(text: str) -> None:
    assert isinstance(parse_fields(text), str)
