"""The error a run fails with when it can say why (``RunError``), declared with the specs so that a spec
value the confinement rules refuse (``worker.specs.confine.Refused``) is one: the same error names the
field in a 422 at submission and fails the run, at run time, with its message. Kinds import it from
``worker.tracking.context``, the RunContext contract."""

from __future__ import annotations


class RunError(Exception):
    """A failure the kind explains itself (a model that cannot be found, too little data): the run fails
    with this message as its error, without a traceback."""
