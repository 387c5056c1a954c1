"""Property-based requests over the whole OpenAPI spec (schemathesis): no input gives a 5xx."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from backend.main import create_app
from tests.backend.conftest import Template, make_settings


@pytest.fixture(scope="module")
def fuzz_app(sqlite_api_template: Template, tmp_path_factory: pytest.TempPathFactory) -> tuple[object, str]:
    """The app under fuzz, built when the test runs (not when the module is imported): a copy of the
    session's migrated SQLite template with its admin, and the admin's token."""
    home = tmp_path_factory.mktemp("fuzz-home")
    path = home / "fuzz.db"
    shutil.copyfile(sqlite_api_template.location, path)
    app = create_app(make_settings(f"sqlite:///{path}", Path(home)), background=False)
    return app, sqlite_api_template.creds.token


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_app: tuple[object, str]) -> schemathesis.BaseSchema:
    schema = schemathesis.openapi.from_asgi("/api/v1/openapi.json", fuzz_app[0])
    # the event stream never ends while a run is queued: it is covered by its own tests
    return schema.exclude(path_regex=r".*/events$")


# The operations are dealt over SHARDS tests, each an xdist group of its own, so that `make test`'s processes
# share them instead of one process calling all of them in turn. Cases per operation: 12 (what
# ``@schema.parametrize()`` ran); `make check`, the inner loop, asks for fewer (REASONLAB_FUZZ_EXAMPLES).
SHARDS = 4
EXAMPLES = int(os.environ.get("REASONLAB_FUZZ_EXAMPLES", "12"))


@pytest.mark.parametrize(
    "shard", [pytest.param(i, marks=pytest.mark.xdist_group(f"openapi-fuzz-{i}")) for i in range(SHARDS)]
)
@pytest.mark.heavy
def test_no_input_gives_a_server_error(
    fuzz_schema: schemathesis.BaseSchema, fuzz_app: tuple[object, str], shard: int
) -> None:
    """Every operation of the document (one shard of them), EXAMPLES generated cases each, with the schema
    loaded by a fixture instead of at import."""
    token = fuzz_app[1]
    operations = [result.ok() for result in fuzz_schema.get_all_operations()]
    assert len(operations) >= SHARDS
    mine = operations[shard::SHARDS]

    for operation in mine:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            response = case.call(headers={"Authorization": f"Bearer {token}"})
            case.validate_response(response, checks=(not_a_server_error,))

        check()
