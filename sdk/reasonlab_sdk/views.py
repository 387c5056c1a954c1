"""A saved view's state as ``list_runs`` arguments: what the dashboard's runs page asks of ``GET /runs``
for the same state (frontend/src/lib/runsQuery.ts and its RunsPage, ported line for line).

    view = client.get_view_by_id(view_id)
    project = next(p["name"] for p in client.list_projects() if p["id"] == view["project_id"])
    page = client.list_runs(project=project, **view_runs_args(view))

- ``q``: the view's query as typed; text without any operator, quote, parenthesis or keyword is a name
  search (``name contains "<text>"``), ``#7`` is ``id = 7`` and a bare number also finds names holding it.
- Not grouped: ``sort`` and ``order`` of the view's sort (``created`` is ``created_at``, a metric column
  ``metrics.<key>`` or ``<aggregate>(metrics.<key>)``).
- Grouped: ``group_by`` (``default`` for "all spec fields but seed", else the fields), ``metrics`` (each
  metric column's expression, once), and the sort when the groups have it: a metric column by its mean
  (``metric-mean:<expression>``), a field only when it is a group field.

The state's ``columns`` (other than metric ones), widths, ``chart`` and ``charts`` ask nothing of
``GET /runs``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypedDict, cast

from reasonlab_sdk import api_types as api

DEFAULT_GROUP = "all spec fields but seed"  # group_by's literal: every spec field but seed

_OPERATOR = re.compile(
    r"""[=<>!()"']|\b(and|or|not|in|contains|exists|missing)\b""", re.IGNORECASE | re.ASCII
)
_ID = re.compile(r"(#?)([0-9]{1,15})")
_PLAIN_METRIC_KEY = re.compile(r"""[^\s=<>!(),"']+""")


class ViewRunsArgs(TypedDict, total=False):
    """``list_runs`` keywords of a view; a part the view leaves at its default is absent."""

    q: str
    sort: str
    order: Literal["asc", "desc"]
    group_by: str
    metrics: list[str]


def _js_string(text: str) -> str:
    """``text`` as a double-quoted string, as the dashboard writes one (JSON.stringify)."""
    return json.dumps(text, ensure_ascii=False)


def effective_query(text: str) -> str | None:
    """The expression a query box's text asks for (None: no filter), as the dashboard reads it."""
    t = text.strip()
    if not t:
        return None
    if _OPERATOR.search(t):
        return t
    m = _ID.fullmatch(t)
    if m:
        return f"id = {m[2]}" if m[1] else f"id = {m[2]} or name contains {_js_string(t)}"
    return f"name contains {_js_string(t)}"


def is_metric_field(field: str) -> bool:
    return field.startswith("metrics.") and len(field) > len("metrics.")


def metric_expr(field: str, aggregate: str | None) -> str:
    """A metric column as a field of the query language: ``metrics.k`` (last), ``min(metrics.k)``, ...;
    a key with spaces, quotes or operators is quoted."""
    key = field[len("metrics.") :]
    ref = f"metrics.{key}" if _PLAIN_METRIC_KEY.fullmatch(key) else f"metrics.{_js_string(key)}"
    return ref if not aggregate or aggregate == "last" else f"{aggregate}({ref})"


def group_by_param(group_by: list[str] | str | None) -> str | None:
    """``group_by`` as the API takes it: ``default`` or the fields, comma-separated."""
    if not group_by:
        return None
    return "default" if group_by == DEFAULT_GROUP else ",".join(group_by)


def metrics_param(columns: list[api.Column]) -> list[str] | None:
    """Each metric column's expression, in column order, once."""
    exprs = [metric_expr(c["field"], c.get("aggregate")) for c in columns if is_metric_field(c["field"])]
    return list(dict.fromkeys(exprs)) or None


def _sort(sort: api.Sort | None, group_by: list[str] | str | None) -> tuple[str | None, Any]:
    if not sort:
        return None, None
    field, order, aggregate = sort["field"], sort.get("order", "asc"), sort.get("aggregate")
    if not group_by:
        if field == "created":
            return "created_at", order
        return (metric_expr(field, aggregate) if is_metric_field(field) else field), order
    if is_metric_field(field):
        return f"metric-mean:{metric_expr(field, aggregate)}", order
    if isinstance(group_by, list) and field in group_by:
        return field, order
    return None, None  # the groups have no such field: the dashboard leaves them unsorted


def view_runs_args(view: api.ViewPublic | api.ViewState) -> ViewRunsArgs:
    """The ``list_runs`` keywords for a saved view (``get_view``/``list_views``) or a bare state, as the
    dashboard's runs page asks for it. A view of another page (``experiments``, ``compare``) is a
    ``ValueError``: its query is not one over runs."""
    if "state" in view:
        saved = cast(api.ViewPublic, view)
        if saved.get("page", "runs") != "runs":
            raise ValueError(
                f"view {saved.get('name')!r} is a view of the {saved['page']} page, not of the runs page"
            )
        state: api.ViewState = saved["state"]
    else:
        state = cast(api.ViewState, view)
    group_by = state.get("group_by") or None
    out: ViewRunsArgs = {}
    q = effective_query(state.get("query") or "")
    if q:
        out["q"] = q
    sort, order = _sort(state.get("sort"), group_by)
    if sort:
        out["sort"], out["order"] = sort, order
    grouped = group_by_param(group_by)
    if grouped:
        out["group_by"] = grouped
        metrics = metrics_param(state.get("columns") or [])
        if metrics:
            out["metrics"] = metrics
    return out
