"""Runs a spec names as its source (``KindManifest.source_runs``, e.g. a fine-tuning run initialised from a
pre-training run): a pydantic spec cannot see the database, so the backend checks, at submission, that
every named run exists, is visible to the submitter, is of the declared kind and has succeeded."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from backend.auth.principal import Principal
from backend.models import Run
from backend.projects import service as projects
from backend.specs import field_value


def source_run_errors(
    session: Session, principal: Principal, source_runs: Mapping[str, str], spec: Mapping[str, Any]
) -> list[tuple[list[str], str, str]]:
    """``(field path, message, error type)`` for every source run the spec names that is not usable."""
    errors: list[tuple[list[str], str, str]] = []
    for path, kind in source_runs.items():
        run_id = field_value(spec, path)
        if run_id is None:
            continue
        field = path.split(".")
        run = session.get(Run, run_id) if isinstance(run_id, int) else None
        if run is None or projects.role_in(session, principal, run.project_id) is None:
            errors.append((field, f"run {run_id} not found", "source_run_not_found"))
        elif run.kind != kind:
            errors.append((field, f"run {run_id} is a {run.kind} run, not {kind}", "source_run_kind"))
        elif run.status != "succeeded":
            errors.append(
                (field, f"run {run_id} has not succeeded (it is {run.status})", "source_run_status")
            )
    return errors
