"""Postgres array literals (``{1,2,NULL}``) built from Python lists, for the metric append path's
``unnest(%s::int8[], ...)`` statements.

psycopg adapts a Python list element by element in Python (its array dumper: ~0.6 ms for a column of
400 points, 17 columns a batch), where joining the elements' text is one C loop over ``str``/``repr``:
a batch of 400 points spent ~9 of its ~14 ms of API CPU in the dumper (docs/benchmarks.md, "Load
test"). The statement casts the text (``%s::int8[]``), so Postgres parses it as its own input format."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# float8's input takes these for Python's reprs of the non-finite floats
_NONFINITE = {"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"}


def ints(values: Iterable[int | None]) -> str:
    """``{1,2,NULL}``: integers (None: NULL)."""
    return "{" + ",".join("NULL" if v is None else str(int(v)) for v in values) + "}"


def plain_ints(values: Sequence[int]) -> str:
    """``{1,2,3}``: integers none of which is None (the fast path: ``str`` mapped in C)."""
    return "{" + ",".join(map(str, values)) + "}"


def floats(values: Iterable[float | None]) -> str:
    """``{0.5,NULL,Infinity}``: floats at full precision (``repr`` round-trips), None: NULL."""
    out = []
    for v in values:
        if v is None:
            out.append("NULL")
        else:
            text = repr(float(v))
            out.append(_NONFINITE.get(text, text))
    return "{" + ",".join(out) + "}"


def quoted(text: str) -> str:
    """One element of a text array: double-quoted, its backslashes and double quotes escaped (any other
    character stands as it is inside the quotes, NULL included as the word)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def texts_by_index(names: Sequence[str], index: Iterable[int]) -> str:
    """A text array whose elements are ``names[i]`` for each ``i`` of ``index``: each name quoted once
    (a batch's points name a few keys many times)."""
    each = [quoted(n) for n in names]
    return "{" + ",".join([each[i] for i in index]) + "}"
