"""What the findings files' tests share (tests/backend/test_findings_examples_*.py): reading a file of
examples/findings/, the body `reasonlab submit` sends for it, a claim with its scale taken out, and the
checks every claim of every file passes (it validates, and its arms' queries and metric compile on both
databases, naming the file's experiment)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from backend import query
from backend.claims import evaluate as evaluation
from backend.claims.schemas import ClaimCreate

FINDINGS = Path(__file__).resolve().parents[2] / "examples" / "findings"


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((FINDINGS / name).read_text())
    assert isinstance(doc, dict)
    return doc


def experiment_body(doc: dict[str, Any]) -> dict[str, Any]:
    """What `reasonlab submit` sends for the file: everything but its claims."""
    return {key: value for key, value in doc.items() if key != "claims"}


def without_scale(claim: dict[str, Any], *also: tuple[str, str]) -> dict[str, Any]:
    """A claim with its scale taken out: " (paper scale)" and the experiment its queries name, and each
    ``(pattern, replacement)`` of ``also`` in its queries."""
    out = copy.deepcopy(claim)
    out["name"] = out["name"].removesuffix(" (paper scale)")
    definition = out["definition"]
    definition["family"] = definition["family"].removesuffix(" (paper scale)")
    for arm in definition["arms"]:
        q = re.sub(r'experiment = "[^"]+"', 'experiment = "X"', arm["query"])
        for pattern, replacement in also:
            q = re.sub(pattern, replacement, q)
        arm["query"] = q
    return out


def checked_claims(doc: dict[str, Any], at_least: int) -> list[ClaimCreate]:
    """The file's claims, each validated, with distinct names, its arms' queries naming the file's
    experiment and compiling (with its metric) on SQLite and Postgres, as the service checks at creation."""
    claims = doc["claims"]
    assert len({c["name"] for c in claims}) == len(claims) >= at_least
    experiment = f'experiment = "{doc["name"]}"'
    out = []
    for raw in claims:
        claim = ClaimCreate.model_validate(raw)
        for arm in claim.definition.arms:
            assert arm.query.startswith(experiment + " and "), (claim.name, arm.name)
            for dialect in ("sqlite", "postgresql"):
                query.where(query.RUNS, arm.query, dialect)
                query.metric_column(query.RUNS, evaluation.metric_text(claim.definition), dialect)
        out.append(claim)
    return out
