"""How a confinement rule says no: ``Refused``, the one error of spec confinement, and its form at a
spec field (``field_error``); with what every rule refuses in any value (control characters)."""

from __future__ import annotations

import re

from pydantic_core import PydanticCustomError

from worker.specs.errors import RunError

CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Refused(RunError, ValueError):
    """A value the confinement rules refuse; the message is worded for a 422 and names no secret.

    At submission a spec's field validator turns it into a validation error at the field (``field_error``);
    in a running run (``worker.runtime.confined``, which prefixes the field) it is a ``RunError``: the run
    fails with its message, without a traceback."""


def field_error(kind: str, exc: Refused) -> PydanticCustomError:
    """``exc`` as the validation error of a spec field (a 422 whose ``loc`` names it)."""
    return PydanticCustomError(kind, "{reason}", {"reason": str(exc)})
