"""The Python SDK against the OpenAPI document: every call it makes is an operation of the API, answered
with the schema its return type names, and its types are generated from the current document. A renamed
route, a dropped operation or a changed field turns this red (mypy then checks every caller's reads)."""

from __future__ import annotations

import importlib.util
import json
import re
import tempfile
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonlab_sdk.client import ReasonLabClient

REPO = Path(__file__).resolve().parents[2]
# the generator lies beside the SDK's package (sdk/gen_types.py), a script rather than a module of it
_spec = importlib.util.spec_from_file_location("sdk_gen_types", REPO / "sdk" / "gen_types.py")
assert _spec is not None and _spec.loader is not None
gen_sdk_types = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen_sdk_types)

DOCUMENT = json.loads(gen_sdk_types.DOCUMENT.read_text())
PREFIX = "/api/v1"
SCRATCH = Path(tempfile.mkdtemp(prefix="sdk-contract-"))  # where the artifact calls read and write
(SCRATCH / "a b.txt").write_bytes(b"artifact")

# every public call of the SDK with arguments; the events stream is checked separately
CALLS: dict[str, Callable[[ReasonLabClient], Any]] = {
    "health": lambda c: c.health(),
    "list_reports": lambda c: c.list_reports(1),
    "get_report": lambda c: c.get_report(1),
    "list_report_revisions": lambda c: c.list_report_revisions(1),
    "export_report": lambda c: c.export_report(1, 1, SCRATCH / "report.html", format="html"),
    "list_claims": lambda c: c.list_claims(1),
    "create_claim": lambda c: c.create_claim(
        1,
        "shared beats private",
        {
            "section": "5.2",
            "arms": [{"name": "a", "query": "lr = 0.1"}, {"name": "b", "query": "lr = 0.2"}],
            "metric": "loss",
            "direction": "less",
        },
    ),
    "get_claim": lambda c: c.get_claim(1),
    "update_claim": lambda c: c.update_claim(1, name="renamed"),
    "lock_claim": lambda c: c.lock_claim(1),
    "claim_versions": lambda c: c.claim_versions(1),
    "delete_claim": lambda c: c.delete_claim(1),
    "comment_claim": lambda c: c.comment_claim(1, "which seeds?"),
    "claim_comments": lambda c: c.claim_comments(1),
    "review_claim": lambda c: c.review_claim(1, "approved"),
    "claim_reviews": lambda c: c.claim_reviews(1),
    "login": lambda c: c.login("alice", "correct-horse-battery-42"),
    "me": lambda c: c.me(),
    "create_token": lambda c: c.create_token("ci"),
    "list_tokens": lambda c: c.list_tokens(),
    "revoke_token": lambda c: c.revoke_token(3),
    "list_projects": lambda c: c.list_projects(),
    "kinds": lambda c: c.kinds(),
    "create_experiment": lambda c: c.create_experiment("x", "diagnostic", {}),
    "preview_experiment": lambda c: c.preview_experiment("x", "diagnostic", {}),
    "list_experiments": lambda c: c.list_experiments(),
    "get_experiment": lambda c: c.get_experiment(1),
    "get_experiment_results": lambda c: c.get_experiment_results(1, kind="diagnostic"),
    "export_runs": lambda c: c.export_runs(
        1, SCRATCH / "runs.parquet", format="parquet", statuses=["failed"]
    ),
    "list_runs": lambda c: c.list_runs(),
    "get_run": lambda c: c.get_run(1),
    "cancel_run": lambda c: c.cancel_run(1),
    "retry_run": lambda c: c.retry_run(1),
    "patch_run": lambda c: c.patch_run(1, mlflow_run_id="abc"),
    "rename_run": lambda c: c.rename_run(1, "baseline"),
    "claim": lambda c: c.claim(1, 1, "w"),
    "heartbeat": lambda c: c.heartbeat(1, 1),
    "finish": lambda c: c.finish(1, 1, "succeeded"),
    "release": lambda c: c.release(1, 1),
    "open_external_run": lambda c: c.open_external_run(1, {"experiment": "e", "config": {"lr": 0.1}}),
    "resumed": lambda c: c.resumed(1, 1, 3),
    "list_attempts": lambda c: c.list_attempts(1),
    "post_logs": lambda c: c.post_logs(1, ["line"], attempt=1),
    "post_params": lambda c: c.post_params(1, {"derived": {"parameters": 3}}, attempt=1),
    "get_logs": lambda c: c.get_logs(1),
    "post_metrics": lambda c: c.post_metrics(1, [{"key": "loss", "step": 1, "value": 1.0}], attempt=1),
    "get_metrics": lambda c: c.get_metrics(1, keys=["loss"]),
    "metric_keys": lambda c: c.metric_keys(1),
    "post_results": lambda c: c.post_results(1, "diagnostic", {"final_loss": 1.0}, attempt=1),
    "get_results": lambda c: c.get_results(1),
    "post_examples": lambda c: c.post_examples(
        1, "gradings", [{"idx": 0, "key": "a", "data": {}}], attempt=1
    ),
    "example_tables": lambda c: c.example_tables(1),
    "get_examples": lambda c: c.get_examples(1, "gradings", cursor="abc", limit=10),
    "diff_examples": lambda c: c.diff_examples(
        1, 2, "gradings", fields=["prediction", "correct"], tolerance=0.01, abs_tolerance=0.0
    ),
    "list_artifacts": lambda c: c.list_artifacts(1),
    "download_artifact": lambda c: c.download_artifact(1, "outputs/a b.txt", SCRATCH / "a b.txt"),
    "upload_artifact": lambda c: c.upload_artifact(
        1, "checkpoints/step-1.pt", SCRATCH / "a b.txt", attempt=1
    ),
    "delete_artifact": lambda c: c.delete_artifact(1, "checkpoints/step-1.pt", attempt=1),
    "list_secrets": lambda c: c.list_secrets(1),
    "set_secret": lambda c: c.set_secret(1, "GRADER_KEY", "sk-value", hosts=["api.openai.com"]),
    "set_secret_hosts": lambda c: c.set_secret_hosts(1, "GRADER_KEY", ["api.openai.com"]),
    "delete_secret": lambda c: c.delete_secret(1, "GRADER_KEY"),
    "get_secret": lambda c: c.get_secret(1, "GRADER_KEY"),
    "run_secret": lambda c: c.run_secret(1, "GRADER_KEY"),
    "list_datasets": lambda c: c.list_datasets(1),
    "upload_dataset": lambda c: c.upload_dataset(1, "qa.jsonl", SCRATCH / "a b.txt"),
    "delete_dataset": lambda c: c.delete_dataset(1, "qa.jsonl"),
    "download_dataset": lambda c: c.download_dataset(1, "qa.jsonl", SCRATCH / "qa.jsonl"),
    "list_views": lambda c: c.list_views(1),
    "get_view": lambda c: c.get_view(1, 2),
    "create_view": lambda c: c.create_view(1, "lr seeds", {"query": "kind = 'carma'"}, page="runs"),
    "update_view": lambda c: c.update_view(1, 2, name="lr", state={"group_by": ["params.lr"]}),
    "delete_view": lambda c: c.delete_view(1, 2),
    "get_view_by_id": lambda c: c.get_view_by_id(2),
    "update_view_by_id": lambda c: c.update_view_by_id(2, name="lr", state={"query": "kind = 'carma'"}),
    "delete_view_by_id": lambda c: c.delete_view_by_id(2),
}


# calls that unwrap their answer: post_metrics returns Accepted.accepted, the count of stored points
UNWRAPPED = {
    "post_metrics": "Accepted",
    "get_secret": "SecretValue",
    "list_claims": "ClaimPage",  # every page's items, following next_cursor
    "list_reports": "ReportSummaryPage",
}
PAGES = {"list_claims", "list_reports"}  # answered with a last page: one request


def _operation(method: str, path: str) -> tuple[str, dict[str, Any]]:
    """The document's path template and operation for a concrete request."""
    for template, operations in DOCUMENT["paths"].items():
        # {path} of the artifact routes is a path: it spans folders
        pattern = (
            "^" + re.sub(r"\{[^}]+\}", "[^/]+", template.replace("{path}", "\0")).replace("\0", ".+") + "$"
        )
        if re.match(pattern, path) and method.lower() in operations:
            return template, operations[method.lower()]
    raise AssertionError(f"the SDK calls {method} {path}, which the OpenAPI document does not have")


def _response_schema_name(operation: dict[str, Any]) -> str | None:
    for status in ("200", "201", "202"):
        content = operation.get("responses", {}).get(status, {}).get("content", {})
        schema = content.get("application/json", {}).get("schema")
        if schema is None:
            continue
        if "$ref" in schema:
            return str(schema["$ref"]).rsplit("/", 1)[-1]
        if schema.get("type") == "array" and "$ref" in schema.get("items", {}):
            return "list[" + str(schema["items"]["$ref"]).rsplit("/", 1)[-1] + "]"
        return None
    return None


def _annotation_name(method: Callable[..., Any]) -> str | None:
    hint = typing.get_type_hints(method)["return"]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is list:
        return f"list[{args[0].__name__}]"
    if typing.get_origin(hint) is Iterator:
        return None
    if args:  # X | None
        hint = args[0]
    return getattr(hint, "__name__", None)


def test_the_sdk_types_are_generated_from_the_current_document() -> None:
    committed = gen_sdk_types.TARGET.read_text()
    assert committed == gen_sdk_types.generate(DOCUMENT), "run: python sdk/gen_types.py"


def test_the_sdks_finish_status_is_the_final_status_of_common_runs() -> None:
    """The SDK imports httpx and the stdlib only (pip install ./sdk suffices), so it cannot import
    common.runs.FinalStatus and spells the same Literal as FinishStatus: kept equal here."""
    from common.runs import FinalStatus
    from reasonlab_sdk.client import FinishStatus

    assert typing.get_args(FinishStatus) == typing.get_args(FinalStatus)


def test_every_public_sdk_call_is_covered_here() -> None:
    public = {
        name
        for name, member in vars(ReasonLabClient).items()
        if callable(member)
        and not name.startswith("_")
        and name not in {"request", "close", "events", "with_token"}
    }
    assert public - {"iter_runs"} == set(CALLS), "add the new SDK call to CALLS"


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_sdk_call_is_an_operation_answered_with_its_return_type(name: str) -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.method == "DELETE":
            return httpx.Response(204)
        body: Any = (
            {"items": [], "next_cursor": None}
            if name in PAGES
            else []
            if name.startswith(("list_", "get_results", "get_experiment_results", "metric_keys", "kinds"))
            and name not in {"list_runs", "list_experiments"}
            else {"access_token": "t", "accepted": 1, "value": "v"}
        )
        return httpx.Response(200, json=body)

    client = ReasonLabClient("http://api.test", "token", transport=httpx.MockTransport(answer))
    CALLS[name](client)
    assert len(seen) == 1
    path = seen[0].url.path
    assert path.startswith(PREFIX)
    template, operation = _operation(seen[0].method, path)
    expected = _response_schema_name(operation)
    method = getattr(ReasonLabClient, name)
    declared = UNWRAPPED.get(name) or _annotation_name(method)
    if expected is not None and declared is not None:
        assert declared == expected, f"{name}: the SDK says {declared}, {template} answers {expected}"
    if "application/octet-stream" in operation.get("requestBody", {}).get("content", {}):
        assert seen[0].headers["content-type"] == "application/octet-stream"
        return  # a file's bytes, streamed: no JSON fields to check
    # the query the SDK sends names only parameters of the operation
    declared_query = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
    sent_query = set(seen[0].url.params)
    assert sent_query <= declared_query, (
        f"{name} sends {sent_query - declared_query} that {template} does not take"
    )
    body = json.loads(seen[0].content) if seen[0].content else {}
    if "requestBody" not in operation:
        assert body == {}, f"{name} sends a body to {template}, which takes none"
    else:  # the body the SDK sends names only fields the operation's body schema has
        ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        fields = set(DOCUMENT["components"]["schemas"][ref].get("properties", {}))
        assert set(body) <= fields, f"{name} sends {set(body) - fields} that {ref} does not have"


def test_a_drifted_document_is_caught(tmp_path: Path) -> None:
    """The check can fail: rename a field of RunPublic and the generated types differ."""
    drifted = json.loads(json.dumps(DOCUMENT))
    props = drifted["components"]["schemas"]["RunPublic"]["properties"]
    props["state"] = props.pop("status")
    assert gen_sdk_types.generate(drifted) != gen_sdk_types.TARGET.read_text()
