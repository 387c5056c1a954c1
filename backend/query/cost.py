"""A query's cost bounded before it runs: how many tests it makes of each row, and how many of them
search another table (a metric, a result, a tag: a subquery each), each a 422 at the first test past
its limit (docs/api.md, "Query language"). The statement timeout (REASONLAB_STATEMENT_TIMEOUT_MS)
bounds what a query within these limits can still cost."""

from __future__ import annotations

from collections.abc import Iterator

from backend.query.nodes import And, Compare, Contains, Exists, Expr, In, Not, Or
from backend.query.parser import QueryError

# 150 metric tests took 13 s of Postgres time at 1,000,000 runs; 16 stay well under a second there
MAX_LOOKUPS = 16
# every test of a row (a value of ``in`` on a path: each is its own extraction from the spec)
MAX_TESTS = 128
LOOKUP_FIELDS = ("metrics", "results", "tags")

Test = Compare | In | Contains | Exists


def _tests(expr: Expr) -> Iterator[Test]:
    if isinstance(expr, And | Or):
        for item in expr.items:
            yield from _tests(item)
    elif isinstance(expr, Not):
        yield from _tests(expr.item)
    else:
        yield expr


def check(expr: Expr) -> None:
    """QueryError at the first test past ``MAX_TESTS`` tests or ``MAX_LOOKUPS`` lookups."""
    tests = lookups = 0
    for test in _tests(expr):
        f = test.field
        tests += len(test.values) if isinstance(test, In) and f.path else 1
        if tests > MAX_TESTS:
            raise QueryError(
                f"too costly: more than {MAX_TESTS} tests of each row (an `in` value counts)", f.pos
            )
        if f.name in LOOKUP_FIELDS:
            lookups += 1
            if lookups > MAX_LOOKUPS:
                raise QueryError(
                    f"too costly: more than {MAX_LOOKUPS} tests of metrics, results or tags (each searches "
                    "another table)",
                    f.pos,
                )
