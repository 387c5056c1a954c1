"""The query language's typed syntax tree (what ``backend.query.parser.parse`` returns)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

# A literal: a string, a number (int or float), a boolean, a date (a whole UTC day), a datetime
# (timezone-aware, UTC when written without an offset) or ``Now`` (the time of the query, less an offset).


@dataclass(frozen=True)
class Now:
    minus: timedelta = timedelta(0)


Literal = str | int | float | bool | date | datetime | Now


@dataclass(frozen=True)
class Field:
    """``name`` is the field's first part (``params``, ``metrics``, ``status``); ``path`` the rest:
    the dotted parts of a ``params`` path, or a metric's whole key; ``aggregate``: ``min``, ``max``,
    ``last``, ``best`` for ``min(metrics.loss)``, else None. ``pos``: 0-based offset in the query."""

    name: str
    path: tuple[str, ...]
    aggregate: str | None
    pos: int
    text: str


@dataclass(frozen=True)
class Compare:
    field: Field
    op: str  # = != < <= > >=
    value: Literal
    pos: int  # the value's offset


@dataclass(frozen=True)
class In:
    field: Field
    values: tuple[Literal, ...]
    negated: bool
    pos: int


@dataclass(frozen=True)
class Contains:
    field: Field
    value: Literal
    pos: int


@dataclass(frozen=True)
class Exists:
    field: Field
    negated: bool  # ``missing``


@dataclass(frozen=True)
class And:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Or:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    item: Expr


Expr = Compare | In | Contains | Exists | And | Or | Not
