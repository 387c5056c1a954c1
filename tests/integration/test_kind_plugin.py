"""A kind from a package of its own, registered with no shared file edited: listed by GET /kinds,
validated with field paths, typed in the OpenAPI document, run by a real worker, its result served."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonlab_sdk.client import ApiError
from tests.integration.platform import Platform
from tests.kind_plugin import write_plugin

pytestmark = pytest.mark.slow


def test_a_throwaway_kind_runs_through_the_platform(tmp_path: Path, embedded_platform: Platform) -> None:
    platform = embedded_platform
    module = write_plugin(tmp_path / "plugins")
    platform.env["PYTHONPATH"] = f"{tmp_path / 'plugins'}:{platform.env.get('PYTHONPATH', '')}"
    platform.env["REASONLAB_KIND_PLUGINS"] = module
    platform.start_api()
    platform.start_worker()
    client = platform.client

    kinds = {k["name"]: k for k in client.request("GET", "/kinds")}
    assert kinds["throwaway"]["result_kinds"] == ["square_sum"]
    assert kinds["throwaway"]["defaults"]["sizes"] == {"n": 5}
    assert [e["name"] for e in kinds["throwaway"]["examples"]] == ["ten"]

    document = client.request("GET", "/openapi.json")
    schemas = document["components"]["schemas"]
    spec_union = schemas["ExperimentCreate"]["properties"]["spec"]["discriminator"]["mapping"]
    result_union = schemas["ResultPublic"]["properties"]["payload"]["discriminator"]["mapping"]
    assert spec_union["throwaway"] == "#/components/schemas/ThrowawaySpec"
    assert result_union["square_sum"] == "#/components/schemas/SquareSum"

    with pytest.raises(ApiError) as bad:
        client.create_experiment("bad", "throwaway", {"sizes": {"n": 0}})
    assert bad.value.status == 422
    assert [e["loc"] for e in bad.value.errors] == [["body", "spec", "sizes", "n"]]

    experiment = client.create_experiment("squares", "throwaway", {"sizes": {"n": 4}})
    (run,) = platform.wait_finished([r["id"] for r in experiment["runs"]], timeout=120)
    assert run["status"] == "succeeded", platform.diagnostics()
    (result,) = client.get_results(run["id"], kind="square_sum")
    assert result["payload"] == {"kind": "square_sum", "n": 4, "total": 30}
    assert run["summary"]["total"] == 30.0
