"""Per-example tables: a batch of rows posted by the run's writing attempt (replacing rows re-sent with
their idx; a newer attempt's first batch replaces the whole table), a table paged by idx, and two runs'
tables diffed on the examples' keys."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.orm import Session

from backend.auth.principal import Principal
from backend.db import utcnow
from backend.errors import Conflict, Invalid, TooLarge
from backend.examples import compare, repository
from backend.examples.compare import DiffRule
from backend.examples.schemas import (
    ExampleDiff,
    ExampleDiffPage,
    ExamplePage,
    ExamplePeer,
    ExampleRow,
    ExamplesAccepted,
    ExamplesIn,
    ExampleTable,
)
from backend.http import cursor
from backend.runs import repository as runs_repo
from backend.runs import service as runs

MAX_BATCH = 1_000  # rows per post (the SDK's batches are smaller)
MAX_ROW_BYTES = 64 * 1024  # one row's data as JSON
MAX_PAGE = 1_000
DIFF_BUDGET = 10_000  # rows of the run compared at most per diff page: few changes still answer quickly
# candidate rows read at most at a time while a diff page fills (the first read takes the page's limit, each
# further one twice the last): rows that differ only within the tolerance are read and dropped in bounded batches
DIFF_CHUNK = 1_000


def post(session: Session, principal: Principal, run_id: int, body: ExamplesIn) -> ExamplesAccepted:
    run = runs.get_for_worker(session, principal, run_id)
    if len(body.rows) > MAX_BATCH:
        raise TooLarge(f"an example batch holds at most {MAX_BATCH} rows; this one has {len(body.rows)}")
    runs.check_writer(run, body.attempt)
    errors: list[dict[str, Any]] = []
    seen_idx: dict[int, int] = {}
    seen_key: dict[str, int] = {}
    for i, row in enumerate(body.rows):
        size = len(json.dumps(row.data, separators=(",", ":")))
        if size > MAX_ROW_BYTES:
            errors.append(
                {
                    "loc": ["body", "rows", i, "data"],
                    "msg": f"{size:,} bytes as JSON; at most {MAX_ROW_BYTES:,}",
                    "type": "too_large",
                }
            )
        if row.idx in seen_idx:
            errors.append(
                {
                    "loc": ["body", "rows", i, "idx"],
                    "msg": f"idx {row.idx} twice in the batch",
                    "type": "duplicate",
                }
            )
        if row.key in seen_key:
            errors.append(
                {
                    "loc": ["body", "rows", i, "key"],
                    "msg": f"key {row.key!r} twice in the batch",
                    "type": "duplicate",
                }
            )
        seen_idx[row.idx], seen_key[row.key] = i, i
    if errors:
        raise Invalid(f"example row {errors[0]['loc'][2]}: {errors[0]['msg']}", errors)
    if not body.rows:
        return ExamplesAccepted(
            table=body.table, accepted=0, rows=repository.count(session, run.id, body.table) or 0
        )
    stored_rows, writer = repository.lock_table(session, run.id, body.table)
    if body.attempt is not None and writer is not None and writer > body.attempt:
        # the run was handed on between the ownership check and the lock: the newer attempt's rows stay
        raise Conflict(
            f"attempt {body.attempt} no longer owns run {run.id}: attempt {writer} wrote table {body.table!r}"
        )
    if body.attempt is not None and writer is not None and writer < body.attempt:
        # a resumed run is a new attempt: its rows replace the earlier attempt's, whatever their order
        repository.clear_table(session, run.id, body.table)
        stored_rows = 0
    # a key already held by another row of the table is refused (diffs match rows on their keys)
    holders = repository.stored_keys(session, run.id, body.table, list(seen_key))
    for key, idx in holders.items():
        i = seen_key[key]
        if idx != body.rows[i].idx:
            errors.append(
                {
                    "loc": ["body", "rows", i, "key"],
                    "msg": f"key {key!r} is already row {idx} of table {body.table!r}",
                    "type": "duplicate",
                }
            )
    if errors:
        raise Invalid(f"example row {errors[0]['loc'][2]}: {errors[0]['msg']}", errors)
    existing = repository.stored_at(session, run.id, body.table, list(seen_idx))
    now = utcnow()
    repository.upsert_rows(
        session,
        [
            {
                "run_id": run.id,
                "table_name": body.table,
                "idx": r.idx,
                "key": r.key,
                "data": r.data,
                "created_at": now,
            }
            for r in body.rows
        ],
    )
    total = stored_rows + len(body.rows) - len(existing)
    where = runs_repo.owned(body.attempt) if body.attempt is not None else []
    if not repository.set_count(session, run.id, body.table, total, body.attempt, where):
        raise Conflict(f"attempt {body.attempt} no longer owns run {run.id}")
    return ExamplesAccepted(table=body.table, accepted=len(body.rows), rows=total)


def tables(session: Session, principal: Principal, run_id: int) -> list[ExampleTable]:
    run = runs.get_visible(session, principal, run_id)
    return [ExampleTable(name=name, rows=rows) for name, rows in repository.tables(session, run.id)]


MAX_PEERS = 1_000


def peers(session: Session, principal: Principal, run_id: int, table: str, limit: int) -> list[ExamplePeer]:
    """The run's experiment's other runs that hold ``table``, in run order (the diff's picker)."""
    run = runs.get_visible(session, principal, run_id)
    return [
        ExamplePeer(id=i, index=n, name=name, status=status, rows=rows)
        for i, n, name, status, rows in repository.peers(session, run.id, run.experiment_id, table, limit)
    ]


def page(
    session: Session,
    principal: Principal,
    run_id: int,
    table: str,
    cursor_: str | None,
    limit: int,
    conditions: Sequence[ColumnElement[bool]] = (),
) -> ExamplePage:
    """A page of the table's rows after the cursor, in idx order. ``conditions`` narrow the rows (where a
    filter compiled from the query language, ``q``, goes: the page stays a keyset read); ``total`` is the
    table's row count either way."""
    run = runs.get_visible(session, principal, run_id)
    total = repository.count(session, run.id, table) or 0  # a table not posted yet: empty
    after = cursor.decode_int(cursor_, "idx")
    rows = repository.page(session, run.id, table, after, limit + 1, conditions)
    more = len(rows) > limit
    rows = rows[:limit]
    return ExamplePage(
        run_id=run.id,
        table=table,
        total=total,
        items=[ExampleRow(idx=i, key=k, data=d) for i, k, d in rows],
        next_cursor=cursor.encode({"idx": rows[-1][0]}) if more else None,
    )


def _diff_cursor(value: str | None) -> tuple[int, str | None]:
    """(phase, key after): phase 1 walks the run's keys, phase 2 the other run's keys the run lacks."""
    data = cursor.decode(value)
    if data is None:
        return 1, None
    phase, key = data.get("phase"), data.get("key")
    if phase not in (1, 2) or not (key is None or isinstance(key, str)):
        raise Invalid(
            "invalid cursor",
            [{"loc": ["query", "cursor"], "msg": "not a cursor from next_cursor", "type": "cursor"}],
        )
    return int(phase), key


def diff(
    session: Session,
    principal: Principal,
    run_id: int,
    other_id: int,
    table: str,
    cursor_: str | None,
    limit: int,
    rule: DiffRule = DiffRule(),
) -> ExampleDiffPage:
    """The keys of ``table`` whose rows differ between the two runs under ``rule`` (its fields, its
    tolerance for numbers: backend/examples/compare.py), or that one run only has, both sides.

    Phase 1 walks the run's keys in windows of ``DIFF_BUDGET`` (the window's end found on the key index),
    and the database joins each window with the other run's rows on the key and keeps those whose JSON
    text (of the rule's fields) differs or that the other run lacks; the rule decides on these candidates,
    read a chunk at a time until the page is full or the window ends, so rows that differ only within the
    tolerance never leave a page short while rows remain. A page can hold fewer than ``limit`` items and
    still have a cursor. Phase 2 reads the other run's keys that the run lacks (an anti-join). Keys are
    only compared by the database, never sorted here."""
    run = runs.get_visible(session, principal, run_id)
    other = runs.get_visible(session, principal, other_id)
    phase, after = _diff_cursor(cursor_)
    items: list[ExampleDiff] = []
    scanned = 0
    next_cursor: str | None = None
    if phase == 1:
        upper = repository.key_at(session, run.id, table, after, DIFF_BUDGET)
        end, start, chunk, full = upper, after, limit, False
        while not full:
            found = repository.differing(session, run.id, other.id, table, start, upper, chunk, rule.fields)
            for idx, key, data, other_idx, other_data in found:
                mine = ExampleRow(idx=idx, key=key, data=data)
                if other_idx is None:
                    items.append(ExampleDiff(key=key, change="only_run", run=mine, other=None))
                else:
                    theirs = ExampleRow(idx=other_idx, key=key, data=other_data or {})
                    fields = compare.differing(data, theirs.data, rule)
                    if compare.changed(fields, rule):
                        items.append(
                            ExampleDiff(key=key, change="changed", run=mine, other=theirs, differing=fields)
                        )
                if len(items) == limit:
                    end, full = key, True  # the window goes on after the page's last item
                    break
            if len(found) < chunk:
                break  # the window holds no more candidates
            start, chunk = found[-1][1], min(chunk * 2, DIFF_CHUNK)
        scanned = repository.count_keys(session, run.id, table, after, end)
        if end is not None:
            next_cursor = cursor.encode({"phase": 1, "key": end})
        else:
            phase, after = 2, None
    if phase == 2 and len(items) < limit:
        room = limit - len(items)
        rows = repository.only_in(session, other.id, run.id, table, after, room + 1)
        more = len(rows) > room
        rows = rows[:room]
        scanned += len(rows)
        items.extend(
            ExampleDiff(key=k, change="only_other", run=None, other=ExampleRow(idx=i, key=k, data=d))
            for i, k, d in rows
        )
        next_cursor = cursor.encode({"phase": 2, "key": rows[-1][1]}) if more else None
    return ExampleDiffPage(
        run_id=run.id,
        other_id=other.id,
        table=table,
        fields=list(rule.fields),
        tolerance=rule.rel,
        abs_tolerance=rule.abs,
        items=items,
        scanned=scanned,
        next_cursor=next_cursor,
    )
