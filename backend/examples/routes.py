"""Per-example tables of a run: posted by its writing attempt, paged and diffed by the project's viewers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from backend import query
from backend.auth.dependencies import PrincipalDep
from backend.errors import Invalid
from backend.examples import compare, service
from backend.examples.schemas import (
    TABLE_PATTERN,
    ExampleDiffPage,
    ExamplePage,
    ExamplePeer,
    ExamplesAccepted,
    ExamplesIn,
    ExampleTable,
)
from backend.http.deps import Id, SessionDep

router = APIRouter(prefix="/runs", tags=["examples"])

TableQuery = Annotated[str, Query(pattern=TABLE_PATTERN, description="the table's name")]
CursorQuery = Annotated[str | None, Query(max_length=1000, description="next_cursor of the previous page")]


@router.post(
    "/{run_id}/examples",
    response_model=ExamplesAccepted,
    operation_id="examples-post",
    responses={413: {"description": "more than 1,000 rows"}},
)
def post_examples(
    run_id: Id, body: ExamplesIn, principal: PrincipalDep, session: SessionDep
) -> ExamplesAccepted:
    # the body's size (16 MiB) and the caller's credential were checked before it was read (backend/http/limits.py)
    return service.post(session, principal, run_id, body)


@router.get("/{run_id}/example-tables", response_model=list[ExampleTable], operation_id="examples-tables")
def example_tables(run_id: Id, principal: PrincipalDep, session: SessionDep) -> list[ExampleTable]:
    return service.tables(session, principal, run_id)


@router.get("/{run_id}/examples/peers", response_model=list[ExamplePeer], operation_id="examples-peers")
def example_peers(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    table: TableQuery,
    limit: Annotated[int, Query(ge=1, le=service.MAX_PEERS)] = 200,
) -> list[ExamplePeer]:
    """The other runs of the run's experiment that hold the table, in run order (what to diff with)."""
    return service.peers(session, principal, run_id, table, limit)


@router.get("/{run_id}/examples", response_model=ExamplePage, operation_id="examples-list")
def list_examples(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    table: TableQuery,
    cursor: CursorQuery = None,
    limit: Annotated[int, Query(ge=1, le=service.MAX_PAGE)] = 100,
    q: Annotated[
        str | None,
        Query(
            max_length=4000,
            description="a query-language filter on the rows (docs/api.md, Query language; fields idx, key, "
            'data.<path>): `data.correct = false and data.topic contains "sport"`',
        ),
    ] = None,
) -> ExamplePage:
    conditions = []
    if q is not None and q.strip():
        try:
            conditions.append(query.where(query.EXAMPLES, q, session.get_bind().dialect.name))
        except query.QueryError as exc:
            raise query.invalid(exc, "q") from None
    return service.page(session, principal, run_id, table, cursor, limit, conditions)


@router.get("/{run_id}/examples/diff", response_model=ExampleDiffPage, operation_id="examples-diff")
def diff_examples(
    run_id: Id,
    principal: PrincipalDep,
    session: SessionDep,
    other: Annotated[int, Query(ge=1, lt=2**31, description="the run to compare with")],
    table: TableQuery,
    cursor: CursorQuery = None,
    limit: Annotated[int, Query(ge=1, le=service.MAX_PAGE)] = 50,
    fields: Annotated[
        str | None,
        Query(
            max_length=4000,
            description="the data fields that define a change, comma-separated (`prediction,correct`); "
            "absent or empty: every field. A key whose other fields differ is no change then",
        ),
    ] = None,
    tolerance: Annotated[
        float,
        Query(
            ge=0,
            le=1,
            allow_inf_nan=False,
            description="relative tolerance for numbers (also inside arrays and objects): a and b are the "
            "same when |a - b| <= max(tolerance * max(|a|, |b|), abs_tolerance)",
        ),
    ] = compare.DEFAULT_TOLERANCE,
    abs_tolerance: Annotated[
        float, Query(ge=0, allow_inf_nan=False, description="absolute tolerance for numbers (see tolerance)")
    ] = 0.0,
) -> ExampleDiffPage:
    chosen = compare.parse_fields(fields)
    if isinstance(chosen, str):
        raise Invalid(
            f"fields: {chosen}", [{"loc": ["query", "fields"], "msg": chosen, "type": "value_error"}]
        )
    rule = compare.DiffRule(fields=chosen, rel=tolerance, abs=abs_tolerance)
    return service.diff(session, principal, run_id, other, table, cursor, limit, rule)
