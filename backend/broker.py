"""The dispatcher's Celery configuration. The broker options and queue names it shares with the workers
live in ``common.broker``, so the filesystem broker's folders always agree on both sides."""

from __future__ import annotations

from typing import Any

from backend.settings import Settings
from common.broker import broker_options


def celery_config(settings: Settings) -> dict[str, Any]:
    return {
        "broker_url": settings.broker_url,
        "broker_transport_options": broker_options(settings),
        "broker_connection_retry_on_startup": True,
        "task_ignore_result": True,
        "task_serializer": "json",
        "accept_content": ["json"],
        "task_default_queue": "cpu",
    }


def task_id(run_id: int, attempt: int) -> str:
    return f"run-{run_id}-attempt-{attempt}"
