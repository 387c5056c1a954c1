"""What the data blocks share when they resolve: the runs a block shows (its query or pinned ids, only
ever the report's project's; a frozen block's runs are the ones its cut-off names), the cut-off a block
takes when it is frozen, the series points up to a cut-off, and a run's field values for tables and
groups."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from backend import query
from backend.errors import Invalid
from backend.metrics import reads
from backend.models import Run
from backend.reports import repository
from backend.reports.blocks.base import Cutoff, DataBlock, RunCutoff
from backend.reports.data import BlockData, RunInfo
from backend.reports.render.context import ResolveContext

MAX_POINTS = 500  # points a series of a figure keeps (buckets of the run's series, their last values)


def check_query(ctx: ResolveContext, text: str, loc: list[str | int]) -> None:
    """A block's query as the runs page would take it: 422 at the block's field otherwise."""
    try:
        query.where(query.RUNS, text, ctx.dialect)
    except query.QueryError as exc:
        raise Invalid(
            f"{'.'.join(str(p) for p in loc[1:])}: {exc}",
            [{"loc": loc, "msg": str(exc), "type": "query_syntax"}],
        ) from None


def _selected(ctx: ResolveContext, block: DataBlock) -> tuple[list[Run], int]:
    """The runs the block's source selects now, and how many it names that are not shown."""
    source = block.source
    if source.query is not None and source.query.strip():
        condition = query.where(query.RUNS, source.query, ctx.dialect, ctx.now)
        return repository.runs_matching(ctx.session, ctx.project_id, condition, source.limit), 0
    return _pinned(ctx, source.run_ids)


def _pinned(ctx: ResolveContext, run_ids: Sequence[int]) -> tuple[list[Run], int]:
    found = repository.runs_by_id(ctx.session, run_ids)
    shown = [found[i] for i in run_ids if i in found and found[i].project_id == ctx.project_id]
    return shown, len(run_ids) - len(shown)


def runs_of(ctx: ResolveContext, block: DataBlock) -> tuple[list[Run], int]:
    """The runs a block shows: a frozen block's are those its cut-off names (its query is not asked
    again, so a run set that changed later never changes it), a live block's those its source selects."""
    if block.mode == "frozen" and block.cutoff is not None:
        runs, missing = _pinned(ctx, [r.run_id for r in block.cutoff.runs])
        # pinned runs of another project never enter a cut-off: they are still named, and not shown
        shown = {r.id for r in runs}
        return runs, max(missing, sum(1 for i in block.source.run_ids if i not in shown))
    return _selected(ctx, block)


def take_cutoff(ctx: ResolveContext, block: DataBlock, keys: Sequence[str] | None) -> Cutoff:
    """What the block's runs have reached now: each series' last step and row version (``keys``: the
    series the block shows; None: all of them)."""
    runs, _ = _selected(ctx, block)
    heads = repository.latest(ctx.session, [r.id for r in runs], keys)
    return Cutoff(
        at=ctx.now,
        runs=[
            RunCutoff(
                run_id=r.id,
                attempt=r.attempt,
                status=r.status,
                steps={k: v[0] for k, v in heads.get(r.id, {}).items()},
                revs={k: v[1] for k, v in heads.get(r.id, {}).items()},
            )
            for r in runs
        ],
    )


def changed_since(ctx: ResolveContext, block: DataBlock) -> str | None:
    """How a frozen block's runs changed since its cut-off in a way that can reach the steps it covers,
    in a few words (None: no such change): a run now at another attempt (retried, requeued or resumed:
    its next attempt writes its steps again), or a series whose latest row is at the cut-off's step with
    another row version (that point written again) or below it. A run that only went on (steps after the
    cut-off, which also raise the row version) is no such change. Runs not shown are not looked at."""
    if block.mode != "frozen" or block.cutoff is None:
        return None
    cuts = block.cutoff.runs
    runs = {
        i: r
        for i, r in repository.runs_by_id(ctx.session, [c.run_id for c in cuts]).items()
        if r.project_id == ctx.project_id
    }
    keys = sorted({k for c in cuts for k in c.revs})
    heads = repository.latest(ctx.session, list(runs), keys) if keys else {}
    for cut in cuts:
        run = runs.get(cut.run_id)
        if run is None:
            continue
        if run.attempt != cut.attempt:
            return f"run {run.id} is at attempt {run.attempt}, frozen at attempt {cut.attempt}"
        for key, step in cut.steps.items():
            rev = cut.revs.get(key)
            if rev is None:
                continue  # not a metric series (an examples table's row count)
            head = heads.get(run.id, {}).get(key)
            if head is None or head[0] < step or (head[0] == step and head[1] != rev):
                return f"run {run.id}'s {key} was written again at or below step {step}"
    return None


def cutoff_of(block: DataBlock, run_id: int) -> RunCutoff | None:
    if block.mode != "frozen" or block.cutoff is None:
        return None
    return next((r for r in block.cutoff.runs if r.run_id == run_id), None)


def empty(ctx: ResolveContext, block: DataBlock) -> BlockData:
    """The block's data without runs yet: live or frozen, as of its cut-off or now."""
    frozen = block.mode == "frozen" and block.cutoff is not None
    return BlockData(
        block_id=block.id,
        type=block.type,
        live=block.mode == "live",
        as_of=block.cutoff.at if frozen and block.cutoff is not None else ctx.now,
    )


def run_info(run: Run, cut: RunCutoff | None) -> RunInfo:
    return RunInfo(
        run_id=run.id,
        name=run.name,
        experiment_id=run.experiment_id,
        status=cut.status if cut is not None else run.status,
        attempt=cut.attempt if cut is not None else run.attempt,
    )


def finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def points(ctx: ResolveContext, run_id: int, key: str, last: int | None) -> list[tuple[int, float | None]]:
    """The series as at most MAX_POINTS points (each bucket's last value at its last step), up to step
    ``last`` (a cut-off; None: all of it)."""
    first, newest, _ = reads.head(ctx.session, run_id, key)
    if first is None or newest is None:
        return []
    hi = newest if last is None else min(newest, last)
    if hi < first:
        return []
    rows = reads.buckets(ctx.session, run_id, key, first, hi, MAX_POINTS)
    return [(int(r[1]), finite(r[4])) for r in rows]


def _path(value: Any, parts: list[str]) -> Any:
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def field_value(ctx: ResolveContext, run: Run, name: str, cut: RunCutoff | None) -> Any:
    """A run's value of a query-language field for a table cell or a group: ``metrics.<key>`` its
    latest value (a frozen block: at its cut-off's step), ``params.<path>`` its spec's, or a column."""
    head, _, rest = name.partition(".")
    if head == "metrics" and rest:
        if cut is not None:
            step = cut.steps.get(rest)
            found = repository.value_at(ctx.session, run.id, rest, step) if step is not None else None
            return finite(found[1]) if found is not None else None
        latest = repository.latest(ctx.session, [run.id], [rest]).get(run.id, {}).get(rest)
        return finite(latest[2]) if latest is not None else None
    if head == "params" and rest:
        value = _path(run.params, rest.split("."))
        return value if value is None or isinstance(value, str | int | float | bool) else str(value)
    if name == "status" and cut is not None:
        return cut.status
    columns = {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "kind": run.kind,
        "experiment_id": run.experiment_id,
        "attempt": run.attempt,
        "index": run.index,
        "created_at": run.created_at.isoformat() if run.created_at else None,
    }
    return columns.get(name)
