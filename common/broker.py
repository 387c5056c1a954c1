"""Celery broker options and queue names shared by the dispatcher (backend) and the workers.

The backend sends tasks by name and never imports worker code; both sides build their Celery app's
broker settings from ``broker_options`` so the filesystem broker's folders and Redis's visibility timeout
always agree.
"""

from __future__ import annotations

from typing import Any

from common.settings import SharedSettings

TASK_EXECUTE = "runs.execute"
QUEUES = ("cpu", "gpu")


def broker_options(settings: SharedSettings) -> dict[str, Any]:
    """Transport options: the filesystem broker's folders (one exchange folder, in = out, plus
    processed/ and control/ for broadcast such as revoke), or Redis's visibility timeout."""
    options: dict[str, Any] = {"visibility_timeout": settings.broker_visibility_timeout}
    if settings.broker_url.startswith("filesystem://"):
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
    return options
