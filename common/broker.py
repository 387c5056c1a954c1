"""Celery broker options, queue names and run priorities shared by the dispatcher (backend) and the workers.

The backend sends tasks by name and never imports worker code; both sides build their Celery app's
broker settings from ``broker_options`` so the filesystem broker's folders and Redis's visibility timeout
and priority lists always agree.

Queue order (docs/architecture.md, "Queue order"): a free worker takes the oldest message of the highest
priority. On Redis kombu keeps one list per priority step (LPUSH to send, BRPOP over the lists from the
highest priority down to take: first in, first out within a list). The filesystem broker (embedded mode)
is kombu's, with the message names and the order of delivery of ``message_name`` and ``take_message``:
kombu names a message ``<monotonic ms>_<uuid>`` and takes the first name in text order, so once the
sender's uptime passed 10^6 ms (16.7 minutes; again at 2.8 h, 27.8 h) a new message sorted before older
ones and a queued run waited behind later ones. The Channel subclasses that call these functions live on
each side (``backend.runs.broker``, ``worker.celery_app``): this package imports no kombu.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from common.settings import SharedSettings

TASK_EXECUTE = "runs.execute"
QUEUES = ("cpu", "gpu")

# --- priorities ------------------------------------------------------------------------------------------
#: A run's ``resources.priority`` -> the message priority the dispatcher sends. Lower is taken first, as in
#: kombu's Redis transport (priority 0 is the queue's own list and BRPOP names it first); the filesystem
#: broker below follows the same rule. The values sit on kombu's default priority steps.
PRIORITIES: dict[str, int] = {"high": 0, "normal": 3, "low": 6}
DEFAULT_PRIORITY = "normal"
#: Redis: one list per step; a message's priority goes to the highest step not above it.
PRIORITY_STEPS = (0, 3, 6, 9)
#: kombu's Redis separator between a queue's name and its priority step (its default, kept so that any
#: kombu client, e.g. ``celery inspect`` or a test's plain ``Connection(url)``, finds the same lists).
REDIS_PRIORITY_SEP = "\x06\x16"


def message_priority(level: str | None) -> int:
    """The message priority of a run's ``resources.priority`` (missing or unknown: normal)."""
    return PRIORITIES.get(level or DEFAULT_PRIORITY, PRIORITIES[DEFAULT_PRIORITY])


def redis_queue_keys(queue: str) -> list[str]:
    """The Redis lists kombu keeps ``queue``'s messages in, in the order workers take from them (each list
    is first in, first out: LPUSH, BRPOP)."""
    return [queue if step == 0 else f"{queue}{REDIS_PRIORITY_SEP}{step}" for step in PRIORITY_STEPS]


def is_filesystem(broker_url: str) -> bool:
    return broker_url.startswith("filesystem://")


def broker_options(settings: SharedSettings) -> dict[str, Any]:
    """Transport options: the filesystem broker's folders (one exchange folder, in = out, plus
    processed/ and control/ for broadcast such as revoke), or Redis's visibility timeout and priority
    steps."""
    options: dict[str, Any] = {"visibility_timeout": settings.broker_visibility_timeout}
    if is_filesystem(settings.broker_url):
        folder = settings.broker_folder
        processed, control = folder / "processed", folder / "control"
        for path in (folder, processed, control):
            path.mkdir(parents=True, exist_ok=True)
        options.update(
            data_folder_in=str(folder),
            data_folder_out=str(folder),
            processed_folder=str(processed),
            control_folder=str(control),
            store_processed=False,
        )
    else:
        options.update(priority_steps=list(PRIORITY_STEPS), sep=REDIS_PRIORITY_SEP)
    return options


# --- the filesystem broker's message names and order of delivery ------------------------------------------
#: ``<priority>_<20-digit sequence>_<uuid hex>.<queue>.msg``: fixed widths, so the text order of the names
#: is also their delivery order (priority, then sequence). Nothing before the queue has a dot: kombu finds
#: a message's queue after the first one.
_NAME = re.compile(r"(\d)_(\d{20})_[0-9a-f]{32}\.")
_KOMBU_NAME = re.compile(r"(\d+)_")
_sequence_lock = threading.Lock()
_last_sequence = 0


def clock_ns() -> int:
    """The wall clock in nanoseconds (a module function, so tests can move it)."""
    return time.time_ns()


def next_sequence() -> int:
    """Increasing within the process (a clock stepped back never reorders it) and, through the wall clock,
    across processes: the API's dispatcher sends every run's message, workers only resend theirs."""
    global _last_sequence
    with _sequence_lock:
        _last_sequence = max(clock_ns(), _last_sequence + 1)
        return _last_sequence


def message_name(queue: str, priority: int) -> str:
    priority = min(max(int(priority), 0), 9)
    return f"{priority}_{next_sequence():020d}_{uuid.uuid4().hex}.{queue}.msg"


def delivery_order(name: str) -> tuple[int, int, int, str]:
    """Sort key of the message files: priority, then sequence. Names kombu's own transport made
    (``<monotonic ms>_<uuid>``, left from before an upgrade) come first, by their number."""
    if match := _NAME.match(name):
        return (1, int(match[1]), int(match[2]), name)
    if match := _KOMBU_NAME.match(name):
        return (0, 0, int(match[1]), name)
    return (0, 0, 0, name)


def write_message(folder: str | Path, queue: str, priority: int, data: bytes) -> str:
    """Store one message of ``queue``; its file name. Written under a name no reader looks at, then
    renamed: a reader never sees half a message."""
    name = message_name(queue, priority)
    final = os.path.join(folder, name)
    partial = os.path.join(folder, f".{name}.{os.getpid()}.part")
    try:
        with open(partial, "wb") as f:
            f.write(data)
        os.rename(partial, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    return name


def take_message(folder: str | Path, queue: str, keep_in: str | Path | None = None) -> bytes | None:
    """Take the next message of ``queue`` (highest priority, then oldest): None when there is none. Taking
    is an atomic rename in the folder, so of two workers reaching for one message exactly one gets it;
    the file is then deleted, or moved to ``keep_in``."""
    wanted = f"{queue}.msg"
    names = [n for n in os.listdir(folder) if n.partition(".")[2] == wanted]
    for name in sorted(names, key=delivery_order):
        taken = os.path.join(folder, f".{name}.{os.getpid()}-{uuid.uuid4().hex}.taken")
        try:
            os.rename(os.path.join(folder, name), taken)
        except OSError:  # another worker took it first
            continue
        with open(taken, "rb") as f:
            data = f.read()
        if keep_in is not None:
            os.replace(taken, os.path.join(keep_in, name))
        else:
            os.unlink(taken)
        return data
    return None
