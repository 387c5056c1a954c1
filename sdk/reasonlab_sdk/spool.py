"""An append-only log of a tracked run on disk: JSON lines, each with a checksum of its own.

A line is ``<crc32 of the JSON, 8 hex digits> <JSON object>\\n``. Records are appended and flushed one
write at a time, so a process killed mid-write (kill -9, power loss) leaves at most one torn line, at the
end: ``read`` drops it (and any line whose checksum does not match) and keeps everything before. An online
run appends each point before it is sent and an ``ack`` record once the API stored it, so a restarted
script or ``reasonlab sync`` knows what never arrived; an offline run's log is the whole run.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOG_NAME = "log.jsonl"


def _line(record: dict[str, Any]) -> bytes:
    # NaN and infinities come as the strings "NaN", "Infinity", "-Infinity" from the caller: a line is
    # strict JSON
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return f"{zlib.crc32(text.encode()):08x} {text}\n".encode()


@dataclass
class ReadResult:
    records: list[dict[str, Any]]
    dropped: int  # torn or corrupt lines left out


def read(path: Path) -> ReadResult:
    """Every intact record of the log at ``path``, in order (none when it does not exist)."""
    if not path.exists():
        return ReadResult([], 0)
    records: list[dict[str, Any]] = []
    dropped = 0
    for raw in path.read_bytes().split(b"\n"):
        if not raw:
            continue
        record = _parse(raw)
        if record is None:
            dropped += 1
        else:
            records.append(record)
    return ReadResult(records, dropped)


def _parse(raw: bytes) -> dict[str, Any] | None:
    head, _, text = raw.partition(b" ")
    if len(head) != 8 or not text:
        return None
    try:
        if int(head, 16) != zlib.crc32(text):
            return None
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


class Spool:
    """The log of one run, opened for appending (thread-safe: the caller's thread and the sender's)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / LOG_NAME
        self._lock = threading.Lock()
        self._cut_torn_tail()
        self._file = open(self.path, "ab")  # noqa: SIM115 (open for the run's life; close() closes it)

    def _cut_torn_tail(self) -> None:
        """A line left without its newline by a killed writer is cut off, so the next append starts a line."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, *records: dict[str, Any], sync: bool = False) -> None:
        data = b"".join(_line(r) for r in records)
        with self._lock:
            self._file.write(data)
            self._file.flush()
            if sync:
                os.fsync(self._file.fileno())

    def records(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            self._file.flush()
        yield from read(self.path).records

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
