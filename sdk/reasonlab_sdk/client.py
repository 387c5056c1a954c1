"""Typed HTTP client for the ReasonLab REST API (docs/api.md): the users' SDK, which the worker uses too.

It needs httpx only (``pip install ./sdk``); no torch, no mlflow (an import-linter contract keeps it so).

Every method returns the decoded JSON body (``Json`` dicts and lists, exactly as docs/api.md describes
them). Every error is an ``ApiError`` subclass, so a caller retries only what is transient::

    try:
        client.post_metrics(run_id, points)
    except ApiUnavailable:   # connection refused, timeout, 5xx: try again later
        ...
    except Conflict:         # 409: the state does not allow it; retrying will not help
        ...
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import httpx

from reasonlab_sdk import api_types as api
from reasonlab_sdk import points as compact_points

Json = dict[str, Any]
# common.runs.FinalStatus, spelled again: the SDK imports httpx and the stdlib only (tests/worker/test_sdk_contract.py
# keeps the two equal)
FinishStatus = Literal["succeeded", "failed", "cancelled"]

API_PREFIX = "/api/v1"
# the largest page the claims and reports lists answer (backend/claims/service.py and
# backend/reports/service.py, LIST_MAX): a project's every claim, or report, in one request
CLAIMS_PAGE = 100
REPORTS_PAGE = 500


class ApiError(Exception):
    """An error answer of the API (or no answer at all, for ``ApiUnavailable``).

    ``status`` is the HTTP status (None when the server was not reached), ``code`` the API's error code
    (``conflict``, ``invalid``, ...), ``detail`` its message and ``errors`` the validation errors
    (``[{"loc", "msg", "type"}]`` for a 422).
    """

    def __init__(
        self,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        errors: list[Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.errors: list[Any] = errors or []

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no response"
        text = f"{where} {self.code or 'error'}: {self.detail}"
        if self.errors:
            text += f" {json.dumps(self.errors, default=str)[:2000]}"
        return text


class Unauthorized(ApiError):
    """401: no or bad credentials."""


class Forbidden(ApiError):
    """403: the caller's role does not allow the action."""


class NotFound(ApiError):
    """404: no such resource, or not visible to the caller."""


class Conflict(ApiError):
    """409: the resource's state does not allow the action (a claimed attempt, a lost lease)."""


class TooLarge(ApiError):
    """413: a metric batch over the server's limit."""


class Invalid(ApiError):
    """422: validation failed; ``errors`` lists every field path."""


class ApiUnavailable(ApiError):
    """The API could not answer: connection error, timeout, 429 or 5xx. The only retryable error."""


_BY_STATUS: dict[int, type[ApiError]] = {
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    422: Invalid,
}


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event of ``GET /runs/{id}/events``; ``data`` is decoded JSON when it parses."""

    event: str
    data: Any
    id: str | None = None


def api_base_url(base_url: str) -> str:
    """``http://host:8000`` and ``http://host:8000/api/v1`` both name the API root."""
    url = base_url.rstrip("/")
    return url if url.endswith(API_PREFIX) else url + API_PREFIX


def _error_from_response(response: httpx.Response) -> ApiError:
    status = response.status_code
    code: str | None = None
    detail = response.reason_phrase or f"HTTP {status}"
    errors: list[Any] = []
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        code = body.get("code") if isinstance(body.get("code"), str) else None
        raw_detail = body.get("detail")
        if isinstance(raw_detail, list):  # FastAPI's own 422 shape, in case a route bypasses the handler
            errors = raw_detail
            detail = "validation error"
        elif raw_detail is not None:
            detail = str(raw_detail)
        if isinstance(body.get("errors"), list):
            errors = body["errors"]
    elif response.text:
        detail = response.text[:500]
    if status >= 500 or status == 429:
        return ApiUnavailable(detail, status=status, code=code, errors=errors)
    cls = _BY_STATUS.get(status, ApiError)
    return cls(detail, status=status, code=code, errors=errors)


def is_storable(text: str) -> bool:
    """No NUL and no lone UTF-16 surrogate: text the API (and its databases) can store."""
    if "\x00" in text:
        return False
    if text.isascii():
        return True
    try:
        text.encode("utf-8")  # only a lone surrogate fails
    except UnicodeEncodeError:
        return False
    return True


def storable_text(text: str) -> str:
    """``text`` with a NUL as ``\\x00`` and a lone surrogate as ``\\udXXX``: the API refuses both (422),
    and a traceback or a progress message must not cost a run its finish or its heartbeats."""
    if is_storable(text):
        return text
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _storable_progress(progress: dict[str, Any]) -> dict[str, Any]:
    message = progress.get("message")
    return {**progress, "message": storable_text(message)} if isinstance(message, str) else progress


def _drop_none(params: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in params.items() if value is not None}


class ReasonLabClient:
    """A synchronous client of one ReasonLab API. Thread-safe (httpx.Client is).

    ``base_url`` is the server (``http://127.0.0.1:8000``) or the API root (``.../api/v1``); ``token`` a
    JWT, an API token or the worker token. ``transport`` lets tests plug an ``httpx.MockTransport``.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout: float = 30.0,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = api_base_url(base_url)
        self.token = token or None
        self.timeout = timeout
        self._transport = transport
        # No TLS context for a plain-http API (a worker beside the API): loading the CA bundle costs each
        # fresh job process ~50 ms before it can claim its run. https keeps full verification.
        verify = not self.base_url.startswith("http://")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport, verify=verify)
        self._compact_refused = False  # the API answered a compact metric body 415 (post_metrics)

    # -- plumbing ---------------------------------------------------------------------------------------

    def with_token(self, token: str) -> ReasonLabClient:
        """A client of the same API (and transport) that authenticates with ``token`` instead."""
        return ReasonLabClient(self.base_url, token, self.timeout, transport=self._transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ReasonLabClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """One call; the decoded JSON body (None for an empty body), or an ``ApiError``. ``content``: a
        body of bytes of ``content_type`` instead of ``json_body``."""
        headers = self._headers()
        if content_type is not None:
            headers["Content-Type"] = content_type
        try:
            response = self._http.request(
                method,
                path,
                json=json_body if content is None else None,
                content=content,
                params=_drop_none(params or {}),
                headers=headers,
            )
        except httpx.TransportError as exc:  # connect, read, write, pool timeouts and refusals
            raise ApiUnavailable(f"{method} {self.base_url}{path}: {type(exc).__name__}: {exc}") from exc
        if response.is_error:
            raise _error_from_response(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ApiError(
                f"{method} {path}: answer is not JSON", status=response.status_code, code="bad_response"
            ) from exc

    def _get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params=params)

    def _post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, json_body=body if body is not None else {})

    # -- health and auth --------------------------------------------------------------------------------

    def health(self) -> api.Health:
        result: api.Health = self._get("/health")
        return result

    def login(self, username: str, password: str) -> api.TokenOut:
        """Log in; the client uses the returned JWT from now on."""
        result: api.TokenOut = self._post("/auth/login", {"username": username, "password": password})
        self.token = result["access_token"]
        return result

    def me(self) -> api.UserPublic:
        result: api.UserPublic = self._get("/auth/me")
        return result

    def create_token(self, name: str) -> api.ApiTokenCreated:
        """A new API token ``{"id", "name", "token", "created_at"}``; the token is shown only here."""
        result: api.ApiTokenCreated = self._post("/auth/tokens", {"name": name})
        return result

    def list_tokens(self) -> list[api.ApiTokenPublic]:
        result: list[api.ApiTokenPublic] = self._get("/auth/tokens")
        return result

    def revoke_token(self, token_id: int) -> None:
        self.request("DELETE", f"/auth/tokens/{token_id}")

    def list_projects(self) -> list[api.ProjectPublic]:
        result: list[api.ProjectPublic] = self._get("/projects")
        return result

    # -- kinds and experiments --------------------------------------------------------------------------

    def list_secrets(self, project_id: int) -> list[api.SecretPublic]:
        result: list[api.SecretPublic] = self._get(f"/projects/{project_id}/secrets")
        return result

    def set_secret(
        self, project_id: int, name: str, value: str, hosts: list[str] | None = None
    ) -> api.SecretPublic:
        """Set or replace a secret (project admins) and, with ``hosts``, where it may be sent (host names,
        ``*.domain``, addresses or networks, URL prefixes); without, a secret set before keeps its hosts
        and a new one may be sent nowhere yet."""
        body: dict[str, Any] = {"value": value}
        if hosts is not None:
            body["hosts"] = hosts
        result: api.SecretPublic = self.request(
            "PUT", f"/projects/{project_id}/secrets/{name}", json_body=body
        )
        return result

    def set_secret_hosts(self, project_id: int, name: str, hosts: list[str]) -> api.SecretPublic:
        """Where a secret may be sent, its value unchanged (project admins)."""
        result: api.SecretPublic = self.request(
            "PATCH", f"/projects/{project_id}/secrets/{name}", json_body={"hosts": hosts}
        )
        return result

    def delete_secret(self, project_id: int, name: str) -> None:
        self.request("DELETE", f"/projects/{project_id}/secrets/{name}")

    def list_datasets(self, project_id: int) -> list[api.DatasetPublic]:
        """The data files uploaded to the project (a spec names one as ``dataset:<name>``)."""
        result: list[api.DatasetPublic] = self._get(f"/projects/{project_id}/datasets")
        return result

    def upload_dataset(self, project_id: int, name: str, source: Path) -> api.DatasetPublic:
        """Stream the local file ``source`` to the project as dataset ``name`` (replacing one of that
        name); project members."""
        url = f"/projects/{project_id}/datasets/{quote(name, safe='')}"
        headers = {**self._headers(), "Content-Type": "application/octet-stream"}
        try:
            with open(source, "rb") as fh:
                response = self._http.put(url, content=fh, headers=headers)
        except httpx.TransportError as exc:
            raise ApiUnavailable(f"PUT {self.base_url}{url}: {type(exc).__name__}: {exc}") from exc
        if response.is_error:
            raise _error_from_response(response)
        result: api.DatasetPublic = response.json()
        return result

    def delete_dataset(self, project_id: int, name: str) -> None:
        """Delete a dataset of the project (a project admin or its uploader)."""
        self.request("DELETE", f"/projects/{project_id}/datasets/{quote(name, safe='')}")

    # -- reports ----------------------------------------------------------------------------------------

    def list_reports(self, project_id: int) -> list[api.ReportSummary]:
        """Every report of the project (title, version, author, revisions), newest first, following the
        list's pages; any role."""
        items: list[api.ReportSummary] = self._every_page(f"/projects/{project_id}/reports", REPORTS_PAGE)
        return items

    def get_report(self, report_id: int) -> api.ReportPublic:
        """A report's draft: its title, version and blocks (any role in its project)."""
        result: api.ReportPublic = self._get(f"/reports/{report_id}")
        return result

    def list_report_revisions(self, report_id: int) -> list[api.RevisionSummary]:
        """The report's published revisions, oldest first."""
        result: list[api.RevisionSummary] = self._get(f"/reports/{report_id}/revisions")
        return result

    def export_report(
        self,
        report_id: int,
        revision: int,
        dest: Path,
        *,
        format: Literal["html", "md", "latex"] = "html",
    ) -> int:
        """Write a published revision to ``dest``: one self-contained HTML file (``html``), or a zip of
        Markdown with SVG figures (``md``) or of a LaTeX folder with TikZ figures (``latex``); the bytes
        written (``dest`` is never half written)."""
        return self._stream_to_file(
            f"/reports/{report_id}/revisions/{revision}/export", dest, {"format": format}
        )

    # -- saved views ------------------------------------------------------------------------------------

    def list_views(self, project_id: int) -> list[api.ViewPublic]:
        """The project's saved views, by name (any role); ``reasonlab_sdk.view_runs_args(view)`` turns one
        into ``list_runs`` keywords."""
        result: list[api.ViewPublic] = self._get(f"/projects/{project_id}/views")
        return result

    def get_view(self, project_id: int, view_id: int) -> api.ViewPublic:
        """One view of the project (``NotFound`` for another project's view); ``get_view_by_id`` needs no
        project."""
        result: api.ViewPublic = self._get(f"/projects/{project_id}/views/{view_id}")
        return result

    def get_view_by_id(self, view_id: int) -> api.ViewPublic:
        """A view by its id alone, of any project the caller is in (its ``project_id`` says which);
        ``NotFound`` for a view of a project the caller is not in, as for a missing one."""
        result: api.ViewPublic = self._get(f"/views/{view_id}")
        return result

    def create_view(
        self,
        project_id: int,
        name: str,
        state: api.ViewState | None = None,
        *,
        page: Literal["runs", "experiments", "compare"] = "runs",
    ) -> api.ViewPublic:
        """Save a view of ``page`` (project members and admins): ``state`` is ``{"query", "columns",
        "group_by", "sort", "chart", "charts", "runs"}``, any part left out at its default; ``Conflict`` for a name the
        project already has, ``Invalid`` naming the field for a bad state."""
        body: Json = {"name": name, "page": page}
        if state is not None:
            body["state"] = state
        result: api.ViewPublic = self._post(f"/projects/{project_id}/views", body)
        return result

    def update_view(
        self,
        project_id: int,
        view_id: int,
        *,
        name: str | None = None,
        state: api.ViewState | None = None,
    ) -> api.ViewPublic:
        """Rename a view, replace its whole state, or both (its author or a project admin, else
        ``Forbidden``)."""
        if name is None and state is None:
            raise ValueError("update_view: give a new name, a new state or both")
        body: Json = {}
        if name is not None:
            body["name"] = name
        if state is not None:
            body["state"] = state
        result: api.ViewPublic = self.request(
            "PATCH", f"/projects/{project_id}/views/{view_id}", json_body=body
        )
        return result

    def update_view_by_id(
        self, view_id: int, *, name: str | None = None, state: api.ViewState | None = None
    ) -> api.ViewPublic:
        """``update_view`` by the view's id alone (no project needed)."""
        if name is None and state is None:
            raise ValueError("update_view_by_id: give a new name, a new state or both")
        body: Json = {}
        if name is not None:
            body["name"] = name
        if state is not None:
            body["state"] = state
        result: api.ViewPublic = self.request("PATCH", f"/views/{view_id}", json_body=body)
        return result

    def delete_view(self, project_id: int, view_id: int) -> None:
        """Delete a view (its author or a project admin, else ``Forbidden``)."""
        self.request("DELETE", f"/projects/{project_id}/views/{view_id}")

    def delete_view_by_id(self, view_id: int) -> None:
        """``delete_view`` by the view's id alone (no project needed)."""
        self.request("DELETE", f"/views/{view_id}")

    # -- claims -----------------------------------------------------------------------------------------

    def list_claims(self, project_id: int) -> list[api.ClaimPublic]:
        """Every claim of the project by id, each with its evaluation on the runs now
        (``claim["evaluation"]``: n, mean and interval per arm, each comparison's effect, interval, p-value
        adjusted within its family and verdict, the pre-registration), following the list's pages; any
        role."""
        items: list[api.ClaimPublic] = self._every_page(f"/projects/{project_id}/claims", CLAIMS_PAGE)
        return items

    def _every_page(self, path: str, limit: int) -> list[Any]:
        """Every item of a keyset-paged list route (``{"items", "next_cursor"}``), pages of ``limit``."""
        items: list[Any] = []
        cursor: str | None = None
        while True:
            page = self._get(path, limit=limit, cursor=cursor)
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def create_claim(self, project_id: int, name: str, definition: api.ClaimDefinition) -> api.ClaimPublic:
        """State a claim (members): ``definition`` is ``{"section", "arms": [{"name", "query"}, ...],
        "metric", "direction", ...}`` (docs/api.md, "Claims"); ``Invalid`` names the field of a bad one."""
        result: api.ClaimPublic = self._post(
            f"/projects/{project_id}/claims", {"name": name, "definition": definition}
        )
        return result

    def get_claim(self, claim_id: int) -> api.ClaimPublic:
        """A claim and its evaluation now, by its id (any project the caller is in)."""
        result: api.ClaimPublic = self._get(f"/claims/{claim_id}")
        return result

    def update_claim(
        self, claim_id: int, *, name: str | None = None, definition: api.ClaimDefinition | None = None
    ) -> api.ClaimPublic:
        """Rename a claim, replace its definition (a new version when it changes), or both."""
        if name is None and definition is None:
            raise ValueError("update_claim: give a new name, a new definition or both")
        body: Json = {}
        if name is not None:
            body["name"] = name
        if definition is not None:
            body["definition"] = definition
        result: api.ClaimPublic = self.request("PATCH", f"/claims/{claim_id}", json_body=body)
        return result

    def lock_claim(self, claim_id: int) -> api.ClaimPublic:
        """Pre-register the claim's current version (its hash and the time); ``Conflict`` when locked."""
        result: api.ClaimPublic = self._post(f"/claims/{claim_id}/lock")
        return result

    def claim_versions(self, claim_id: int) -> list[api.ClaimVersionPublic]:
        result: list[api.ClaimVersionPublic] = self._get(f"/claims/{claim_id}/versions")
        return result

    def delete_claim(self, claim_id: int) -> None:
        """Delete a claim (its author or a project admin, else ``Forbidden``)."""
        self.request("DELETE", f"/claims/{claim_id}")

    def comment_claim(self, claim_id: int, body: str) -> api.ClaimCommentPublic:
        result: api.ClaimCommentPublic = self._post(f"/claims/{claim_id}/comments", {"body": body})
        return result

    def claim_comments(self, claim_id: int) -> list[api.ClaimCommentPublic]:
        result: list[api.ClaimCommentPublic] = self._get(f"/claims/{claim_id}/comments")
        return result

    def review_claim(self, claim_id: int, state: str, body: str = "") -> api.ClaimReviewPublic:
        """``state``: ``approved`` or ``changes_requested`` (members)."""
        result: api.ClaimReviewPublic = self.request(
            "PUT", f"/claims/{claim_id}/review", json_body={"state": state, "body": body}
        )
        return result

    def claim_reviews(self, claim_id: int) -> list[api.ClaimReviewPublic]:
        result: list[api.ClaimReviewPublic] = self._get(f"/claims/{claim_id}/reviews")
        return result

    def kinds(self) -> list[api.KindPublic]:
        result: list[api.KindPublic] = self._get("/kinds")
        return result

    @staticmethod
    def _experiment_body(
        name: str,
        kind: str,
        spec: dict[str, Any] | None,
        sweep: dict[str, Any] | None,
        project: str | None,
        description: str | None,
        tags: Sequence[str] | None,
    ) -> Json:
        body: Json = {"name": name, "kind": kind, "spec": spec or {}}
        if sweep is not None:
            body["sweep"] = sweep
        if project is not None:
            body["project"] = project
        if description is not None:
            body["description"] = description
        if tags is not None:
            body["tags"] = list(tags)
        return body

    def create_experiment(
        self,
        name: str,
        kind: str,
        spec: dict[str, Any] | None = None,
        sweep: dict[str, Any] | None = None,
        *,
        project: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> api.ExperimentDetail:
        """Submit an experiment; the ``ExperimentDetail`` with its runs."""
        body = self._experiment_body(name, kind, spec, sweep, project, description, tags)
        result: api.ExperimentDetail = self._post("/experiments", body)
        return result

    def preview_experiment(
        self,
        name: str,
        kind: str,
        spec: dict[str, Any] | None = None,
        sweep: dict[str, Any] | None = None,
        *,
        project: str | None = None,
        description: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> api.Preview:
        """The sweep's expansion ``{"count", "runs": [{"index", "params", "spec"}]}``; stores nothing."""
        body = self._experiment_body(name, kind, spec, sweep, project, description, tags)
        result: api.Preview = self._post("/experiments/preview", body)
        return result

    def list_experiments(
        self,
        *,
        project: str | None = None,
        kind: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Literal["asc", "desc"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> api.ExperimentPage:
        """One page ``{"items", "next_cursor"}``; ``q`` a query-language filter (docs/api.md, Query
        language), ``sort`` any experiment field (``name``, ``params.<path>``, ...)."""
        result: api.ExperimentPage = self._get(
            "/experiments",
            project=project,
            kind=kind,
            q=q,
            sort=sort,
            order=order,
            limit=limit,
            cursor=cursor,
        )
        return result

    def get_experiment(self, experiment_id: int) -> api.ExperimentDetail:
        result: api.ExperimentDetail = self._get(f"/experiments/{experiment_id}")
        return result

    def get_experiment_results(self, experiment_id: int, kind: str | None = None) -> list[api.ResultPublic]:
        result: list[api.ResultPublic] = self._get(f"/experiments/{experiment_id}/results", kind=kind)
        return result

    def export_runs(
        self,
        experiment_id: int,
        dest: Path,
        *,
        format: Literal["csv", "parquet"] = "csv",
        statuses: Sequence[str] | None = None,
    ) -> int:
        """Write the experiment's runs table (the dashboard's columns: number, name, status, attempt,
        times, ``params.*``, latest ``metrics.*``) to ``dest`` as CSV or Parquet, only runs of
        ``statuses`` when given; the bytes written (``dest`` is never half written)."""
        params: dict[str, Any] = {"format": format, "status": list(statuses) if statuses else None}
        return self._stream_to_file(f"/experiments/{experiment_id}/runs/export", dest, params)

    def _stream_to_file(self, url: str, dest: Path, params: dict[str, Any] | None = None) -> int:
        """Stream GET ``url`` into ``dest`` through a temporary file beside it, renamed when complete."""
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        written = 0
        try:
            with (
                os.fdopen(fd, "wb") as fh,
                self._http.stream(
                    "GET", url, params=_drop_none(params or {}), headers=self._headers()
                ) as resp,
            ):
                if resp.is_error:
                    resp.read()
                    raise _error_from_response(resp)
                for chunk in resp.iter_bytes(1024 * 1024):
                    fh.write(chunk)
                    written += len(chunk)
            os.replace(tmp, dest)
        except httpx.TransportError as exc:
            raise ApiUnavailable(f"GET {self.base_url}{url}: {type(exc).__name__}: {exc}") from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return written

    # -- runs -------------------------------------------------------------------------------------------

    def list_runs(
        self,
        *,
        experiment_id: int | None = None,
        status: str | None = None,
        kind: str | None = None,
        tag: str | None = None,
        project: str | None = None,
        q: str | None = None,
        sort: str | None = None,
        order: Literal["asc", "desc"] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        group_by: str | Sequence[str] | None = None,
        metrics: str | Sequence[str] | None = None,
    ) -> api.RunPage:
        """One page ``{"items", "next_cursor"}``; ``q`` a query-language filter (docs/api.md, Query
        language); ``sort`` any query-language field (``params.lr``, ``max(metrics.acc)``) or
        ``metric:<key>``.

        Seed groups: ``group_by`` (fields such as ``["params.method", "params.lambda"]``, or ``"default"``:
        every spec field except seed) answers ``groups`` instead of ``items``: per group its ``key``, ``n``,
        ``run_ids`` and, per column of ``metrics`` (``["max(metrics.acc)", "best(metrics.loss)"]``), n,
        mean, std, the 95% Student-t ``ci_low``/``ci_high``, min and max; ``sort`` is then a group field,
        ``n``, ``metric-mean:<column>`` or ``created_at``."""
        result: api.RunPage = self._get(
            "/runs",
            group_by=group_by if group_by is None or isinstance(group_by, str) else ",".join(group_by),
            metrics=metrics if metrics is None or isinstance(metrics, str) else ",".join(metrics),
            experiment_id=experiment_id,
            status=status,
            kind=kind,
            tag=tag,
            project=project,
            q=q,
            sort=sort,
            order=order,
            limit=limit,
            cursor=cursor,
        )
        return result

    def iter_runs(self, **filters: Any) -> Iterator[api.RunPublic]:
        """Every run matching ``filters`` (``list_runs``' keywords), following the cursor."""
        cursor: str | None = None
        while True:
            page = self.list_runs(**filters, cursor=cursor)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def get_run(self, run_id: int) -> api.RunPublic:
        result: api.RunPublic = self._get(f"/runs/{run_id}")
        return result

    def cancel_run(self, run_id: int) -> api.RunPublic:
        result: api.RunPublic = self._post(f"/runs/{run_id}/cancel")
        return result

    def retry_run(self, run_id: int) -> api.RunPublic:
        result: api.RunPublic = self._post(f"/runs/{run_id}/retry")
        return result

    def rename_run(self, run_id: int, name: str | None) -> api.RunPublic:
        """Name the run (trimmed; ``None`` or blank clears it); a member of its project may."""
        result: api.RunPublic = self.request("PATCH", f"/runs/{run_id}", json_body={"name": name})
        return result

    def patch_run(self, run_id: int, *, mlflow_run_id: str) -> api.RunPublic:
        result: api.RunPublic = self.request(
            "PATCH", f"/runs/{run_id}", json_body={"mlflow_run_id": mlflow_run_id}
        )
        return result

    # -- worker routes ----------------------------------------------------------------------------------

    def claim(self, run_id: int, attempt: int | None, worker: str) -> api.ClaimOut:
        """Take the run's ``attempt`` (None: its current one); the ``Run`` (now ``running``) with the
        ``run_token`` the attempt works with from then on. ``Conflict`` if it is not ``queued`` with that
        attempt (a redelivered message, a stale attempt)."""
        result: api.ClaimOut = self._post(f"/runs/{run_id}/claim", {"attempt": attempt, "worker": worker})
        return result

    def heartbeat(
        self,
        run_id: int,
        attempt: int,
        progress: dict[str, Any] | None = None,
    ) -> api.HeartbeatOut:
        """``{"cancel_requested"}``; ``Conflict`` when the attempt no longer owns the run."""
        body: Json = {"attempt": attempt}
        if progress is not None:
            body["progress"] = _storable_progress(progress)
        result: api.HeartbeatOut = self._post(f"/runs/{run_id}/heartbeat", body)
        return result

    def finish(
        self,
        run_id: int,
        attempt: int,
        status: FinishStatus,
        *,
        error: str | None = None,
        mlflow_run_id: str | None = None,
        progress: dict[str, Any] | None = None,
    ) -> api.RunPublic | None:
        body: Json = {"attempt": attempt, "status": status}
        if progress is not None:
            body["progress"] = _storable_progress(progress)
        if error is not None:
            body["error"] = storable_text(error)
        if mlflow_run_id is not None:
            body["mlflow_run_id"] = mlflow_run_id
        result: api.RunPublic | None = self._post(f"/runs/{run_id}/finish", body)
        return result

    def open_external_run(self, project_id: int, body: dict[str, Any]) -> api.ExternalRunOut:
        """Open (or, with ``id`` and ``resume``, reopen) a run this script executes itself; the answer's
        ``run_token`` drives it (``reasonlab_sdk.tracking`` does this for you)."""
        result: api.ExternalRunOut = self._post(f"/projects/{project_id}/runs/external", body)
        return result

    def release(self, run_id: int, attempt: int) -> api.RunPublic:
        """Give the run back (this worker is shutting down after a checkpoint): queued as attempt+1."""
        result: api.RunPublic = self._post(f"/runs/{run_id}/release", {"attempt": attempt})
        return result

    def resumed(self, run_id: int, attempt: int, step: int) -> None:
        """Tell the platform this attempt resumed from its checkpoint at ``step`` (its log, the activity
        feed and the attempt history show it); noted once per attempt."""
        self._post(f"/runs/{run_id}/resumed", {"attempt": attempt, "step": step})

    def list_attempts(self, run_id: int) -> list[api.AttemptPublic]:
        """The run's attempts, the first first: worker, claim, end, duration (downtime excluded), outcome."""
        result: list[api.AttemptPublic] = self._get(f"/runs/{run_id}/attempts")
        return result

    def get_secret(self, run_id: int, name: str) -> str:
        """A project secret the run's spec names (the run's own token only)."""
        return self.run_secret(run_id, name)["value"]

    def run_secret(self, run_id: int, name: str) -> api.SecretValue:
        """A project secret the run's spec names, with the hosts it may be sent to (the run's own token
        only): send it nowhere else."""
        result: api.SecretValue = self._get(f"/runs/{run_id}/secrets/{name}")
        return result

    def download_dataset(self, run_id: int, name: str, dest: Path) -> str:
        """Stream a dataset of the run's project that its spec names into ``dest`` (the run's own token;
        a temporary file beside it, renamed when complete and its checksum matches); its sha256."""
        url = f"/runs/{run_id}/datasets/{quote(name, safe='')}"
        dest = Path(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        digest = hashlib.sha256()
        try:
            with os.fdopen(fd, "wb") as fh, self._http.stream("GET", url, headers=self._headers()) as resp:
                if resp.is_error:
                    resp.read()
                    raise _error_from_response(resp)
                expected = resp.headers.get("x-checksum-sha256", "")
                for chunk in resp.iter_bytes(1024 * 1024):
                    fh.write(chunk)
                    digest.update(chunk)
            if expected and digest.hexdigest() != expected:
                raise ApiUnavailable(f"GET {self.base_url}{url}: the bytes do not match their checksum")
            os.replace(tmp, dest)
        except httpx.TransportError as exc:
            raise ApiUnavailable(f"GET {self.base_url}{url}: {type(exc).__name__}: {exc}") from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return digest.hexdigest()

    def post_logs(self, run_id: int, lines: Sequence[str], *, attempt: int | None = None) -> Json | None:
        body: Json = {"lines": list(lines)}
        if attempt is not None:
            body["attempt"] = attempt
        result: Json | None = self._post(f"/runs/{run_id}/logs", body)
        return result

    def post_params(self, run_id: int, params: dict[str, Any], *, attempt: int | None = None) -> None:
        """Merge parameters the run logged (nested objects flattened to ``a.b`` keys; at most 1,000 keys,
        values of at most 10,000 characters) into its ``logged_params``, the last value of a key kept."""
        body: Json = {"params": params}
        if attempt is not None:
            body["attempt"] = attempt
        self._post(f"/runs/{run_id}/params", body)

    def get_logs(self, run_id: int, *, after: int | None = None, limit: int | None = None) -> api.LogsPage:
        """``{"items": [{"seq", "time", "line"}], "last_seq"}``; pass ``last_seq`` back as ``after``."""
        result: api.LogsPage = self._get(f"/runs/{run_id}/logs", after=after, limit=limit)
        return result

    # -- metrics and results ----------------------------------------------------------------------------

    def post_metrics(
        self,
        run_id: int,
        points: Sequence[dict[str, Any]],
        *,
        attempt: int | None = None,
        compact: bool = False,
    ) -> int:
        """Store ``[{"key", "step", "value", "time"?}]`` (at most 10,000); the number accepted. With
        ``attempt``, the API refuses (409) once that attempt no longer owns the run. ``compact``: sent as
        the compact body (``reasonlab_sdk.points``: columns of numbers, far cheaper for the API to read
        than JSON objects), or as JSON to an API that does not take it (415)."""
        if compact and not self._compact_refused:
            try:
                result: Json = self.request(
                    "POST",
                    f"/runs/{run_id}/metrics",
                    content=compact_points.encode(points, attempt),
                    content_type=compact_points.CONTENT_TYPE,
                )
                return int(result.get("accepted", len(points))) if isinstance(result, dict) else len(points)
            except ApiError as exc:
                if exc.status != 415:
                    raise
                self._compact_refused = True  # an API older than the compact body: JSON from now on
        body: Json = {"points": list(points)}
        if attempt is not None:
            body["attempt"] = attempt
        result = self._post(f"/runs/{run_id}/metrics", body)
        return int(result.get("accepted", len(points))) if isinstance(result, dict) else len(points)

    def get_metrics(
        self,
        run_id: int,
        keys: Sequence[str] | None = None,
        *,
        max_points: int | None = None,
        step_min: int | None = None,
        step_max: int | None = None,
    ) -> api.MetricsOut:
        """``{"run_id", "series": {key: {"total_points", "step_min", "step_max", "buckets"}}}``."""
        result: api.MetricsOut = self._get(
            f"/runs/{run_id}/metrics",
            keys=",".join(keys) if keys else None,
            max_points=max_points,
            step_min=step_min,
            step_max=step_max,
        )
        return result

    def metric_keys(self, run_id: int) -> list[str]:
        result: list[str] = self._get(f"/runs/{run_id}/metric-keys")
        return result

    def post_results(
        self,
        run_id: int,
        kind: str,
        payload: dict[str, Any],
        *,
        key: str | None = None,
        attempt: int | None = None,
    ) -> api.ResultPublic:
        """Post one result record; validated by the server against the type its kind's manifest declares. A
        record sent again with the same ``key`` replaces the stored one."""
        body: Json = {"kind": kind, "payload": payload}
        if key is not None:
            body["key"] = key
        if attempt is not None:
            body["attempt"] = attempt
        result: api.ResultPublic = self._post(f"/runs/{run_id}/results", body)
        return result

    def get_results(self, run_id: int, kind: str | None = None) -> list[api.ResultPublic]:
        result: list[api.ResultPublic] = self._get(f"/runs/{run_id}/results", kind=kind)
        return result

    # -- per-example tables ----------------------------------------------------------------------------

    def post_examples(
        self, run_id: int, table: str, rows: list[dict[str, Any]], *, attempt: int | None = None
    ) -> api.ExamplesAccepted:
        """Post rows ``{"idx", "key", "data"}`` (at most 1,000) to the run's per-example table ``table``; a
        row sent again with its idx replaces the stored one."""
        body: Json = {"table": table, "rows": rows}
        if attempt is not None:
            body["attempt"] = attempt
        result: api.ExamplesAccepted = self._post(f"/runs/{run_id}/examples", body)
        return result

    def example_tables(self, run_id: int) -> list[api.ExampleTable]:
        """The run's per-example tables and their row counts."""
        result: list[api.ExampleTable] = self._get(f"/runs/{run_id}/example-tables")
        return result

    def get_examples(
        self, run_id: int, table: str, *, cursor: str | None = None, limit: int = 100
    ) -> api.ExamplePage:
        """One page of ``table``'s rows in idx order; pass ``next_cursor`` back for the next."""
        result: api.ExamplePage = self._get(
            f"/runs/{run_id}/examples", table=table, cursor=cursor, limit=limit
        )
        return result

    def diff_examples(
        self,
        run_id: int,
        other: int,
        table: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        fields: Sequence[str] | None = None,
        tolerance: float | None = None,
        abs_tolerance: float | None = None,
    ) -> api.ExampleDiffPage:
        """One page of the keys whose rows differ between two runs' ``table`` (or that one run lacks).

        ``fields``: the data fields that define a change (``["prediction", "correct"]``; None or empty:
        every field); ``tolerance`` / ``abs_tolerance``: relative and absolute tolerance for numbers, also
        inside arrays and objects (None: the server's, 1e-6 relative and 0 absolute). Each item's
        ``differing`` lists the fields whose values differ under the tolerance."""
        result: api.ExampleDiffPage = self._get(
            f"/runs/{run_id}/examples/diff",
            other=other,
            table=table,
            cursor=cursor,
            limit=limit,
            fields=",".join(fields) if fields else None,
            tolerance=tolerance,
            abs_tolerance=abs_tolerance,
        )
        return result

    # -- artifacts --------------------------------------------------------------------------------------

    def list_artifacts(self, run_id: int) -> api.ArtifactList:
        """Every stored file of the run (``checkpoints/``, ``outputs/``, ``model/``) with its size."""
        result: api.ArtifactList = self._get(f"/runs/{run_id}/artifacts")
        return result

    def download_artifact(self, run_id: int, path: str, dest: Path) -> int:
        """Stream the run's file ``path`` into ``dest`` (a temporary file beside it, renamed when
        complete: ``dest`` is never half written); the bytes written."""
        return self._stream_to_file(f"/runs/{run_id}/artifacts/{quote(path, safe='/')}", dest)

    def upload_artifact(self, run_id: int, path: str, source: Path, *, attempt: int) -> api.ArtifactPublic:
        """Stream the local file ``source`` to the run's ``path`` (the worker token, while ``attempt``
        owns the run); the store shows it only once complete."""
        url = f"/runs/{run_id}/artifacts/{quote(path, safe='/')}"
        headers = {**self._headers(), "Content-Type": "application/octet-stream"}
        try:
            with open(source, "rb") as fh:
                response = self._http.put(url, content=fh, params={"attempt": attempt}, headers=headers)
        except httpx.TransportError as exc:
            raise ApiUnavailable(f"PUT {self.base_url}{url}: {type(exc).__name__}: {exc}") from exc
        if response.is_error:
            raise _error_from_response(response)
        result: api.ArtifactPublic = response.json()
        return result

    def delete_artifact(self, run_id: int, path: str, *, attempt: int) -> None:
        self.request(
            "DELETE", f"/runs/{run_id}/artifacts/{quote(path, safe='/')}", params={"attempt": attempt}
        )

    # -- events -----------------------------------------------------------------------------------------

    def events(self, run_id: int, *, read_timeout: float | None = None) -> Iterator[SseEvent]:
        """The run's server-sent events (``status``, ``progress``, ``metrics``, ``end``) as they come.

        The stream ends after the ``end`` event or when the server closes it. ``read_timeout`` bounds
        the silence between events (None: wait forever).
        """
        timeout = httpx.Timeout(self.timeout, read=read_timeout)
        headers = {**self._headers(), "Accept": "text/event-stream"}
        try:
            with self._http.stream("GET", f"/runs/{run_id}/events", headers=headers, timeout=timeout) as resp:
                if resp.is_error:
                    resp.read()
                    raise _error_from_response(resp)
                for event in parse_sse(resp.iter_lines()):
                    yield event
                    if event.event == "end":
                        return
        except httpx.TransportError as exc:
            raise ApiUnavailable(f"GET /runs/{run_id}/events: {type(exc).__name__}: {exc}") from exc


def parse_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Server-sent events from a stream of lines (the text/event-stream format of the HTML standard)."""
    event = "message"
    data: list[str] = []
    event_id: str | None = None
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                text = "\n".join(data)
                try:
                    value: Any = json.loads(text)
                except ValueError:
                    value = text
                yield SseEvent(event=event, data=value, id=event_id)
            event, data = "message", []
            continue
        if line.startswith(":"):  # comment / keep-alive
            continue
        field, _, value_text = line.partition(":")
        value_text = value_text.removeprefix(" ")
        if field == "event":
            event = value_text
        elif field == "data":
            data.append(value_text)
        elif field == "id":
            event_id = value_text
    if data:
        text = "\n".join(data)
        try:
            tail: Any = json.loads(text)
        except ValueError:
            tail = text
        yield SseEvent(event=event, data=tail, id=event_id)
