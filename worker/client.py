"""Deprecated: the Python SDK is the ``reasonlab_sdk`` package now (``sdk/``, ``pip install ./sdk``).

This module only re-exports it, for notebooks and scripts that still say ``from worker.client import
ReasonLabClient``; write ``from reasonlab_sdk import ReasonLabClient`` instead, which needs httpx only
(no torch, no mlflow). The worker itself imports ``reasonlab_sdk``.
"""

from __future__ import annotations

import reasonlab_sdk as _sdk
from reasonlab_sdk import *  # noqa: F403  (the SDK's public names, listed once in its __init__)

__all__ = list(_sdk.__all__)
