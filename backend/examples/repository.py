"""All queries on per-example tables. Pages are keyset reads on the primary key (run, table, idx) or the
unique key index (run, table, key): a table of 1,000,000 rows reads a page as fast as one of 100."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    String,
    Text,
    and_,
    cast,
    delete,
    exists,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from backend.db import utcnow
from backend.models import Run, RunExample, RunExampleTable

# rows per INSERT: 5 parameters a row, under SQLite's 32,766 bound parameters
_CHUNK = 1000


def _insert(session: Session) -> Any:
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


def lock_table(session: Session, run_id: int, table: str) -> tuple[int, int | None]:
    """Make sure the table's count row exists and lock it (Postgres: concurrent posts into one table take
    turns; SQLite serialises writers anyway); its stored row count and the attempt that wrote it."""
    ins = _insert(session)(RunExampleTable).values(
        run_id=run_id, table_name=table, rows=0, updated_at=utcnow()
    )
    session.execute(ins.on_conflict_do_nothing(index_elements=["run_id", "table_name"]))
    stmt = (
        select(RunExampleTable.rows, RunExampleTable.attempt)
        .where(RunExampleTable.run_id == run_id, RunExampleTable.table_name == table)
        .with_for_update()
    )
    rows, attempt = session.execute(stmt).one()
    return int(rows), None if attempt is None else int(attempt)


def clear_table(session: Session, run_id: int, table: str) -> None:
    """Delete the table's rows (a newer attempt takes it over; its count row is set by the caller)."""
    session.execute(
        delete(RunExample)
        .where(RunExample.run_id == run_id, RunExample.table_name == table)
        .execution_options(synchronize_session=False)
    )


def stored_at(session: Session, run_id: int, table: str, idxs: Sequence[int]) -> dict[int, str]:
    """``{idx: key}`` of the stored rows among ``idxs``."""
    found: dict[int, str] = {}
    for i in range(0, len(idxs), _CHUNK):
        stmt = select(RunExample.idx, RunExample.key).where(
            RunExample.run_id == run_id,
            RunExample.table_name == table,
            RunExample.idx.in_(idxs[i : i + _CHUNK]),
        )
        found.update({int(idx): key for idx, key in session.execute(stmt)})
    return found


def stored_keys(session: Session, run_id: int, table: str, keys: Sequence[str]) -> dict[str, int]:
    """``{key: idx}`` of the stored rows among ``keys``."""
    found: dict[str, int] = {}
    for i in range(0, len(keys), _CHUNK):
        stmt = select(RunExample.key, RunExample.idx).where(
            RunExample.run_id == run_id,
            RunExample.table_name == table,
            RunExample.key.in_(keys[i : i + _CHUNK]),
        )
        found.update({key: int(idx) for key, idx in session.execute(stmt)})
    return found


def upsert_rows(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows`` (run_id, table_name, idx, key, data, created_at), replacing a stored row of the
    same (run, table, idx): a re-sent batch overwrites, never duplicates."""
    # one compiled statement, executed over the rows (SQLAlchemy's insertmanyvalues batches them into
    # multi-row INSERTs): no statement text of 6,000 parameters compiled per batch
    ins = _insert(session)(RunExample)
    stmt = ins.on_conflict_do_update(
        index_elements=["run_id", "table_name", "idx"],
        set_={"key": ins.excluded.key, "data": ins.excluded.data, "created_at": ins.excluded.created_at},
    )
    for i in range(0, len(rows), _CHUNK):
        session.execute(stmt, list(rows[i : i + _CHUNK]))


def set_count(
    session: Session, run_id: int, table: str, rows: int, attempt: int | None, where: list[Any]
) -> bool:
    """Store the table's row count and writing attempt (None: keep the stored one) if ``where``
    (conditions on the run) holds; False if it does not (the writing attempt lost the run meanwhile)."""
    stmt = update(RunExampleTable).where(
        RunExampleTable.run_id == run_id, RunExampleTable.table_name == table
    )
    if where:
        stmt = stmt.where(exists().where(Run.id == run_id, *where))
    values: dict[str, Any] = {"rows": rows, "updated_at": utcnow()}
    if attempt is not None:
        values["attempt"] = attempt
    result = session.execute(stmt.values(**values).execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0))


def tables(session: Session, run_id: int) -> list[tuple[str, int]]:
    stmt = (
        select(RunExampleTable.table_name, RunExampleTable.rows)
        .where(RunExampleTable.run_id == run_id)
        .order_by(RunExampleTable.table_name)
    )
    return [(name, int(rows)) for name, rows in session.execute(stmt)]


def count(session: Session, run_id: int, table: str) -> int | None:
    stmt = select(RunExampleTable.rows).where(
        RunExampleTable.run_id == run_id, RunExampleTable.table_name == table
    )
    rows = session.execute(stmt).scalar_one_or_none()
    return None if rows is None else int(rows)


def page(
    session: Session,
    run_id: int,
    table: str,
    after: int | None,
    limit: int,
    conditions: Sequence[ColumnElement[bool]] = (),
) -> list[tuple[int, str, dict[str, Any]]]:
    """Up to ``limit`` rows after idx ``after``, in idx order. ``conditions`` narrow the rows (a filter
    compiled from the query language goes here)."""
    stmt = select(RunExample.idx, RunExample.key, RunExample.data).where(
        RunExample.run_id == run_id, RunExample.table_name == table, *conditions
    )
    if after is not None:
        stmt = stmt.where(RunExample.idx > after)
    stmt = stmt.order_by(RunExample.idx).limit(limit)
    return [(int(i), k, d) for i, k, d in session.execute(stmt)]


def key_at(session: Session, run_id: int, table: str, after: str | None, n: int) -> str | None:
    """The ``n``-th key after ``after`` in key order (an index-only walk), or None if fewer remain."""
    stmt = select(RunExample.key).where(RunExample.run_id == run_id, RunExample.table_name == table)
    if after is not None:
        stmt = stmt.where(RunExample.key > after)
    return session.execute(stmt.order_by(RunExample.key).offset(n - 1).limit(1)).scalar_one_or_none()


def count_keys(session: Session, run_id: int, table: str, after: str | None, upto: str | None) -> int:
    """Rows of the run's table with ``after < key <= upto`` (either bound left out when None)."""
    stmt = select(func.count()).where(RunExample.run_id == run_id, RunExample.table_name == table)
    if after is not None:
        stmt = stmt.where(RunExample.key > after)
    if upto is not None:
        stmt = stmt.where(RunExample.key <= upto)
    return int(session.execute(stmt).scalar_one())


Differing = tuple[int, str, dict[str, Any], int | None, dict[str, Any] | None]


def _field_differs(mine: Any, theirs: Any, field: str, dialect: str) -> ColumnElement[bool]:
    """Whether the two rows' JSON text of ``field`` differs (either lacking it included)."""
    if dialect == "postgresql":
        # a json column: the field's text as posted; NULL where the row lacks it
        a = cast(func.json_extract_path(mine, literal(field, String)), Text)
        b = cast(func.json_extract_path(theirs, literal(field, String)), Text)
        return a.is_distinct_from(b)
    # SQLite's json_extract gives a scalar as an SQL value (true as 1): its json_type tells them apart
    path = literal('$."' + field + '"', String)  # the field has no quote (compare.FIELD_PATTERN)
    return or_(
        func.json_type(mine, path).is_distinct_from(func.json_type(theirs, path)),
        func.json_extract(mine, path).is_distinct_from(func.json_extract(theirs, path)),
    )


def differing(
    session: Session,
    run_id: int,
    other_id: int,
    table: str,
    after: str | None,
    upto: str | None,
    limit: int,
    fields: Sequence[str] = (),
) -> list[Differing]:
    """Up to ``limit`` rows of the run's table with ``after < key <= upto``, in key order, whose key the
    other run's table lacks or holds with other JSON text (of ``fields`` only, when given): ``(idx, key,
    data, other idx, other data)`` (other idx None: the other run lacks it). Compared in the database, so
    only candidates travel; JSON that differs only in its text (key order), or only within a tolerance, is
    told apart by the caller (backend/examples/compare.py)."""
    other = aliased(RunExample)
    differs: ColumnElement[bool]
    if fields:
        dialect = session.get_bind().dialect.name
        differs = or_(*(_field_differs(RunExample.data, other.data, f, dialect) for f in fields))
    else:
        differs = cast(RunExample.data, Text) != cast(other.data, Text)
    stmt = (
        select(RunExample.idx, RunExample.key, RunExample.data, other.idx, other.data)
        .select_from(RunExample)
        .outerjoin(
            other, and_(other.run_id == other_id, other.table_name == table, other.key == RunExample.key)
        )
        .where(RunExample.run_id == run_id, RunExample.table_name == table, or_(other.idx.is_(None), differs))
    )
    if after is not None:
        stmt = stmt.where(RunExample.key > after)
    if upto is not None:
        stmt = stmt.where(RunExample.key <= upto)
    rows = session.execute(stmt.order_by(RunExample.key).limit(limit))
    return [(int(i), k, d, None if oi is None else int(oi), od) for i, k, d, oi, od in rows]


def only_in(
    session: Session, run_id: int, other_id: int, table: str, after: str | None, limit: int
) -> list[tuple[int, str, dict[str, Any]]]:
    """Rows of ``run_id``'s table whose key ``other_id``'s table lacks, in key order after ``after``
    (an anti-join on the key index)."""
    other = aliased(RunExample)
    missing = ~exists().where(
        and_(other.run_id == other_id, other.table_name == table, other.key == RunExample.key)
    )
    stmt = select(RunExample.idx, RunExample.key, RunExample.data).where(
        RunExample.run_id == run_id, RunExample.table_name == table, missing
    )
    if after is not None:
        stmt = stmt.where(RunExample.key > after)
    stmt = stmt.order_by(RunExample.key).limit(limit)
    return [(int(i), k, d) for i, k, d in session.execute(stmt)]


def peers(
    session: Session, run_id: int, experiment_id: int, table: str, limit: int
) -> list[tuple[int, int, str | None, str, int]]:
    """The experiment's other runs that hold ``table``, in run order: ``(id, index, name, status, rows)``
    (a join of the experiment's runs with the tables' count rows on their primary key)."""
    stmt = (
        select(Run.id, Run.index, Run.name, Run.status, RunExampleTable.rows)
        .join(RunExampleTable, and_(RunExampleTable.run_id == Run.id, RunExampleTable.table_name == table))
        .where(Run.experiment_id == experiment_id, Run.id != run_id)
        .order_by(Run.index, Run.id)
        .limit(limit)
    )
    return [(int(i), int(n), name, status, int(rows)) for i, n, name, status, rows in session.execute(stmt)]
