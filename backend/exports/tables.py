"""A table as columns, written as CSV or Parquet: the runs table's export
(``GET /experiments/{id}/runs/export``, backend/experiments/export.py) and a chart's data
(``POST /exports/parquet``, the dashboard's "Download data").

A column is a name and a list of values (``None`` for a missing cell). CSV cells are text a spreadsheet
opens: a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula
there (OWASP, "CSV Injection"), and a run's name or a param value is whatever a member typed, so such a
cell is written with a leading ``'`` (the spreadsheets' "this is text"). Numbers are written as numbers
(``-0.5`` stays a number). Parquet keeps each column's type when its values share one (booleans, 64-bit
integers, floats, text, UTC timestamps); a column of mixed types is written as JSON text.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

Column = tuple[str, Sequence[Any]]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_ROWS_PER_CHUNK = 500  # rows per streamed piece: ~100 KB for a wide runs table
INT64 = (-(2**63), 2**63 - 1)


def safe_text(text: str) -> str:
    """``text`` as a spreadsheet shows it, never runs it: a leading ``'`` before a formula's first
    character."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_cell(value: Any) -> str:
    """One CSV cell: empty for a missing value or a non-finite number, ``true``/``false``, the shortest
    text that reads back as the same float, JSON for a list or a mapping; text made formula-safe."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, str):
        return safe_text(value)
    return safe_text(json.dumps(value, ensure_ascii=False, sort_keys=True))


def csv_chunks(columns: Sequence[Column], rows_per_chunk: int = CSV_ROWS_PER_CHUNK) -> Iterator[bytes]:
    """The table as UTF-8 CSV (RFC 4180: a header row, ``\\r\\n`` line ends, quotes where needed), in
    pieces of ``rows_per_chunk`` rows, for a streamed answer."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([safe_text(name) for name, _ in columns])
    n = len(columns[0][1]) if columns else 0
    values = [v for _, v in columns]
    for start in range(0, n, rows_per_chunk):
        for i in range(start, min(n, start + rows_per_chunk)):
            writer.writerow([csv_cell(column[i]) for column in values])
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode()


def _arrow_array(values: Sequence[Any]) -> Any:
    """A column as a pyarrow array of the one type its values share, else as JSON text."""
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.array([None] * len(values), pa.null())
    if kinds == {bool}:
        return pa.array(values, pa.bool_())
    if kinds == {int} and all(v is None or INT64[0] <= v <= INT64[1] for v in values):
        return pa.array(values, pa.int64())
    if kinds <= {int, float}:
        # a non-finite float is a missing value, as in the CSV
        return pa.array(
            [None if v is None or not math.isfinite(v) else float(v) for v in values], pa.float64()
        )
    if kinds == {str}:
        return pa.array(values, pa.string())
    if kinds == {datetime}:
        return pa.array(values, pa.timestamp("us", tz="UTC"))
    return pa.array(
        [
            None
            if v is None
            else v
            if isinstance(v, str)
            else json.dumps(v, ensure_ascii=False, sort_keys=True)
            for v in values
        ],
        pa.string(),
    )


def parquet_bytes(columns: Sequence[Column]) -> bytes:
    """The table as a Parquet file (zstd-compressed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: _arrow_array(values) for name, values in columns})
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd")
    return out.getvalue()


def content_disposition(filename: str) -> str:
    """``attachment`` with ``filename``: an ASCII fallback and the RFC 6266 UTF-8 form."""
    from urllib.parse import quote

    fallback = "".join(c if c.isascii() and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"
