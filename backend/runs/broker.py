"""The dispatcher's Celery configuration. The broker options and queue names it shares with the workers
live in ``common.broker``, so the filesystem broker's folders always agree on both sides.

``discard_unacked`` removes the messages of stale attempts from Redis's unacknowledged set: a worker
killed with -9 never acknowledges its message, which kombu would otherwise hand to a worker again after the
visibility timeout (7 days), only for the claim to refuse it.

``FilesystemTransport`` (``common.transport``, which the workers use too) is kombu's filesystem broker with
``common.broker``'s message names (priority, then a sequence that does not wrap) and order of delivery.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from celery import Celery

from backend.settings import Settings
from common.broker import broker_options, is_filesystem
from common.transport import FilesystemTransport


def celery_config(settings: Settings) -> dict[str, Any]:
    return {
        "broker_url": settings.broker_url,
        "broker_transport": FilesystemTransport if is_filesystem(settings.broker_url) else None,
        "broker_transport_options": broker_options(settings),
        "broker_connection_retry_on_startup": True,
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": "cpu",
    }


def task_id(run_id: int, attempt: int) -> str:
    """The Celery task id of one attempt of one run. The cancel of a queued run revokes it, and every
    worker then drops a message with that id unrun (acknowledged) for as long as it remembers the revoke
    (Celery's ``CELERY_WORKER_REVOKE_EXPIRES``, 3 hours; a worker that starts copies its peers' revokes).
    So an attempt is never queued again once it was: every way back to ``queued`` (retry, reaper,
    release) moves to a new attempt in a conditional UPDATE on the attempt it read
    (``backend.runs.service``)."""
    return f"run-{run_id}-attempt-{attempt}"


_TASK_ID = re.compile(r"run-(\d+)-attempt-(\d+)")


def parse_task_id(value: str) -> tuple[int, int] | None:
    """``(run_id, attempt)`` of a task id made by ``task_id``; None for any other id."""
    match = _TASK_ID.fullmatch(value)
    return (int(match[1]), int(match[2])) if match else None


def discard_unacked(celery: Celery, stale: Callable[[int, int], bool]) -> list[str]:
    """Remove from the broker's unacknowledged messages every ``runs.execute`` message whose
    ``stale(run_id, attempt)`` is true; the task ids removed. Redis only (other transports keep no such
    set: the filesystem broker drops a message when a worker takes it).

    kombu's Redis transport (``kombu/transport/redis.py``, ``QoS``) keeps a message taken but not yet
    acknowledged in the hash ``unacked`` (delivery tag -> JSON ``[message, exchange, routing_key]``, the
    task id in ``message["headers"]["id"]``) and the sorted set ``unacked_index`` (delivery tag -> the time
    it was taken), from which ``restore_visible`` puts it back on its queue after the visibility timeout.
    Both entries go, in one transaction, as kombu's own ``ack`` does them; a worker that acknowledges the
    message later finds nothing to remove, and a concurrent restore (a WATCHed transaction on ``unacked``)
    finds nothing to restore."""
    removed: list[str] = []
    with celery.connection_for_write() as conn:
        if conn.transport.driver_type != "redis":
            return removed
        conn.ensure_connection(max_retries=1, timeout=5)  # never hold the dispatcher up on a dead broker
        channel: Any = conn.default_channel
        prefix = getattr(channel, "global_keyprefix", "") or ""
        with channel.conn_or_acquire() as client:
            # HSCAN is not among the commands kombu's prefixing client prefixes: name the key in full
            for tag, raw in client.hscan_iter(prefix + channel.unacked_key):
                try:
                    tid = json.loads(raw)[0]["headers"]["id"]
                except (ValueError, LookupError, TypeError):
                    continue
                parsed = parse_task_id(tid) if isinstance(tid, str) else None
                if parsed is None or not stale(*parsed):
                    continue
                pipe = client.pipeline()  # one transaction, as kombu's ack
                pipe.zrem(channel.unacked_index_key, tag).hdel(channel.unacked_key, tag).execute()
                removed.append(tid)
    return removed
