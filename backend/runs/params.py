"""The parameters a run logs itself (``ctx.log_params``: derived values such as parameter counts; the
run's spec is its ``spec``): ``POST /runs/{id}/params`` merges them into ``runs.logged_params``.

They are stored flattened (``{"derived": {"n": 1}}`` is ``derived.n``, as MLflow shows them) and merged by
key: a key logged again keeps its last value (what the platform shows; the MLflow mirror keeps the value
it sent first, MLflow params being immutable, and tags the newer one: backend/mirror/service.py). Bounded:
at most ``MAX_LOGGED_PARAMS`` keys a post and a run, keys of at most ``MAX_PARAM_KEY`` characters, values
of at most ``MAX_PARAM_VALUE`` characters (a string's length, else its JSON text's), ``MAX_LOGGED_BYTES``
of JSON a run; anything else is a 422 naming the field. A merge is a conditional UPDATE on
``runs.logged_params_rev``, so two posts racing on one run both land.
"""

from __future__ import annotations

import json
import math
from typing import Any

from sqlalchemy.orm import Session

from backend.errors import Conflict, Invalid
from backend.mirror import repository as mirror
from backend.models import Run
from backend.runs import repository
from backend.runs.schemas import MAX_LOGGED_PARAMS, MAX_PARAM_KEY, MAX_PARAM_VALUE, ParamsIn
from backend.runs.service import check_writer
from common.mlflow_names import flatten_params

MAX_LOGGED_BYTES = 1024 * 1024  # the run's logged params as JSON text (they travel in every RunPublic)
MAX_ERRORS = 50
_MERGE_TRIES = 20


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def _value_problem(value: Any) -> str | None:
    if not _finite(value):
        return "a non-finite number (NaN, inf) is not JSON; send it as text"
    size = len(value) if isinstance(value, str) else len(json.dumps(value))
    if size > MAX_PARAM_VALUE:
        what = "text" if isinstance(value, str) else "as JSON text"
        return f"a value of {size:,} characters ({what}); at most {MAX_PARAM_VALUE:,}"
    return None


def flat_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` flattened and checked; a 422 naming every refused key (``body.params.<key>``)."""
    flat = flatten_params(params)
    if len(flat) > MAX_LOGGED_PARAMS:
        raise Invalid(
            f"at most {MAX_LOGGED_PARAMS} params a post (after flattening); this one has {len(flat)}",
            [
                {
                    "loc": ["body", "params"],
                    "msg": f"{len(flat)} keys after flattening; at most {MAX_LOGGED_PARAMS}",
                    "type": "too_many_params",
                }
            ],
        )
    errors: list[dict[str, Any]] = []
    for key, value in flat.items():
        if len(errors) >= MAX_ERRORS:
            break
        loc: list[str | int] = ["body", "params", key]
        if not key:
            errors.append({"loc": loc, "msg": "an empty key", "type": "param_key"})
        elif len(key) > MAX_PARAM_KEY:
            errors.append(
                {
                    "loc": loc,
                    "msg": f"a key of {len(key)} characters (after flattening); at most {MAX_PARAM_KEY}",
                    "type": "param_key",
                }
            )
        else:
            problem = _value_problem(value)
            if problem is not None:
                errors.append({"loc": loc, "msg": problem, "type": "param_value"})
    if errors:
        raise Invalid(f"param {errors[0]['loc'][2]!r}: {errors[0]['msg']}", errors)
    return flat


def _same(a: Any, b: Any) -> bool:
    """The same JSON value (``1``, ``1.0`` and ``true`` are three)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def log_params(session: Session, run: Run, body: ParamsIn) -> None:
    """Merge ``body.params`` into the run's logged params (the last value of a key kept). The same params
    again (a retried post, a resumed attempt) write nothing."""
    check_writer(run, body.attempt)
    flat = flat_params(body.params)
    where = repository.owned(body.attempt) if body.attempt is not None else []
    for _ in range(_MERGE_TRIES):
        stored, rev = repository.logged_params(session, run.id)
        new = {k: v for k, v in flat.items() if k not in stored or not _same(stored[k], v)}
        if not new:
            return
        merged = {**stored, **new}
        if len(merged) > MAX_LOGGED_PARAMS:
            raise Invalid(
                f"the run would have {len(merged)} logged params; at most {MAX_LOGGED_PARAMS}",
                [
                    {
                        "loc": ["body", "params"],
                        "msg": f"{len(new)} new keys for a run that has {len(stored)}; at most "
                        f"{MAX_LOGGED_PARAMS} in all",
                        "type": "too_many_params",
                    }
                ],
            )
        size = len(json.dumps(merged))
        if size > MAX_LOGGED_BYTES:
            raise Invalid(
                f"the run's logged params would take {size:,} bytes as JSON; at most {MAX_LOGGED_BYTES:,}",
                [
                    {
                        "loc": ["body", "params"],
                        "msg": f"{size:,} bytes in all; at most {MAX_LOGGED_BYTES:,}",
                        "type": "too_many_params",
                    }
                ],
            )
        if repository.set_logged_params(session, run.id, merged, rev, where):
            break
        session.refresh(run)
        check_writer(run, body.attempt)  # the attempt lost the run meanwhile: 409
    else:
        raise Conflict(f"run {run.id}: params posted concurrently; try again")
    if run.status != "running":  # a finished run written to (a notebook): its MLflow mirror has work
        mirror.touch(session, run.id, finish=False)
