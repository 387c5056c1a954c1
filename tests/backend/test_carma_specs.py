"""Bad carma specs are refused by the API with the field path of each error (422)."""

from __future__ import annotations

import pytest

from tests.backend.conftest import Api


@pytest.mark.parametrize(
    ("spec", "loc"),
    [
        ({"carma": {"lambda": 2}}, ["body", "spec", "carma", "lambda"]),
        ({"carma": {"layers": [4, 1]}}, ["body", "spec", "carma", "layers"]),
        ({"carma": {"layers": [0, 30]}}, ["body", "spec", "carma", "layers"]),
        ({"synonyms": {"source": "thesaurus"}}, ["body", "spec", "synonyms", "source"]),
    ],
)
def test_bad_carma_spec_is_422_with_the_field_path(api: Api, spec: dict[str, object], loc: list[str]) -> None:
    r = api.submit(spec, kind="carma")
    assert r.status_code == 422, r.text
    assert [e["loc"] for e in r.json()["errors"]] == [loc]


def test_a_lambda_sweep_with_one_bad_value_is_refused(api: Api) -> None:
    r = api.submit({}, {"grid": {"carma.lambda": [0.0, 0.5, 1.5]}}, kind="carma")
    assert r.status_code == 422, r.text
    assert api.submit({}, {"grid": {"carma.lambda": [0.0, 0.5]}}, kind="carma").status_code == 201
