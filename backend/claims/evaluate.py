"""A claim evaluated on the project's runs now (``ClaimPublic.evaluation``).

Each arm: the succeeded runs its query selects in the claim's project, one value per run read from the
metric (``last``: the run's latest point, ``best``: its minimum or maximum by the kind's direction, both
from ``metric_latest``; ``mean_last``: the mean of its last N finite points), computed in the database with
the arm's count, sum and sum of squares (backend/claims/repository.py). The first arm is the reference; each
other arm against it is one comparison (one hypothesis of the family). Which test:

- ``t`` with pairing ``auto``: paired by seed when each arm holds every seed once and they share at least
  two seeds (the differences' count, sum and sum of squares over the shared seeds, in the database),
  Welch's t otherwise; ``paired``: always paired (the shared seeds only); ``welch``: never;
- ``bootstrap``: pairs resampled when pairable as for ``auto``, each arm on its own otherwise (the values
  read back; the one test computed in Python).

Holm's correction runs over every comparison of every claim of the project in the family (a claim without
a family is a family of its own); the needed n is sized at alpha / m (backend/claims/stats.py). The claim's
verdict: supported when every comparison is, contradicted when any is, inconclusive otherwise.

Pre-registration: the deciding version is the current one. ``pre-registered`` when the claim was locked at
that version (its hash recorded) no later than the first run any of its arms select started (or before any
started); an edit after the lock makes a new version the lock does not cover (``edited after lock``, until
it is locked again), and a lock after the first run started is ``locked late``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from backend import query
from backend.claims import repository, stats
from backend.claims.schemas import (
    ArmResult,
    BootstrapTest,
    ClaimDefinition,
    Comparison,
    Evaluation,
    Preregistration,
    ReadBest,
    ReadMeanLast,
)
from backend.db import utcnow
from backend.models import Claim

MEMBERS = 100  # run ids listed per arm


def metric_text(definition: ClaimDefinition) -> str:
    """The metric column the reading names, in the query language (a quoted key: any character)."""
    field = "metrics." + json.dumps(definition.metric, ensure_ascii=False)
    return f"best({field})" if isinstance(definition.read, ReadBest) else field


@dataclass
class _Raw:
    """One comparison before Holm: the test's result (None: too few runs) and what it needs."""

    arm: str
    reference: str
    test: str | None
    n: int
    result: stats.TestResult | None
    reason: str
    paired: bool


@dataclass
class _Claim:
    claim: Claim
    definition: ClaimDefinition
    hash: str
    arms: list[ArmResult]
    raws: list[_Raw]
    first_started: Any


def _compare(
    session: Session,
    definition: ClaimDefinition,
    ref_sub: Any,
    ref: tuple[str, stats.ArmStats, int, int],
    other_sub: Any,
    other: tuple[str, stats.ArmStats, int, int],
) -> _Raw:
    (ref_name, ref_stats, ref_seeds, ref_seeded), (name, o_stats, o_seeds, o_seeded) = ref, other
    test = definition.test
    alpha = definition.alpha
    unique = ref_seeds == ref_stats.n == ref_seeded and o_seeds == o_stats.n == o_seeded
    pairs = (
        repository.paired(session, ref_sub, other_sub)
        if unique or getattr(test, "pairing", "") == "paired"
        else None
    )
    want_paired = False
    if isinstance(test, BootstrapTest) or test.pairing == "auto":
        want_paired = unique and pairs is not None and pairs[0] >= 2
    elif test.pairing == "paired":
        want_paired = True
    if want_paired:
        if not unique:
            return _Raw(
                name, ref_name, None, 0, None, "a seed appears twice in an arm: runs cannot be paired", True
            )
        assert pairs is not None
        n, total, squares = pairs
        if n < 2 or total is None or squares is None:
            return _Raw(name, ref_name, None, n, None, "needs at least 2 seeds both arms ran", True)
        if isinstance(test, BootstrapTest):
            by_seed_ref = dict(repository.values(session, ref_sub))
            rows = [(by_seed_ref[s], x) for s, x in repository.values(session, other_sub) if s in by_seed_ref]
            result = stats.bootstrap(
                [r for r, _ in rows], [x for _, x in rows], True, test.resamples, test.seed, alpha
            )
            return _Raw(name, ref_name, "bootstrap_paired", n, result, "", True)
        return _Raw(name, ref_name, "paired", n, stats.paired_t(n, total, squares, alpha), "", True)
    n = min(ref_stats.n, o_stats.n)
    if ref_stats.n < 2 or o_stats.n < 2:
        return _Raw(name, ref_name, None, n, None, "needs at least 2 runs in each arm", False)
    if isinstance(test, BootstrapTest):
        result = stats.bootstrap(
            [x for _, x in repository.values(session, ref_sub)],
            [x for _, x in repository.values(session, other_sub)],
            False,
            test.resamples,
            test.seed,
            alpha,
        )
        return _Raw(name, ref_name, "bootstrap", n, result, "", False)
    return _Raw(name, ref_name, "welch", n, stats.welch_t(ref_stats, o_stats, alpha), "", False)


def _unreadable(claim: Claim, definition: ClaimDefinition, digest: str, why: str) -> _Claim:
    """A stored definition the query language no longer takes (a kind's declared field or direction gone
    since it was checked): no arm counts a run, and each comparison says why."""
    arms = [
        ArmResult(name=a.name, n=0, mean=None, std=None, ci_low=None, ci_high=None, run_ids=[])
        for a in definition.arms
    ]
    ref = definition.arms[0].name
    raws = [_Raw(a.name, ref, None, 0, None, why, False) for a in definition.arms[1:]]
    return _Claim(claim, definition, digest, arms, raws, None)


def _measure(session: Session, claim: Claim, definition: ClaimDefinition, digest: str) -> _Claim:
    dialect = session.get_bind().dialect.name
    seed = query.group_field(query.RUNS, "params.seed", dialect).columns[0]
    try:
        column = query.metric_column(query.RUNS, metric_text(definition), dialect)
        matches = [query.where(query.RUNS, arm.query, dialect) for arm in definition.arms]
    except query.QueryError as exc:
        return _unreadable(claim, definition, digest, f"the definition no longer reads: {exc}")
    mean_last = definition.read.steps if isinstance(definition.read, ReadMeanLast) else None
    subs = [
        repository.arm_values(claim.project_id, m, definition.metric, column.pick, seed, mean_last)
        for m in matches
    ]
    arms: list[ArmResult] = []
    measured: list[tuple[str, stats.ArmStats, int, int]] = []
    for arm, sub in zip(definition.arms, subs, strict=True):
        n, total, squares, seeds, seeded = repository.aggregate(session, sub)
        a = stats.arm(n, total, squares, definition.alpha)
        measured.append((arm.name, a, seeds, seeded))
        arms.append(
            ArmResult(
                name=arm.name,
                n=a.n,
                mean=a.mean,
                std=a.std,
                ci_low=a.ci_low,
                ci_high=a.ci_high,
                run_ids=repository.run_ids(session, sub, MEMBERS),
            )
        )
    raws = [
        _compare(session, definition, subs[0], measured[0], subs[i], measured[i]) for i in range(1, len(subs))
    ]
    first = repository.first_started(session, claim.project_id, matches)
    return _Claim(claim, definition, digest, arms, raws, first)


def family_of(claim: Claim, definition: ClaimDefinition) -> str:
    return definition.family if definition.family is not None else f"claim {claim.name}"


def preregistration(claim: Claim, first_started: Any) -> Preregistration:
    status: Any
    if claim.locked_at is None:
        status = "not locked"
    elif claim.locked_version != claim.version:
        status = "edited after lock"
    elif first_started is not None and claim.locked_at > first_started:
        status = "locked late"
    else:
        status = "pre-registered"
    return Preregistration(
        status=status,
        locked_version=claim.locked_version,
        locked_hash=claim.locked_hash,
        locked_at=claim.locked_at,
        locked_by=claim.locked_by.username if claim.locked_by else None,
        first_run_started_at=first_started,
    )


def evaluate(
    session: Session, wanted: list[Claim], project_claims: list[tuple[Claim, ClaimDefinition, str]]
) -> dict[int, Evaluation]:
    """The evaluation of each claim of ``wanted``; ``project_claims`` are every claim of the project with
    its current definition and hash (the families' other members count in Holm's correction)."""
    families = {family_of(c, d) for c, d, _ in project_claims if c.id in {w.id for w in wanted}}
    measured = [_measure(session, c, d, h) for c, d, h in project_claims if family_of(c, d) in families]
    now = utcnow()
    out: dict[int, Evaluation] = {}
    for family in families:
        members = [m for m in measured if family_of(m.claim, m.definition) == family]
        flat = [(m, raw) for m in members for raw in m.raws]
        adjusted = stats.holm([raw.result.p_value if raw.result else None for _, raw in flat])
        size = len(flat)
        by_claim: dict[int, list[Comparison]] = {}
        for (m, raw), p_adj in zip(flat, adjusted, strict=True):
            d = m.definition
            level = d.alpha / size
            if raw.result is None or p_adj is None:
                comparison = Comparison(
                    arm=raw.arm,
                    reference=raw.reference,
                    test=None,
                    n=raw.n,
                    effect=None,
                    ci_low=None,
                    ci_high=None,
                    statistic=None,
                    df=None,
                    p_value=None,
                    p_adjusted=None,
                    verdict="inconclusive",
                    reason=raw.reason,
                    needed_n=None,
                )
            else:
                r = raw.result
                verdict, reason = stats.verdict(r, p_adj, d.alpha, d.direction, d.min_effect)
                delta = d.min_effect if d.min_effect > 0 else abs(r.effect)
                needed = (
                    stats.needed_n(r.spread, delta, level, d.power, raw.paired)
                    if verdict == "inconclusive"
                    else None
                )
                comparison = Comparison(
                    arm=raw.arm,
                    reference=raw.reference,
                    test=raw.test,  # type: ignore[arg-type]  # one of the Literal's values
                    n=raw.n,
                    effect=r.effect,
                    ci_low=r.ci_low,
                    ci_high=r.ci_high,
                    statistic=r.statistic
                    if r.statistic is None or abs(r.statistic) != float("inf")
                    else None,
                    df=r.df,
                    p_value=r.p_value,
                    p_adjusted=p_adj,
                    verdict=verdict,
                    reason=reason,
                    needed_n=needed,
                )
            by_claim.setdefault(m.claim.id, []).append(comparison)
        for m in members:
            comparisons = by_claim.get(m.claim.id, [])
            verdicts = {c.verdict for c in comparisons}
            overall: Any = (
                "contradicted"
                if "contradicted" in verdicts
                else "supported"
                if verdicts == {"supported"}
                else "inconclusive"
            )
            out[m.claim.id] = Evaluation(
                version=m.claim.version,
                hash=m.hash,
                verdict=overall,
                arms=m.arms,
                comparisons=comparisons,
                family=family,
                family_size=size,
                preregistration=preregistration(m.claim, m.first_started),
                evaluated_at=now,
            )
    return out
