"""Text to syntax tree: the lark grammar (``grammar.lark``, LALR) and its errors made readable."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from backend.query.nodes import And, Compare, Contains, Exists, Expr, Field, In, Literal, Not, Now, Or

MAX_QUERY = 4000  # characters
# what both databases take: SQLite's INTEGER is 64 bits (a wider Python int overflows in its driver), and
# a time a day either side of Python's datetime range still has its whole UTC day and any offset applied
MAX_INT = 2**63 - 1
FIRST_DAY = date(1, 1, 2)
LAST_DAY = date(9999, 12, 30)


class QueryError(Exception):
    """A query that cannot be used: ``pos`` is the 0-based offset it concerns (None: the whole query),
    ``message`` says what was expected or what is wrong; ``str()`` is ``position N: message``."""

    def __init__(self, message: str, pos: int | None = None) -> None:
        super().__init__(f"position {pos}: {message}" if pos is not None else message)
        self.message = message
        self.pos = pos


@cache
def _lark() -> Lark:
    return Lark(
        (Path(__file__).parent / "grammar.lark").read_text(),
        parser="lalr",
        start=["start", "sort_field"],
        propagate_positions=True,
        maybe_placeholders=False,
    )


_VALUE = "a value (a string in quotes, a number, true, false, a date, now or now - <duration>)"
_OPERATOR = "an operator (= != < <= > >=, in, not in, contains, exists, missing)"
# what a set of expected terminals means, checked in this order
_READABLE: list[tuple[set[str], str]] = [
    ({"CMP", "IN", "CONTAINS", "EXISTS"}, _OPERATOR),
    ({"STRING", "NUMBER"}, _VALUE),
    ({"FIELD", "NOT"}, "a field (name, status, params.<path>, metrics.<key>, ...), not or ("),
    ({"FIELD"}, "a field (name, status, params.<path>, metrics.<key>, ...)"),
    ({"IN"}, "in (after not)"),
    ({"DURATION"}, "a duration (90s, 15m, 2h, 3d, 1w)"),
    ({"LPAR"}, "("),
    ({"RPAR", "COMMA"}, "',' or ')'"),
    ({"RPAR"}, "')'"),
]


def _expected(names: set[str]) -> str:
    for needed, words in _READABLE:
        if needed <= names:
            return words
    if names & {"AND", "OR", "$END"} and names <= {"AND", "OR", "RPAR", "$END"}:
        return (
            "and, or, ')' or the end of the query" if "RPAR" in names else "and, or or the end of the query"
        )
    if names == {"$END"}:
        return "the end of the query"
    return "one of " + ", ".join(sorted(n.lower() for n in names))


def _previous_token(text: str, pos: int) -> str | None:
    before = text[:pos].rstrip()
    if not before:
        return None
    try:
        tokens = list(_lark().lex(before))
    except UnexpectedInput:
        tokens = []
    if tokens:
        return str(tokens[-1])
    return before.split()[-1]


def _accepted(exc: UnexpectedInput, fallback: set[str]) -> set[str]:
    """The terminals the parser would really take there (LALR's table merges states: ``expected`` may
    name terminals of a sibling context); ``fallback`` where it cannot say."""
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is None:
        return fallback
    try:
        return set(interactive.accepts()) or fallback
    except UnexpectedInput:
        return fallback


def _syntax_error(text: str, exc: UnexpectedInput) -> QueryError:
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        pos = len(text)
        expected = _accepted(exc, set(exc.expected))
        found = "the end of the query"
    elif isinstance(exc, UnexpectedToken):
        pos = exc.token.start_pos if exc.token.start_pos is not None else exc.pos_in_stream or 0
        expected = _accepted(exc, set(exc.expected))
        found = repr(str(exc.token))
    elif isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        expected = set(exc.allowed or ())
        found = repr(text[pos])
    else:  # pragma: no cover - lark raises only the three above
        return QueryError(str(exc), 0)
    previous = _previous_token(text, pos)
    after = f" after {previous!r}" if previous else ""
    return QueryError(f"expected {_expected(expected)}{after}, found {found}", pos)


_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def _unquote(token: str) -> str:
    """A quoted string's text: ``\\"``, ``\\'``, ``\\\\``, ``\\n``, ``\\t``, ``\\r`` and ``\\uXXXX``
    escapes (a UTF-16 pair of ``\\uXXXX`` is the one character it encodes, as in JSON); ValueError for any
    other escape."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code.startswith("u") and len(code) == 5:
            return chr(int(code[1:], 16))
        if code not in _ESCAPES:
            raise ValueError(code)
        return _ESCAPES[code]

    text = _ESCAPE.sub(one, token[1:-1])
    if text.isascii():
        return text
    try:  # join surrogate pairs; a lone surrogate is no character and neither database takes it
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return text  # _unstorable names it


def _unstorable(text: str) -> str | None:
    """Why neither database can take ``text`` (a NUL, a lone UTF-16 surrogate), or None."""
    if "\x00" in text:
        return "a NUL character (\\u0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone UTF-16 surrogate (\\ud800-\\udfff), which is no character"
    return None


def _split_field(token: Token) -> Field:
    text = str(token)
    name, dot, rest = text.partition(".")
    pos = token.start_pos or 0
    if not dot:
        return Field(name.lower(), (), None, pos, text)
    if rest[:1] in ("'", '"'):
        path: tuple[str, ...] = (_string(rest, pos + len(name) + 1),)
    elif name.lower() == "metrics":
        path = (rest,)  # a metric key is one part, dots and slashes included
    else:
        path = tuple(rest.split("."))
        if any(not p for p in path):
            raise QueryError(f"an empty part in the field {text!r}", pos)
    return Field(name.lower(), path, None, pos, text)


def _string(token: str, pos: int) -> str:
    try:
        text = _unquote(token)
    except ValueError as exc:
        raise QueryError(f"a bad escape in the string {token}", pos) from exc
    reason = _unstorable(text)
    if reason is not None:
        raise QueryError(f"the string {token} holds {reason}", pos)
    return text


def _number(text: str, pos: int) -> int | float:
    try:
        value: int | float = int(text)
    except ValueError:
        return float(text)
    if abs(value) > MAX_INT:
        raise QueryError(f"the integer {text} is out of range (at most {MAX_INT} either side of 0)", pos)
    return value


def _in_range(text: str, day: date, pos: int) -> None:
    if not FIRST_DAY <= day <= LAST_DAY:
        raise QueryError(f"{text!r} is out of range: times from {FIRST_DAY} to {LAST_DAY}", pos)


def _datetime(text: str, pos: int) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError as exc:
        raise QueryError(f"{text!r} is not a valid date and time", pos) from exc
    _in_range(text, value.date(), pos)  # the offset moves it at most a day
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _date(text: str, pos: int) -> date:
    try:
        value = date.fromisoformat(text)
    except ValueError as exc:
        raise QueryError(f"{text!r} is not a valid date", pos) from exc
    _in_range(text, value, pos)
    return value


@v_args(inline=True)
class _ToNodes(Transformer[Token, Any]):
    def or_(self, left: Expr, _op: Token, right: Expr) -> Expr:
        return Or((*left.items, right) if isinstance(left, Or) else (left, right))

    def and_(self, left: Expr, _op: Token, right: Expr) -> Expr:
        return And((*left.items, right) if isinstance(left, And) else (left, right))

    def not_(self, _op: Token, item: Expr) -> Expr:
        return Not(item)

    def compare(self, field: Field, op: Token, value: tuple[Literal, int]) -> Expr:
        return Compare(field, str(op), value[0], value[1])

    def in_(self, field: Field, _in: Token, values: list[tuple[Literal, int]]) -> Expr:
        return In(field, tuple(v for v, _ in values), False, values[0][1])

    def not_in(self, field: Field, _not: Token, _in: Token, values: list[tuple[Literal, int]]) -> Expr:
        return In(field, tuple(v for v, _ in values), True, values[0][1])

    def contains(self, field: Field, _op: Token, value: tuple[Literal, int]) -> Expr:
        return Contains(field, value[0], value[1])

    def exists(self, field: Field, _op: Token) -> Expr:
        return Exists(field, False)

    def missing(self, field: Field, _op: Token) -> Expr:
        return Exists(field, True)

    def sort_field(self, field: Field) -> Field:
        return field

    def plain(self, token: Token) -> Field:
        return _split_field(token)

    def aggregate(self, function: Token, token: Token) -> Field:
        inner = _split_field(token)
        name = str(function).lower()
        pos = function.start_pos or 0
        if name not in ("min", "max", "last", "best"):
            raise QueryError(f"unknown function {str(function)!r}: min, max, last or best", pos)
        if inner.name != "metrics" or not inner.path:
            raise QueryError(f"{name}(...) takes a metric: {name}(metrics.<key>)", inner.pos)
        return Field(inner.name, inner.path, name, pos, f"{name}({inner.text})")

    def values(self, *items: tuple[Literal, int]) -> list[tuple[Literal, int]]:
        return list(items)

    def string(self, t: Token) -> tuple[Literal, int]:
        return _string(str(t), t.start_pos or 0), t.start_pos or 0

    def number(self, t: Token) -> tuple[Literal, int]:
        return _number(str(t), t.start_pos or 0), t.start_pos or 0

    def true(self, t: Token) -> tuple[Literal, int]:
        return True, t.start_pos or 0

    def false(self, t: Token) -> tuple[Literal, int]:
        return False, t.start_pos or 0

    def datetime(self, t: Token) -> tuple[Literal, int]:
        return _datetime(str(t), t.start_pos or 0), t.start_pos or 0

    def date(self, t: Token) -> tuple[Literal, int]:
        return _date(str(t), t.start_pos or 0), t.start_pos or 0

    def now(self, t: Token) -> tuple[Literal, int]:
        return Now(), t.start_pos or 0

    def now_minus(self, t: Token, _minus: Token, duration: Token) -> tuple[Literal, int]:
        text = str(duration)
        seconds = float(text[:-1]) * _DURATION_UNITS[text[-1]]
        if seconds > 200 * 365 * 86400:
            raise QueryError(f"the duration {text} is too long", duration.start_pos)
        return Now(timedelta(seconds=seconds)), t.start_pos or 0


def _run(text: str, start: str) -> Any:
    if len(text) > MAX_QUERY:
        raise QueryError(f"a query of {len(text)} characters; at most {MAX_QUERY}")
    if not text.strip():
        raise QueryError("an empty query", 0)
    if _unstorable(text) is not None:  # a caller's own text (a saved view, the CLI), not only a URL's
        pos, reason = next((i, r) for i, c in enumerate(text) if (r := _unstorable(c)) is not None)
        raise QueryError(f"{reason} in the query", pos)
    try:
        tree = _lark().parse(text, start=start)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
    try:
        return _ToNodes().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QueryError):
            raise exc.orig_exc from None
        raise


def parse(text: str) -> Expr:
    """The syntax tree of a query; QueryError with the position and what was expected otherwise."""
    result: Expr = _run(text, "start")
    return result


def parse_field(text: str) -> Field:
    """A field alone (``params.lr``, ``max(metrics.acc)``): what ``sort`` names."""
    result: Field = _run(text, "sort_field")
    return result
