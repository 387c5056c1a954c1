"""MLflow's search filters and orderings (``filter`` and ``order_by`` of ``runs/search`` and
``experiments/search``), parsed into typed clauses that ``backend.mlflowcompat.repository`` compiles to SQL.

The language is the one MLflow's client documents for ``search_runs``: clauses joined by ``AND`` (no ``OR``,
no parentheses), each ``<identifier> <comparator> <value>``:

- identifiers: ``metrics.<key>``, ``params.<key>``, ``tags.<key>``, ``attributes.<name>`` (also
  ``metric``, ``param``, ``parameter(s)``, ``tag``, ``attribute``, ``attr``, ``run``), or an attribute's bare
  name (``status``); a key with other characters than letters, digits and ``_ . - / :`` is quoted in
  backticks or double quotes (``metrics.`eval acc```);
- comparators: ``= != < <= > >=``, ``LIKE`` and ``ILIKE`` (``%`` any run of characters, ``_`` one),
  ``IN (...)`` and ``NOT IN (...)``, ``IS NULL`` and ``IS NOT NULL`` (case-insensitive);
- values: 'single' or "double" quoted strings, numbers, or a parenthesised list of them.

An ordering is ``<identifier> [ASC | DESC]`` (ascending by default).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from backend.errors import Invalid

Entity = Literal["metric", "param", "tag", "attribute"]
Value = str | float | tuple[str | float, ...] | None

MAX_FILTER = 4000  # characters of one filter
MAX_CLAUSES = 20  # clauses of one filter (each is a subquery)
MAX_ORDERS = 5

_PREFIXES: dict[str, Entity] = {
    "metric": "metric",
    "metrics": "metric",
    "param": "param",
    "params": "param",
    "parameter": "param",
    "parameters": "param",
    "tag": "tag",
    "tags": "tag",
    "attribute": "attribute",
    "attributes": "attribute",
    "attr": "attribute",
    "run": "attribute",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_.\-/:]+")
_OPERATOR = re.compile(
    r"(?:(?P<is_not_null>is\s+not\s+null\b)|(?P<is_null>is\s+null\b)|(?P<not_in>not\s+in\b)|(?P<in>in\b)"
    r"|(?P<ilike>ilike\b)|(?P<like>like\b)|(?P<sym>!=|<>|<=|>=|=|<|>))",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_AND = re.compile(r"and\b", re.IGNORECASE)
_DIRECTION = re.compile(r"\s*(?:(?P<dir>asc|desc)\s*)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Clause:
    entity: Entity
    key: str
    op: str  # = != < <= > >= LIKE ILIKE IN NOT IN IS NULL IS NOT NULL
    value: Value


@dataclass(frozen=True)
class Order:
    entity: Entity
    key: str
    ascending: bool


def invalid(field: str, msg: str) -> Invalid:
    """A 400 ``INVALID_PARAMETER_VALUE`` naming ``field`` (its MLflow name)."""
    return Invalid(f"{field}: {msg}", [{"loc": ["body", field], "msg": msg, "type": "value_error"}])


class _Scanner:
    def __init__(self, text: str, field: str) -> None:
        self.text, self.field, self.pos = text, field, 0

    def fail(self, msg: str) -> Invalid:
        return invalid(self.field, f"{msg} at character {self.pos + 1} of {self.text[:200]!r}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def done(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def match(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        self.skip()
        found = pattern.match(self.text, self.pos)
        if found is not None:
            self.pos = found.end()
        return found

    def quoted(self, quotes: str) -> str | None:
        """A string in one of ``quotes`` (no escapes: the quote ends it), or None when none starts here."""
        self.skip()
        if self.pos >= len(self.text) or self.text[self.pos] not in quotes:
            return None
        quote = self.text[self.pos]
        end = self.text.find(quote, self.pos + 1)
        if end < 0:
            raise self.fail(f"an unclosed {quote}")
        value = self.text[self.pos + 1 : end]
        self.pos = end + 1
        return value

    def identifier(self) -> tuple[Entity, str]:
        word = self.match(_WORD)
        if word is None:
            raise self.fail(
                "expected an identifier such as metrics.<key>, params.<key>, tags.<key> or status"
            )
        name = word.group(0)
        if self.pos < len(self.text) and self.text[self.pos] == ".":
            entity = _PREFIXES.get(name.lower())
            if entity is None:
                raise self.fail(
                    f"{name!r} is not one of metrics, params, tags, attributes (datasets are not searchable here)"
                )
            self.pos += 1
            key = self.quoted('`"')
            if key is None:
                bare = _BARE_KEY.match(self.text, self.pos)
                if bare is None:
                    raise self.fail(f"expected a key after {name}.")
                self.pos = bare.end()
                key = bare.group(0)
            if not key:
                raise self.fail("an empty key")
            return entity, key
        return "attribute", name

    def value(self) -> str | float:
        text = self.quoted("'\"")
        if text is not None:
            return text
        number = self.match(_NUMBER)
        if number is None:
            raise self.fail("expected a quoted string or a number")
        return float(number.group(0))

    def values(self) -> tuple[str | float, ...]:
        self.skip()
        if not self.text.startswith("(", self.pos):
            raise self.fail("IN takes a parenthesised list: ('a', 'b')")
        self.pos += 1
        out: list[str | float] = []
        while True:
            out.append(self.value())
            self.skip()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith(")", self.pos):
                self.pos += 1
                return tuple(out)
            raise self.fail("expected ',' or ')' in the list")


def _operator(scanner: _Scanner) -> str:
    found = scanner.match(_OPERATOR)
    if found is None:
        raise scanner.fail("expected a comparator (=, !=, <, <=, >, >=, LIKE, ILIKE, IN, NOT IN, IS NULL)")
    kind = found.lastgroup
    if kind == "sym":
        return "!=" if found.group(0) == "<>" else found.group(0)
    return {
        "is_not_null": "IS NOT NULL",
        "is_null": "IS NULL",
        "not_in": "NOT IN",
        "in": "IN",
        "ilike": "ILIKE",
        "like": "LIKE",
    }[str(kind)]


def parse_filter(text: str | None, field: str = "filter") -> list[Clause]:
    """The clauses of an MLflow filter (empty or None: none); 400 naming ``field`` for anything else."""
    if not text or not text.strip():
        return []
    if len(text) > MAX_FILTER:
        raise invalid(field, f"a filter of {len(text)} characters; at most {MAX_FILTER}")
    scanner = _Scanner(text, field)
    clauses: list[Clause] = []
    while True:
        entity, key = scanner.identifier()
        op = _operator(scanner)
        value: Value
        if op in ("IS NULL", "IS NOT NULL"):
            value = None
        elif op in ("IN", "NOT IN"):
            value = scanner.values()
        else:
            value = scanner.value()
        clauses.append(Clause(entity, key, op, value))
        if len(clauses) > MAX_CLAUSES:
            raise invalid(field, f"at most {MAX_CLAUSES} clauses a filter")
        if scanner.done():
            return clauses
        if scanner.match(_AND) is None:
            raise scanner.fail("clauses are joined by AND (OR and parentheses are not supported)")


def parse_order(items: list[str], field: str = "order_by") -> list[Order]:
    """``["metrics.loss DESC", "attributes.start_time"]`` as orderings; 400 naming ``field``."""
    if len(items) > MAX_ORDERS:
        raise invalid(field, f"at most {MAX_ORDERS} orderings; these are {len(items)}")
    orders: list[Order] = []
    for i, item in enumerate(items):
        scanner = _Scanner(item, f"{field}[{i}]")
        entity, key = scanner.identifier()
        direction = _DIRECTION.match(item, scanner.pos)
        if direction is None:
            raise scanner.fail("an ordering is <identifier> [ASC | DESC]")
        orders.append(Order(entity, key, (direction.group("dir") or "asc").lower() == "asc"))
    return orders
