"""The runs list (``GET /runs``): the caller's runs, filtered (projects, experiment, status, kind, tag,
``q``), sorted and paged by a keyset (the id, or a metric's latest value) or an offset; or their seed
groups (``group_by``: backend/groups/). What it shares with the experiments list: backend/query/listing.py.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy.orm import Session

from backend import query
from backend.auth.principal import Principal
from backend.errors import Invalid, NotFound
from backend.groups import service as groups
from backend.http import cursor
from backend.models import Experiment, MetricLatest, Run
from backend.projects import service as projects
from backend.query import listing
from backend.runs import present, repository
from backend.runs.schemas import RunPage
from backend.settings import Settings
from common.runs import RUN_STATUSES


def _statuses(values: list[str] | None) -> list[str]:
    """``status`` repeated or comma-separated; Invalid (422) for one that is no run status."""
    statuses = [s for v in values or [] for s in v.split(",") if s]
    for s in statuses:
        if s not in RUN_STATUSES:
            raise Invalid(
                f"status {s!r} is not one of {', '.join(RUN_STATUSES)}",
                [{"loc": ["query", "status"], "msg": f"unknown status {s!r}", "type": "enum"}],
            )
    return statuses


def _project_ids(
    session: Session, principal: Principal, experiment_id: int | None, project: str | None
) -> list[int] | None:
    """The projects listed: an experiment's runs need a viewer of its project (and no project filter)."""
    if experiment_id is None:
        return projects.listed_project_ids(session, principal, project)
    experiment = session.get(Experiment, experiment_id)
    if experiment is None:  # the same answer as another project's experiment: ids cannot be probed
        raise NotFound(f"experiment {experiment_id} not found")
    projects.require_role(session, principal, experiment.project_id, "viewer", f"experiment {experiment_id}")
    return None


def _metric_cursor(raw: str | None) -> tuple[tuple[float, int] | None, int | None]:
    """A metric sort's cursor: ``((value, id), None)`` inside the runs with a value, ``(None, id)`` among
    those without; ``(None, None)`` without a cursor. Invalid (422) for any other shape."""
    data = cursor.decode(raw)
    if data is None:
        return None, None
    if set(data) == {"mid"}:
        return None, cursor.decode_int(raw, "mid")
    value = data.get("mv")
    if set(data) == {"mv", "id"} and isinstance(value, int | float) and not isinstance(value, bool):
        run_id = cursor.decode_int(raw, "id")
        if run_id is not None and math.isfinite(value):
            return (float(value), run_id), None
    raise Invalid(
        "invalid cursor",
        [{"loc": ["query", "cursor"], "msg": "not a cursor from next_cursor", "type": "cursor"}],
    )


def _metric_sort(sort: str) -> tuple[str, Any] | None:
    """``(key, metric_latest column)`` for a sort a keyset walk of metric_latest serves, else None."""
    if sort.startswith("metric:"):  # the older spelling of metrics.<key>: any key but the old summary's own
        key = sort.removeprefix("metric:")
        if not key or key.startswith("_"):
            raise Invalid(
                f"sort {sort!r}: metric:<key> needs a metric key",
                [{"loc": ["query", "sort"], "msg": "metric:<key> needs a metric key", "type": "sort"}],
            )
        return key, MetricLatest.value
    if sort.startswith("metrics.") or sort[:4] in ("min(", "max(") or sort.startswith("last("):
        try:
            return query.metric_sort(sort)
        except query.QueryError as exc:
            raise query.invalid(exc, "sort") from None
    return None


def page(
    session: Session,
    principal: Principal,
    settings: Settings,
    *,
    experiment_id: int | None,
    status: list[str] | None,
    kind: str | None,
    tag: str | None,
    project: str | None,
    q: str | None,
    sort: str,
    desc: bool,
    limit: int,
    cursor_: str | None,
    group_by: str | None,
    metrics: str | None,
) -> RunPage:
    """A page of the runs the caller may see (the parameters as ``GET /runs`` documents them)."""
    statuses = _statuses(status)
    project_ids = _project_ids(session, principal, experiment_id, project)
    stmt = repository.filtered(project_ids, experiment_id, statuses, kind, tag)
    dialect = session.get_bind().dialect.name
    where = listing.condition(query.RUNS, q, dialect)
    if where is not None:
        stmt = stmt.where(where)
    if metrics is not None and group_by is None:
        raise Invalid(
            "metrics: aggregates metric columns over groups; it needs group_by",
            [{"loc": ["query", "metrics"], "msg": "metrics needs group_by", "type": "group_by"}],
        )
    if group_by is not None:
        offset = listing.offset_of(cursor_)
        # no filter but the projects: the default grouping may come from their stored summaries
        whole = None
        if project_ids and experiment_id is None and not statuses and not kind and not tag and where is None:
            whole = project_ids
        with listing.timed(settings, dialect, query.RUNS, None, desc, q):
            found, more = groups.page(
                session,
                stmt,
                group_by,
                metrics,
                sort,
                desc,
                offset,
                limit,
                where is not None,
                whole,
                settings,
            )
        return RunPage(items=[], next_cursor=listing.next_offset(more, offset, limit), groups=found)
    by_metric = _metric_sort(sort)
    # a slow params sort or filter on a large table: its index, built in the background (Postgres)
    with listing.timed(settings, dialect, query.RUNS, sort, desc, q):
        runs, nxt = _runs(session, stmt, sort, desc, limit, cursor_, by_metric, dialect)
    return RunPage(items=present.public(session, runs[:limit], settings.heartbeat_timeout), next_cursor=nxt)


def _runs(
    session: Session,
    stmt: Any,
    sort: str,
    desc: bool,
    limit: int,
    cursor_: str | None,
    by_metric: tuple[str, Any] | None,
    dialect: str,
) -> tuple[list[Run], str | None]:
    """Up to ``limit`` + 1 runs of ``stmt`` in ``sort``'s order from the cursor on, and the next cursor."""
    if sort in ("created_at", "id"):
        runs = repository.page_by_id(session, stmt, desc, listing.after_id(cursor_), limit + 1)
        return runs, listing.next_after_id(runs, limit)
    if by_metric is not None:  # a keyset walk of metric_latest's (key, value) index
        key, column = by_metric
        after, after_missing = _metric_cursor(cursor_)
        rows = repository.page_by_metric(session, stmt, key, column, desc, after, after_missing, limit + 1)
        nxt = None
        if len(rows) > limit:
            last, value = rows[limit - 1]
            nxt = cursor.encode({"mid": last.id} if value is None else {"mv": value, "id": last.id})
        return [run for run, _ in rows], nxt
    field = "finished" if sort == "finished_at" else sort
    ordering = listing.ordering(query.RUNS, field, desc, dialect)
    offset = listing.offset_of(cursor_)
    runs = repository.page_ordered(session, stmt, ordering, offset, limit + 1)
    return runs, listing.next_offset(len(runs) > limit, offset, limit)
