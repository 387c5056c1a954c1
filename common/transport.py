"""kombu's filesystem transport with ``common.broker``'s message names and order of delivery.

The one module of ``common`` that imports kombu (an import-linter contract of its own: kombu, the stdlib
and ``common`` only): the dispatcher (``backend.runs.broker``) sends with it and the workers
(``worker.celery_app``) take with it, so both sides run the same two methods. The names and the order
(the highest priority first, then the oldest; a sequence that does not wrap) are ``common.broker``'s,
which imports no kombu.
"""

from __future__ import annotations

from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

from common.broker import take_message, write_message

__all__ = ["FilesystemTransport"]


class _FilesystemChannel(filesystem.Channel):
    # kombu names the argument payload here and message in its base class: no signature satisfies both
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        priority = self._get_message_priority(payload)
        try:
            write_message(self.data_folder_out, queue, priority, str_to_bytes(dumps(payload)))
        except OSError as exc:
            raise ChannelError(f"cannot add a message to {self.data_folder_out!r}: {exc}") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        keep_in = self.processed_folder if self.store_processed else None
        try:
            data = take_message(self.data_folder_in, queue, keep_in)
        except OSError as exc:
            raise ChannelError(f"cannot take a message of {queue!r}: {exc}") from exc
        if data is None:
            raise Empty()
        return loads(bytes_to_str(data))


class FilesystemTransport(filesystem.Transport):
    """kombu's filesystem transport, first in first out within a priority (``common.broker``)."""

    Channel = _FilesystemChannel
    can_parse_url = True  # nothing to parse in filesystem://; Celery's logs show the URL as written

    def as_uri(self, uri: str, include_password: bool = False, mask: str = "**") -> str:
        return uri
