"""Claims from the SDK: create_claim, get_claim, list_claims, update_claim, lock_claim, claim_versions,
comment_claim, review_claim and delete_claim against the real API app (SQLite, in this process), the
errors typed as the API answers them (422 naming the field, 409, 403, 404)."""

from __future__ import annotations

import pytest

from reasonlab_sdk import Conflict, Forbidden, Invalid, NotFound
from reasonlab_sdk.api_types import ClaimDefinition
from tests.sdk.test_sdk_views import Live, _default_project, live  # noqa: F401  (the fixture)

DEFINITION: ClaimDefinition = {  # type: ignore[typeddict-item]  # the API fills in the defaults
    "section": "4.2",
    "arms": [
        {"name": "a", "query": "params.train.lr = 0.1"},
        {"name": "b", "query": "params.train.lr = 0.01"},
    ],
    "metric": "acc",
    "direction": "less",
}


def test_claims_from_the_sdk(live: Live) -> None:  # noqa: F811
    admin = live.client()
    viewer = live.client(live.user("vic", role="viewer"))
    outsider = live.client(live.user("ozzie", project="elsewhere"))
    pid = _default_project(admin)
    claim = admin.create_claim(pid, "lr matters", DEFINITION)
    assert claim["version"] == 1 and claim["evaluation"]["verdict"] == "inconclusive"
    assert claim["definition"]["alpha"] == 0.05 and claim["definition"]["test"] == {
        "type": "t",
        "pairing": "auto",
    }
    assert [c["name"] for c in viewer.list_claims(pid)] == ["lr matters"]
    assert viewer.get_claim(claim["id"])["hash"] == claim["hash"]
    with pytest.raises(Forbidden):
        viewer.create_claim(pid, "mine", DEFINITION)
    with pytest.raises(NotFound):
        outsider.get_claim(claim["id"])
    with pytest.raises(Invalid) as bad:
        admin.create_claim(pid, "bad", {**DEFINITION, "alpha": 2})  # type: ignore[typeddict-item]
    assert ["body", "definition", "alpha"] in [e["loc"] for e in bad.value.errors]
    with pytest.raises(Conflict):
        admin.create_claim(pid, "lr matters", DEFINITION)
    locked = admin.lock_claim(claim["id"])
    assert locked["evaluation"]["preregistration"]["status"] == "pre-registered"
    with pytest.raises(Conflict):
        admin.lock_claim(claim["id"])
    edited = admin.update_claim(claim["id"], definition={**DEFINITION, "min_effect": 0.1})
    assert edited["version"] == 2 and edited["evaluation"]["preregistration"]["status"] == "edited after lock"
    assert [v["version"] for v in admin.claim_versions(claim["id"])] == [1, 2]
    assert admin.update_claim(claim["id"], name="lr matters a lot")["name"] == "lr matters a lot"
    admin.comment_claim(claim["id"], "which seeds?")
    assert [c["body"] for c in viewer.claim_comments(claim["id"])] == ["which seeds?"]
    assert admin.review_claim(claim["id"], "approved")["version"] == 2
    assert [r["state"] for r in viewer.claim_reviews(claim["id"])] == ["approved"]
    with pytest.raises(ValueError):
        admin.update_claim(claim["id"])
    admin.delete_claim(claim["id"])
    with pytest.raises(NotFound):
        admin.get_claim(claim["id"])
