"""A metric batch as columns: the compact request body of ``POST /runs/{id}/metrics``, its decoding, and the
batch as numpy arrays sorted by (key, step), which the Postgres append path writes by binary COPY without a
Python object per point (``backend.metrics.points``).

The compact body (``Content-Type: application/x-reasonlab-points``, what the SDK's sender posts; JSON is
still accepted), all integers little-endian::

    magic      4 bytes  b"RLP1"
    n_points   uint32
    attempt    uint32   the writing attempt, 0 for none
    n_keys     uint32
    flags      uint32   bit 0: a time column follows the values; bit 1: a gap column follows (the
                        time column, if any); every other bit must be 0
    key_len    uint16 x n_keys          each key's length in bytes
    keys       UTF-8 text, the keys one after another (sum of key_len bytes)
    key        uint32 x n_points        each point's key, an index into the keys
    step       int64 x n_points
    value      float64 x n_points       IEEE 754: NaN and the infinities travel as they are (stored as
                                        those values, as JSON's "NaN", "Infinity", "-Infinity")
    time       int64 x n_points         (flag 0) microseconds since 1970-01-01 UTC; INT64_MIN: not given
    gap        uint8 x n_points         (flag 1) 1: the point is a gap (JSON's null; its value is
                                        ignored), 0: its value; any other byte is refused

Without the gap column no point is a gap: a NaN value is a NaN, as JSON's "NaN". A point without a time is logged at the server's clock, as a JSON point without ``time``. The body is
untrusted input: every length is checked against the body's size before anything is read, and every
refusal is a 422 naming its field (``body.keys[3]``, ``body.points[17].step``), as the JSON body's are.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from backend.db import as_utc
from backend.errors import Invalid, TooLarge
from common import nonfinite

CONTENT_TYPE = "application/x-reasonlab-points"
MAGIC = b"RLP1"
_HEADER = struct.Struct("<4sIIII")
FLAG_TIME = 1
FLAG_GAPS = 2
# a point's kind in ``Columns.kind``: finite, then common/nonfinite.py's codes of the stored ``nonfinite``
# column (NaN, +inf, -inf), then a gap (stored with both ``value`` and ``nonfinite`` NULL)
FINITE, GAP = 0, 4
NO_TIME = -(2**63)  # a point's time not given: the server's clock
MAX_KEY = 250
MAX_STEP = 2**62  # as MetricPoint.step
MAX_ATTEMPT = 1_000_000  # as MetricBatch.attempt
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
# datetimes Python can hold (years 1 to 9999), as microseconds since 1970: the JSON body's range
MIN_TIME_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _US
MAX_TIME_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _US
# Postgres' timestamps count from 2000-01-01 UTC
PG_EPOCH_US = (datetime(2000, 1, 1, tzinfo=UTC) - _EPOCH) // _US


def _micros(times: Sequence[datetime]) -> list[int]:
    """Each time as microseconds since 1970 UTC (naive: UTC). A training loop's points of one step share
    their time: each distinct one is converted once (~1 us a conversion, 10,000 a batch)."""
    seen: dict[datetime, int] = {}
    out = []
    for t in times:
        us = seen.get(t)
        if us is None:
            us = seen[t] = (as_utc(t) - _EPOCH) // _US
        out.append(us)
    return out


def _invalid(loc: list[str | int], msg: str) -> Invalid:
    where = ".".join(str(p) for p in loc)
    return Invalid(f"{where}: {msg}", [{"loc": loc, "msg": msg, "type": "value_error"}])


def key_problem(key: str) -> str | None:
    """Why ``key`` is no metric key (as ``MetricPoint.key`` checks it), or None."""
    if not 1 <= len(key) <= MAX_KEY:
        return f"a key has 1 to {MAX_KEY} characters; this one has {len(key)}"
    if key.startswith("_"):
        return "a key does not start with '_' (the platform's own series)"
    if "\x00" in key:
        return "contains a NUL character (\\u0000), which cannot be stored"
    return None


@dataclass(frozen=True)
class Decoded:
    """A compact body's fields, checked; the points in the order sent (``Columns.build`` sorts them)."""

    keys: list[str]
    key: np.ndarray  # int64 index into keys
    step: np.ndarray  # int64
    value: np.ndarray  # float64
    time: np.ndarray | None  # int64 microseconds since 1970 (NO_TIME: not given), or None: none given
    attempt: int | None
    gap: np.ndarray  # bool: the point is a gap (its value ignored)


def decode(raw: bytes, limit: int) -> Decoded:
    """A compact body's points and attempt; 422 naming the field for a malformed body, 413 past
    ``limit`` points (the JSON body's batch limit)."""
    if len(raw) < _HEADER.size:
        raise _invalid(
            ["body"], f"a points body starts with a {_HEADER.size}-byte header; this one has {len(raw)} bytes"
        )
    magic, n, attempt, n_keys, flags = _HEADER.unpack_from(raw)
    if magic != MAGIC:
        raise _invalid(["body"], f"a points body starts with {MAGIC!r}, not {bytes(magic)!r}")
    if flags & ~(FLAG_TIME | FLAG_GAPS):
        raise _invalid(
            ["body", "flags"],
            f"unknown flags {flags:#x} (only bit 0, the time column, and bit 1, the gap column, are defined)",
        )
    if n > limit:
        raise TooLarge(f"a metric batch holds at most {limit} points; this one has {n}")
    if attempt > MAX_ATTEMPT:
        raise _invalid(["body", "attempt"], f"Input should be less than or equal to {MAX_ATTEMPT}")
    if n_keys > n:  # every key is some point's (and the keys' loop below is bounded by the batch limit)
        raise _invalid(["body", "keys"], f"{n_keys} keys for {n} points: a key is sent once, for its points")
    has_time = bool(flags & FLAG_TIME)
    has_gaps = bool(flags & FLAG_GAPS)
    at = _HEADER.size
    lengths_end = at + 2 * n_keys
    if lengths_end > len(raw):
        raise _invalid(["body", "keys"], f"{n_keys} keys' lengths do not fit in a body of {len(raw)} bytes")
    lengths = np.frombuffer(raw, "<u2", n_keys, at).astype(np.int64)
    text_end = lengths_end + int(lengths.sum())
    per_point = 4 + 8 + 8 + (8 if has_time else 0) + (1 if has_gaps else 0)
    if text_end + per_point * n != len(raw):
        expected = text_end + per_point * n
        raise _invalid(["body"], f"a body of {n} points and these keys has {expected} bytes, not {len(raw)}")
    keys: list[str] = []
    pos = lengths_end
    for i, size in enumerate(lengths.tolist()):
        try:
            name = raw[pos : pos + size].decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid(["body", "keys", i], "not UTF-8 text") from None
        problem = key_problem(name)
        if problem is not None:
            raise _invalid(["body", "keys", i], problem)
        keys.append(name)
        pos += size
    key = np.frombuffer(raw, "<u4", n, pos).astype(np.int64)
    step = np.frombuffer(raw, "<i8", n, pos + 4 * n).astype(np.int64)
    value = np.frombuffer(raw, "<f8", n, pos + 12 * n).astype(np.float64)
    time = np.frombuffer(raw, "<i8", n, pos + 20 * n).astype(np.int64) if has_time else None
    at = pos + (28 if has_time else 20) * n
    gap = np.frombuffer(raw, "u1", n, at).astype(bool) if has_gaps else np.zeros(n, bool)
    if has_gaps:
        bad = np.flatnonzero(np.frombuffer(raw, "u1", n, at) > 1)
        if bad.size:
            raise _invalid(["body", "points", int(bad[0]), "gap"], "a gap byte is 0 (a value) or 1 (a gap)")
    bad = np.flatnonzero(key >= n_keys)
    if bad.size:
        raise _invalid(["body", "points", int(bad[0]), "key"], f"key {int(key[bad[0]])} of {n_keys} keys")
    bad = np.flatnonzero((step < 0) | (step > MAX_STEP))
    if bad.size:
        raise _invalid(["body", "points", int(bad[0]), "step"], f"a step is from 0 to {MAX_STEP}")
    if time is not None:
        bad = np.flatnonzero((time != NO_TIME) & ((time < MIN_TIME_US) | (time > MAX_TIME_US)))
        if bad.size:
            raise _invalid(
                ["body", "points", int(bad[0]), "time"],
                "a time is between the years 1 and 9999 (microseconds)",
            )
    return Decoded(keys, key, step, value, time, attempt or None, gap)


def kinds(value: np.ndarray, gap: np.ndarray) -> np.ndarray:
    """Each point's kind (``FINITE``, common/nonfinite.py's ``NAN``/``POS_INF``/``NEG_INF``, ``GAP``) from
    its value and whether it is a gap."""
    out = np.full(value.size, FINITE, np.int8)
    out[np.isnan(value)] = nonfinite.NAN
    out[np.isposinf(value)] = nonfinite.POS_INF
    out[np.isneginf(value)] = nonfinite.NEG_INF
    out[gap] = GAP
    return out


@dataclass(frozen=True)
class Columns:
    """One batch's points, one per (key, step) (the last one sent wins), sorted by key (Python's string
    order) and step: ``keys`` the batch's distinct keys in that order, and per point ``key`` (an index
    into ``keys``, non-decreasing), ``step``, ``value`` (as sent, NaN and infinities included; a gap's:
    NaN), ``kind`` (``kinds``: finite, NaN, +inf, -inf or a gap) and ``time`` (microseconds since 1970
    UTC)."""

    keys: list[str]
    key: np.ndarray
    step: np.ndarray
    value: np.ndarray
    time: np.ndarray
    kind: np.ndarray

    @classmethod
    def build(
        cls,
        keys: Sequence[str],
        key: np.ndarray,
        step: np.ndarray,
        value: np.ndarray,
        time: np.ndarray,
        gap: np.ndarray,
    ) -> Columns:
        """From points in any order (``key`` indexes ``keys``, which need not be distinct or used; ``gap``
        marks the gaps, whose values are ignored)."""
        names = sorted(set(keys))
        where = {name: i for i, name in enumerate(names)}
        rank = np.array([where[k] for k in keys], np.int64)
        r = rank[key] if key.size else np.zeros(0, np.int64)
        order = np.lexsort((np.arange(r.size), step, r))  # stable: of one (key, step), the last sent last
        kind = kinds(value, gap)
        r, step, value, time, kind = r[order], step[order], value[order], time[order], kind[order]
        last = np.ones(r.size, bool)  # the last of each (key, step)
        if r.size:
            last[:-1] = (r[1:] != r[:-1]) | (step[1:] != step[:-1])
        r, step, value, time, kind = r[last], step[last], value[last], time[last], kind[last]
        value = np.where(kind == GAP, np.nan, value)
        used = np.unique(r)
        return cls([names[i] for i in used.tolist()], np.searchsorted(used, r), step, value, time, kind)

    @classmethod
    def from_decoded(cls, d: Decoded, now: datetime) -> Columns:
        now_us = (as_utc(now) - _EPOCH) // _US
        time = (
            np.full(d.step.size, now_us, np.int64)
            if d.time is None
            else np.where(d.time == NO_TIME, now_us, d.time)
        )
        return cls.build(d.keys, d.key, d.step, d.value, time, d.gap)

    @classmethod
    def from_lists(
        cls,
        keys: Sequence[str],
        steps: Sequence[int],
        values: Sequence[float | None],
        times: Sequence[datetime],
    ) -> Columns:
        """From one list per field, a point per position (a value as logged, NaN and infinities too; None:
        a gap)."""
        return cls.build(
            keys,
            np.arange(len(keys), dtype=np.int64),
            np.array(steps, np.int64),
            np.array([math.nan if v is None else v for v in values], np.float64),
            np.array(_micros(times), np.int64),
            np.array([v is None for v in values], bool),
        )

    @classmethod
    def from_points(cls, points: Mapping[tuple[str, int], tuple[float | None, datetime]]) -> Columns:
        """From ``{(key, step): (value, time)}`` (a value as logged; a gap: None)."""
        keys = [k for k, _ in points]
        steps = [s for _, s in points]
        return cls.from_lists(keys, steps, [v for v, _ in points.values()], [t for _, t in points.values()])

    def __len__(self) -> int:
        return int(self.step.size)

    def starts(self) -> np.ndarray:
        """Each key's first point's index (and, after the last, the number of points)."""
        k = self.key
        return np.flatnonzero(np.r_[True, k[1:] != k[:-1], True]) if k.size else np.zeros(1, np.int64)

    def stored(self) -> np.ndarray:
        """Which values are stored as numbers in ``value`` (the finite ones; NaN, the infinities and gaps
        are NULL there)."""
        return self.kind == FINITE

    def nonfinite(self) -> np.ndarray:
        """Each point's ``nonfinite`` column (common/nonfinite.py's code; 0: NULL, a finite value or a gap)."""
        return np.where(self.kind == GAP, 0, self.kind).astype(np.int16)

    def logged(self) -> list[float | None]:
        """Each point's value as logged: a float (NaN and infinities too), None for a gap."""
        gap = (self.kind == GAP).tolist()
        return [None if g else v for v, g in zip(self.value.tolist(), gap, strict=True)]

    def first_steps(self) -> dict[str, int]:
        return dict(zip(self.keys, self.step[self.starts()[:-1]].tolist(), strict=True))

    def tops(self) -> dict[str, tuple[int, float | None]]:
        """Each key's largest step and its value as logged (None: a gap)."""
        ends = self.starts()[1:] - 1
        values = [
            None if k == GAP else v
            for v, k in zip(self.value[ends].tolist(), self.kind[ends].tolist(), strict=True)
        ]
        return dict(zip(self.keys, zip(self.step[ends].tolist(), values, strict=True), strict=True))

    def points(self) -> dict[tuple[str, int], tuple[float | None, datetime]]:
        """``{(key, step): (value as logged, time)}``, for the paths that work point by point."""
        keys = self.keys
        return {
            (keys[k], s): (v, _EPOCH + t * _US)
            for k, s, v, t in zip(
                self.key.tolist(), self.step.tolist(), self.logged(), self.time.tolist(), strict=True
            )
        }

    def copy_rows(self, run_id: int) -> bytes:
        """The points as the rows of ``COPY metric (run_id, key, step, value, nonfinite, time) FROM STDIN
        (FORMAT BINARY)``, in order, signature and trailer included: each key's rows built by numpy as
        one record array (the key's bytes and the run id are the same in all of them), a key with a value
        not finite (or a gap) row by row (a NULL has no bytes)."""
        out = [_SIGNATURE]
        starts = self.starts().tolist()
        stored = self.stored()
        codes = self.nonfinite()
        pg_time = self.time - PG_EPOCH_US
        for k, name in enumerate(self.keys):
            a, b = starts[k], starts[k + 1]
            text = name.encode("utf-8")
            head = struct.pack(">hiii", 6, 4, run_id, len(text)) + text
            if stored[a:b].all():
                rows = np.empty(b - a, _row_dtype(len(head)))
                rows["head"] = head
                rows["l1"] = rows["l2"] = rows["l4"] = 8
                rows["l3"] = -1  # nonfinite NULL
                rows["step"] = self.step[a:b]
                rows["value"] = self.value[a:b]
                rows["time"] = pg_time[a:b]
                out.append(rows.tobytes())
                continue
            for s, v, f, c, t in zip(
                self.step[a:b].tolist(),
                self.value[a:b].tolist(),
                stored[a:b].tolist(),
                codes[a:b].tolist(),
                pg_time[a:b].tolist(),
                strict=True,
            ):
                out.append(
                    head
                    + _STEP.pack(8, s)
                    + (_VALUE.pack(8, v) if f else _NULL)
                    + (_KIND.pack(2, c) if c else _NULL)
                    + _STEP.pack(8, t)
                )
        out.append(_TRAILER)
        return b"".join(out)


_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_TRAILER = struct.pack(">h", -1)
_NULL = struct.pack(">i", -1)
_STEP = struct.Struct(">iq")
_VALUE = struct.Struct(">id")
_KIND = struct.Struct(">ih")
_ROW_DTYPES: dict[int, np.dtype[Any]] = {}


def _row_dtype(head: int) -> np.dtype[Any]:
    """A COPY row of ``metric`` after its ``head`` bytes (field count, run id, key): step, value, a NULL
    ``nonfinite`` (its length -1 alone) and time, each with its length, big-endian, packed."""
    found = _ROW_DTYPES.get(head)
    if found is None:
        found = np.dtype(
            [
                ("head", f"S{head}"),
                ("l1", ">i4"),
                ("step", ">i8"),
                ("l2", ">i4"),
                ("value", ">f8"),
                ("l3", ">i4"),
                ("l4", ">i4"),
                ("time", ">i8"),
            ]
        )
        _ROW_DTYPES[head] = found
    return found


_BLOCK = struct.Struct(">iiiqiqiq")  # width, block, first step, last step, each with its length
_COUNT = struct.Struct(">ii")


def _float(v: float) -> bytes:
    return _VALUE.pack(8, v) if v == v else _NULL  # NaN: no finite value in the block (NULL)


@dataclass(frozen=True)
class Blocks:
    """The batch's roll-up blocks at one width, one entry per block: its key (an index into the batch's
    keys), block number, first and last step, smallest and largest stored value (NaN: none), number of
    points, and the stored value (NaN: not finite, or a gap) and time (microseconds since 1970) of its last
    step; ``nf`` its number of NaN and infinite points and ``klast`` its last point's ``nonfinite`` code
    (0: NULL), as ``rollups._batch_blocks`` and the roll-up statements count them."""

    width: int
    key: np.ndarray
    block: np.ndarray
    s0: np.ndarray
    s1: np.ndarray
    vmin: np.ndarray
    vmax: np.ndarray
    n: np.ndarray
    vlast: np.ndarray
    tlast: np.ndarray
    nf: np.ndarray
    klast: np.ndarray


def rollup_blocks(cols: Columns, widths: Sequence[int]) -> list[Blocks]:
    """What ``rollups._batch_blocks`` computes point by point, per width with numpy: the points are sorted
    by key and step, so each block's points are one stretch of the arrays."""
    n = len(cols)
    if not n:
        return []
    key, step = cols.key, cols.step
    value = np.where(cols.stored(), cols.value, np.nan)
    codes = cols.nonfinite()
    odd = (codes != 0).astype(np.int64)
    out = []
    for width in widths:
        block = step // width
        first = np.flatnonzero(np.r_[True, (key[1:] != key[:-1]) | (block[1:] != block[:-1])])
        last = np.r_[first[1:], n] - 1
        out.append(
            Blocks(
                width,
                key[first],
                block[first],
                step[first],
                step[last],
                np.fmin.reduceat(value, first),
                np.fmax.reduceat(value, first),
                last - first + 1,
                value[last],
                cols.time[last],
                np.add.reduceat(odd, first),
                codes[last],
            )
        )
    return out


def rollup_rows(cols: Columns, run_id: int, widths: Sequence[int]) -> bytes:
    """The batch's roll-up blocks at each of ``widths`` (``rollup_blocks``) as the rows of ``COPY ...
    (run_id, key, width, block, s0, s1, vmin, vmax, n, vlast, tlast, nf, klast) FROM STDIN (FORMAT
    BINARY)``, a value NaN written as NULL (no finite value), a ``klast`` 0 as NULL."""
    out = [_SIGNATURE]
    heads = []
    for name in cols.keys:
        text = name.encode("utf-8")
        heads.append(struct.pack(">hiii", 13, 4, run_id, len(text)) + text)
    for b in rollup_blocks(cols, widths):
        for k, block, s0, s1, lo, hi, c, vl, tl, nf, kl in zip(
            b.key.tolist(),
            b.block.tolist(),
            b.s0.tolist(),
            b.s1.tolist(),
            b.vmin.tolist(),
            b.vmax.tolist(),
            b.n.tolist(),
            b.vlast.tolist(),
            (b.tlast - PG_EPOCH_US).tolist(),
            b.nf.tolist(),
            b.klast.tolist(),
            strict=True,
        ):
            out.append(
                heads[k]
                + _BLOCK.pack(4, b.width, 8, block, 8, s0, 8, s1)
                + _float(lo)
                + _float(hi)
                + _COUNT.pack(4, c)
                + _float(vl)
                + _STEP.pack(8, tl)
                + _COUNT.pack(4, nf)
                + (_KIND.pack(2, kl) if kl else _NULL)
            )
    out.append(_TRAILER)
    return b"".join(out)
