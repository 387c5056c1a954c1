"""Claims (backend/claims/) on SQLite and Postgres: validation with field paths, verdicts on planted data
checked against scipy.stats and against the same statistics computed here by hand with numpy (paired t,
Welch's t, a percentile bootstrap, the needed n against the noncentral t's exact power), Holm across a
family, pre-registration kept and lost, versions, comments, reviews, the activity feed, and who may do
what."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from tests.backend.conftest import Api

pytestmark = pytest.mark.dialect_matrix  # SQL computes the statistics: SQLite and Postgres


def _pid(api: Api, token: str | None = None) -> int:
    projects = api.client.get("/api/v1/projects", headers=api.h(token)).json()
    return next(p["id"] for p in projects if p["name"] == "default")


def _runs(api: Api, lr: float, seeds: list[int], name: str = "exp") -> list[dict[str, Any]]:
    """A diagnostic experiment at train.lr = ``lr`` over ``seeds``, its runs queued (none started)."""
    res = api.submit({"train": {"lr": lr}}, sweep={"seeds": seeds}, name=name)
    assert res.status_code == 201, res.text
    return sorted(res.json()["runs"], key=lambda r: r["params"]["seed"])


def _start(api: Api, run_id: int) -> None:
    r = api.client.post(
        f"/api/v1/runs/{run_id}/claim", json={"attempt": 1, "worker": "w"}, headers=api.worker
    )
    assert r.status_code == 200, r.text


def _end(api: Api, run_id: int, values: list[tuple[int, float]], key: str = "acc") -> None:
    """Log ``key`` at (step, value) points and finish the run (succeeded); starts it first if queued."""
    got = api.client.get(f"/api/v1/runs/{run_id}", headers=api.h()).json()
    if got["status"] == "queued":
        _start(api, run_id)
    body = {"points": [{"key": key, "step": s, "value": v} for s, v in values]}
    assert api.client.post(f"/api/v1/runs/{run_id}/metrics", json=body, headers=api.worker).status_code == 200
    fin = {"attempt": 1, "status": "succeeded"}
    assert api.client.post(f"/api/v1/runs/{run_id}/finish", json=fin, headers=api.worker).status_code == 200


def _definition(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "section": "001 §4.2",
        "arms": [
            {"name": "private", "query": "params.train.lr = 0.1"},
            {"name": "shared", "query": "params.train.lr = 0.2"},
        ],
        "metric": "acc",
        "direction": "greater",
    }
    return base | kw


def _create(api: Api, name: str, token: str | None = None, **kw: Any) -> dict[str, Any]:
    res = api.client.post(
        f"/api/v1/projects/{_pid(api, token)}/claims",
        json={"name": name, "definition": _definition(**kw)},
        headers=api.h(token),
    )
    assert res.status_code == 201, res.text
    return dict(res.json())


def _get(api: Api, claim_id: int, token: str | None = None) -> dict[str, Any]:
    res = api.client.get(f"/api/v1/claims/{claim_id}", headers=api.h(token))
    assert res.status_code == 200, res.text
    return dict(res.json())


def _close(got: float | None, want: float, rel: float = 1e-7) -> None:
    assert got is not None and math.isclose(got, want, rel_tol=rel, abs_tol=1e-12), (got, want)


# ------------------------------------------------------------------------------------------ by hand


def _t_quantile(df: float, q: float) -> float:
    return float(sps.t.ppf(q, df))


def _hand_paired(a: np.ndarray, b: np.ndarray, alpha: float) -> dict[str, float]:
    d = b - a
    n = len(d)
    mean = d.sum() / n
    sd = math.sqrt(((d - mean) ** 2).sum() / (n - 1))
    se = sd / math.sqrt(n)
    t = mean / se
    half = _t_quantile(n - 1, 1 - alpha / 2) * se
    return {"effect": mean, "t": t, "df": n - 1, "lo": mean - half, "hi": mean + half, "sd": sd}


def _hand_welch(a: np.ndarray, b: np.ndarray, alpha: float) -> dict[str, float]:
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    effect = b.mean() - a.mean()
    half = _t_quantile(df, 1 - alpha / 2) * se
    return {"effect": effect, "t": effect / se, "df": df, "lo": effect - half, "hi": effect + half}


def _exact_n(effect: float, sd: float, alpha: float, power: float, paired: bool) -> int:
    """The smallest n whose two-sided t test reaches ``power`` at ``effect`` (the noncentral t)."""
    for n in range(2, 100_000):
        df = n - 1 if paired else 2 * (n - 1)
        nc = effect / (sd * math.sqrt((1 if paired else 2) / n))
        crit = sps.t.ppf(1 - alpha / 2, df)
        if sps.nct.sf(crit, df, nc) + sps.nct.cdf(-crit, df, nc) >= power:
            return n
    raise AssertionError("no n")


def _check_arm(arm: dict[str, Any], values: np.ndarray, alpha: float) -> None:
    n = len(values)
    assert arm["n"] == n
    _close(arm["mean"], float(values.mean()))
    _close(arm["std"], float(values.std(ddof=1)))
    low, high = sps.t.interval(1 - alpha, n - 1, loc=values.mean(), scale=sps.sem(values))
    _close(arm["ci_low"], float(low))
    _close(arm["ci_high"], float(high))


# ------------------------------------------------------------------------------------------ tests

A = np.array([0.61, 0.64, 0.58, 0.66, 0.60, 0.63, 0.59, 0.65])


def test_an_effect_that_exists_is_supported_paired_by_seed(api: Api) -> None:
    seeds = list(range(8))
    ref, arm = _runs(api, 0.1, seeds), _runs(api, 0.2, seeds)
    b = A + np.array([0.05, 0.07, 0.04, 0.06, 0.08, 0.05, 0.06, 0.07])
    claim = _create(api, "shared beats private", min_effect=0.02)
    ev = claim["evaluation"]
    assert ev["verdict"] == "inconclusive" and [a["n"] for a in ev["arms"]] == [0, 0]
    assert ev["comparisons"][0]["reason"] == "needs at least 2 runs in each arm"
    for r, x in zip(ref, A, strict=True):
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    for r, x in zip(arm, b, strict=True):
        _end(api, r["id"], [(1, 0.1), (10, float(x))])
    ev = _get(api, claim["id"])["evaluation"]
    _check_arm(ev["arms"][0], A, 0.05)
    _check_arm(ev["arms"][1], b, 0.05)
    assert ev["arms"][0]["run_ids"] == sorted(r["id"] for r in ref)
    (c,) = ev["comparisons"]
    assert c["test"] == "paired" and c["n"] == 8 and c["arm"] == "shared" and c["reference"] == "private"
    hand = _hand_paired(A, b, 0.05)
    scipy_t = sps.ttest_rel(b, A)
    _close(c["effect"], hand["effect"])
    _close(c["statistic"], hand["t"])
    _close(c["statistic"], float(scipy_t.statistic))
    _close(c["p_value"], float(scipy_t.pvalue))
    _close(c["ci_low"], hand["lo"])
    _close(c["ci_high"], hand["hi"])
    assert c["df"] == 7 and c["p_adjusted"] == c["p_value"]  # a family of one
    assert c["verdict"] == "supported" and ev["verdict"] == "supported" and c["needed_n"] is None
    # the same data against the opposite direction: contradicted (significant, the other way)
    res = api.client.patch(
        f"/api/v1/claims/{claim['id']}", json={"definition": _definition(direction="less")}, headers=api.h()
    )
    (c,) = res.json()["evaluation"]["comparisons"]
    assert c["verdict"] == "contradicted" and "opposite direction" in c["reason"]
    assert res.json()["evaluation"]["verdict"] == "contradicted"


def test_welch_when_the_arms_share_no_seeds_and_an_effect_that_does_not_exist(api: Api) -> None:
    ref, arm = _runs(api, 0.1, list(range(6))), _runs(api, 0.2, list(range(10, 17)))
    a = np.array([0.70, 0.72, 0.69, 0.71, 0.73, 0.70])
    b = np.array([0.71, 0.69, 0.72, 0.70, 0.71, 0.72, 0.70])
    for r, x in zip(ref, a, strict=True):
        _end(api, r["id"], [(5, float(x))])
    for r, x in zip(arm, b, strict=True):
        _end(api, r["id"], [(5, float(x))])
    # the smallest effect worth reporting is 0.05: the interval lies wholly below it
    claim = _create(api, "no effect", min_effect=0.05)
    (c,) = claim["evaluation"]["comparisons"]
    assert c["test"] == "welch" and c["n"] == 6
    hand = _hand_welch(a, b, 0.05)
    scipy_t = sps.ttest_ind(b, a, equal_var=False)
    _close(c["effect"], hand["effect"])
    _close(c["statistic"], float(scipy_t.statistic))
    _close(c["statistic"], hand["t"])
    _close(c["df"], hand["df"])
    _close(c["p_value"], float(scipy_t.pvalue))
    _close(c["ci_low"], hand["lo"])
    _close(c["ci_high"], hand["hi"])
    assert c["p_value"] > 0.05 and c["ci_high"] < 0.05
    assert c["verdict"] == "contradicted" and "below the smallest effect" in c["reason"]
    # without a smallest effect the same data decide nothing; the power calculation sizes the observed effect
    res = api.client.patch(
        f"/api/v1/claims/{claim['id']}", json={"definition": _definition(min_effect=0.0)}, headers=api.h()
    )
    assert res.status_code == 200, res.text
    (c,) = res.json()["evaluation"]["comparisons"]
    assert c["verdict"] == "inconclusive" and c["needed_n"] is not None and c["needed_n"] > 7


def test_an_effect_too_small_for_n_is_inconclusive_with_the_n_that_would_decide(api: Api) -> None:
    seeds = [0, 1, 2]
    ref, arm = _runs(api, 0.1, seeds), _runs(api, 0.2, seeds)
    a = np.array([0.60, 0.70, 0.65])
    b = np.array([0.63, 0.69, 0.71])  # differences 0.03, -0.01, 0.06: mean 0.0267, sd 0.035
    for r, x in zip(ref, a, strict=True):
        _end(api, r["id"], [(3, float(x))])
    for r, x in zip(arm, b, strict=True):
        _end(api, r["id"], [(3, float(x))])
    claim = _create(api, "small", min_effect=0.02, power=0.9)
    (c,) = claim["evaluation"]["comparisons"]
    assert c["test"] == "paired" and c["verdict"] == "inconclusive"
    _close(c["p_value"], float(sps.ttest_rel(b, a).pvalue))
    sd = _hand_paired(a, b, 0.05)["sd"]
    exact = _exact_n(0.02, sd, 0.05, 0.9, paired=True)
    assert c["needed_n"] == exact and exact > 3
    # an explicit Welch test of the same runs: per arm, two arms
    res = api.client.patch(
        f"/api/v1/claims/{claim['id']}",
        json={"definition": _definition(min_effect=0.02, power=0.9, test={"type": "t", "pairing": "welch"})},
        headers=api.h(),
    )
    (c,) = res.json()["evaluation"]["comparisons"]
    assert c["test"] == "welch"
    _close(c["p_value"], float(sps.ttest_ind(b, a, equal_var=False).pvalue))
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert c["needed_n"] == _exact_n(0.02, pooled, 0.05, 0.9, paired=False)


def test_readings_best_and_mean_of_the_last_steps_and_the_bootstrap(api: Api) -> None:
    seeds = list(range(6))
    ref, arm = _runs(api, 0.1, seeds), _runs(api, 0.2, seeds)
    series_a = [[(s, 2.0 - 0.1 * s + 0.01 * k) for s in range(10)] for k in range(6)]
    series_b = [[(s, 1.5 - 0.1 * s + 0.02 * k) for s in range(10)] for k in range(6)]
    for r, pts in zip(ref, series_a, strict=True):
        _end(api, r["id"], pts, key="val/loss")
    for r, pts in zip(arm, series_b, strict=True):
        _end(api, r["id"], pts, key="val/loss")
    last3 = {
        "a": np.array([np.mean([v for _, v in pts[-3:]]) for pts in series_a]),
        "b": np.array([np.mean([v for _, v in pts[-3:]]) for pts in series_b]),
    }
    claim = _create(
        api, "loss lower", metric="val/loss", direction="less", read={"mode": "mean_last", "steps": 3}
    )
    ev = claim["evaluation"]
    _check_arm(ev["arms"][0], last3["a"], 0.05)
    _check_arm(ev["arms"][1], last3["b"], 0.05)
    (c,) = ev["comparisons"]
    _close(c["p_value"], float(sps.ttest_rel(last3["b"], last3["a"]).pvalue))
    assert c["effect"] < 0 and c["verdict"] == "supported"
    # best: the diagnostic kind declares *loss* as minimised
    best = {
        "a": np.array([min(v for _, v in p) for p in series_a]),
        "b": np.array([min(v for _, v in p) for p in series_b]),
    }
    res = api.client.patch(
        f"/api/v1/claims/{claim['id']}",
        json={"definition": _definition(metric="val/loss", direction="less", read={"mode": "best"})},
        headers=api.h(),
    )
    _check_arm(res.json()["evaluation"]["arms"][1], best["b"], 0.05)
    # a bootstrap of the pairs: the percentile interval against scipy's (another generator: a tolerance)
    res = api.client.patch(
        f"/api/v1/claims/{claim['id']}",
        json={
            "definition": _definition(
                metric="val/loss", direction="less", test={"type": "bootstrap", "resamples": 20000, "seed": 7}
            )
        },
        headers=api.h(),
    )
    (c,) = res.json()["evaluation"]["comparisons"]
    d = np.array([p[-1][1] for p in series_b]) - np.array([p[-1][1] for p in series_a])
    ref_ci = sps.bootstrap(
        (d,), np.mean, confidence_level=0.95, method="percentile", n_resamples=20000, random_state=1
    )
    assert c["test"] == "bootstrap_paired" and c["statistic"] is None
    _close(c["effect"], float(d.mean()))
    assert abs(c["ci_low"] - ref_ci.confidence_interval.low) < 0.005
    assert abs(c["ci_high"] - ref_ci.confidence_interval.high) < 0.005
    assert c["p_value"] == pytest.approx(2 / 20001) and c["verdict"] == "supported"


@pytest.mark.heavy
def test_holm_across_a_family(api: Api) -> None:
    seeds = list(range(5))
    groups = {lr: _runs(api, lr, seeds) for lr in (0.1, 0.2, 0.3, 0.4)}
    base = np.array([0.50, 0.55, 0.52, 0.58, 0.54])
    shifts = {
        0.1: np.zeros(5),
        0.2: np.array([0.030, 0.050, 0.020, 0.060, 0.045]),  # clearly up
        0.3: np.array([0.010, 0.030, -0.005, 0.025, 0.020]),  # up, weaker
        0.4: np.array([0.020, -0.010, 0.015, 0.000, 0.030]),  # barely
    }
    for lr, runs in groups.items():
        for r, x in zip(runs, base + shifts[lr], strict=True):
            _end(api, r["id"], [(1, float(x))])
    arms = {lr: {"name": f"lr {lr}", "query": f"params.train.lr = {lr}"} for lr in groups}
    made = [
        _create(api, "c2", family="table 2", arms=[arms[0.1], arms[0.2]]),
        _create(api, "c3", family="table 2", arms=[arms[0.1], arms[0.3]]),
        _create(api, "c4", family="table 2", arms=[arms[0.1], arms[0.4]]),
        _create(api, "alone", arms=[arms[0.1], arms[0.3]]),
    ]
    raw = [float(sps.ttest_rel(base + shifts[lr], base).pvalue) for lr in (0.2, 0.3, 0.4)]
    # Holm by hand: sorted ascending, (m - rank) * p, running maximum, capped at 1
    order = sorted(range(3), key=lambda i: raw[i])
    want = [0.0] * 3
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[i]))
        want[i] = running
    page = api.client.get(f"/api/v1/projects/{_pid(api)}/claims", headers=api.h()).json()
    assert page["next_cursor"] is None
    listed = {c["name"]: c for c in page["items"]}
    for name, p, adj in zip(("c2", "c3", "c4"), raw, want, strict=True):
        (c,) = listed[name]["evaluation"]["comparisons"]
        _close(c["p_value"], p)
        _close(c["p_adjusted"], adj)
        assert (
            listed[name]["evaluation"]["family"] == "table 2"
            and listed[name]["evaluation"]["family_size"] == 3
        )
    # the same comparison alone is not corrected; in the family it is
    (alone,) = listed["alone"]["evaluation"]["comparisons"]
    _close(alone["p_adjusted"], raw[1])
    assert listed["alone"]["evaluation"]["family_size"] == 1
    assert want[1] > raw[1]
    assert made[0]["id"] != made[1]["id"]
    # more than two arms: each against the first, each a hypothesis of the family
    three = _create(api, "c234", family="three", arms=[arms[0.1], arms[0.2], arms[0.3], arms[0.4]])
    comps = three["evaluation"]["comparisons"]
    assert [c["arm"] for c in comps] == ["lr 0.2", "lr 0.3", "lr 0.4"] and three["evaluation"][
        "family_size"
    ] == 3
    for c, adj in zip(comps, want, strict=True):
        _close(c["p_adjusted"], adj)
    assert [c["verdict"] == "supported" for c in comps] == [p < 0.05 for p in want]
    assert three["evaluation"]["verdict"] == "inconclusive" and want[2] >= 0.05


def test_preregistration_kept_and_lost_and_versions(api: Api) -> None:
    meg = api.user("meg")
    seeds = [0, 1, 2, 3]
    ref, arm = _runs(api, 0.1, seeds), _runs(api, 0.2, seeds)
    claim = _create(api, "prereg", token=meg)
    assert claim["evaluation"]["preregistration"]["status"] == "not locked"
    locked = api.client.post(f"/api/v1/claims/{claim['id']}/lock", headers=api.h(meg))
    assert locked.status_code == 200, locked.text
    pre = locked.json()["evaluation"]["preregistration"]
    assert pre["status"] == "pre-registered" and pre["locked_version"] == 1 and pre["locked_by"] == "meg"
    assert pre["locked_hash"] == claim["hash"] and pre["first_run_started_at"] is None
    assert api.client.post(f"/api/v1/claims/{claim['id']}/lock", headers=api.h(meg)).status_code == 409
    for i, (r, s) in enumerate(zip(ref + arm, [*A[:4], *(A[:4] + 0.05)], strict=True)):
        _end(api, r["id"], [(1, float(s) + 0.001 * i)])
    got = _get(api, claim["id"])
    pre = got["evaluation"]["preregistration"]
    assert pre["status"] == "pre-registered" and pre["first_run_started_at"] >= pre["locked_at"]
    assert got["evaluation"]["version"] == 1 and got["evaluation"]["hash"] == claim["hash"]
    # the same definition again is no new version
    same = api.client.patch(
        f"/api/v1/claims/{claim['id']}", json={"definition": claim["definition"]}, headers=api.h(meg)
    ).json()
    assert same["version"] == 1 and same["evaluation"]["preregistration"]["status"] == "pre-registered"
    # an edit after the runs started: version 2 decides, and it is not the one locked
    edited = api.client.patch(
        f"/api/v1/claims/{claim['id']}", json={"definition": _definition(alpha=0.1)}, headers=api.h(meg)
    ).json()
    assert edited["version"] == 2 and edited["hash"] != claim["hash"]
    assert edited["evaluation"]["version"] == 2
    assert edited["evaluation"]["preregistration"]["status"] == "edited after lock"
    relocked = api.client.post(f"/api/v1/claims/{claim['id']}/lock", headers=api.h(meg)).json()
    assert relocked["evaluation"]["preregistration"]["status"] == "locked late"
    versions = api.client.get(f"/api/v1/claims/{claim['id']}/versions", headers=api.h(meg)).json()
    assert [(v["version"], v["hash"]) for v in versions] == [(1, claim["hash"]), (2, edited["hash"])]
    assert versions[1]["definition"]["alpha"] == 0.1
    # locked after the first run started: never pre-registered
    late = _create(api, "late", token=meg)
    assert late["evaluation"]["preregistration"]["status"] == "not locked"
    late = api.client.post(f"/api/v1/claims/{late['id']}/lock", headers=api.h(meg)).json()
    assert late["evaluation"]["preregistration"]["status"] == "locked late"
    # edited after the lock but before any run: lost until locked again, then kept
    fresh = _create(
        api,
        "fresh",
        token=meg,
        arms=[
            {"name": "p", "query": "params.train.lr = 0.7"},
            {"name": "q", "query": "params.train.lr = 0.8"},
        ],
    )
    api.client.post(f"/api/v1/claims/{fresh['id']}/lock", headers=api.h(meg))
    again = api.client.patch(
        f"/api/v1/claims/{fresh['id']}",
        json={
            "definition": _definition(
                arms=[
                    {"name": "p", "query": "params.train.lr = 0.7"},
                    {"name": "q", "query": "params.train.lr = 0.9"},
                ]
            )
        },
        headers=api.h(meg),
    ).json()
    assert again["evaluation"]["preregistration"]["status"] == "edited after lock"
    again = api.client.post(f"/api/v1/claims/{fresh['id']}/lock", headers=api.h(meg)).json()
    assert again["evaluation"]["preregistration"]["status"] == "pre-registered"
    assert again["evaluation"]["preregistration"]["locked_version"] == 2
    _end(api, _runs(api, 0.9, [0])[0]["id"], [(1, 0.5)])
    assert _get(api, fresh["id"])["evaluation"]["preregistration"]["status"] == "pre-registered"


def test_validation_names_the_field(api: Api) -> None:
    pid = _pid(api)

    def locs(definition: dict[str, Any], name: str = "bad") -> list[list[Any]]:
        res = api.client.post(
            f"/api/v1/projects/{pid}/claims", json={"name": name, "definition": definition}, headers=api.h()
        )
        assert res.status_code == 422, res.text
        return [e["loc"] for e in res.json()["errors"]]

    assert ["body", "definition", "arms"] in locs(_definition(arms=[{"name": "a", "query": "id > 0"}]))
    assert ["body", "definition", "arms", 1, "query"] in locs(
        _definition(arms=[{"name": "a", "query": "id > 0"}, {"name": "b", "query": "colour = 1"}])
    )
    assert ["body", "definition", "arms", 0, "query"] in locs(
        _definition(arms=[{"name": "a", "query": "id >"}, {"name": "b", "query": "id > 1"}])
    )
    assert ["body", "definition", "arms"] in locs(
        _definition(arms=[{"name": "a", "query": "id > 0"}, {"name": "a", "query": "id > 1"}])
    )
    assert ["body", "definition", "surprise"] in locs(_definition(surprise=1))
    assert ["body", "definition", "alpha"] in locs(_definition(alpha=0))
    assert ["body", "definition", "min_effect"] in locs(_definition(min_effect=-1))
    assert ["body", "definition", "direction"] in locs(_definition(direction="up"))
    assert ["body", "definition", "read", "mean_last", "steps"] in locs(
        _definition(read={"mode": "mean_last"})
    )
    assert any(
        loc[:3] == ["body", "definition", "read"] for loc in locs(_definition(read={"mode": "median"}))
    )
    assert ["body", "definition", "test", "bootstrap", "resamples"] in locs(
        _definition(test={"type": "bootstrap", "resamples": 5})
    )
    assert ["body", "definition", "test", "t", "pairing"] in locs(
        _definition(test={"type": "t", "pairing": "x"})
    )
    # best of a key no kind declares a direction for
    assert ["body", "definition", "read"] in locs(_definition(metric="tokens", read={"mode": "best"}))
    assert ["body", "name"] in locs(_definition(), name=" spaced ")
    assert ["body", "definition", "section"] in locs(
        {k: v for k, v in _definition().items() if k != "section"}
    )
    _create(api, "taken")
    res = api.client.post(
        f"/api/v1/projects/{pid}/claims", json={"name": "taken", "definition": _definition()}, headers=api.h()
    )
    assert res.status_code == 409 and res.json()["errors"][0]["loc"] == ["body", "name"]


def test_who_may_do_what_comments_reviews_and_the_activity_feed(api: Api) -> None:
    meg, vic = api.user("meg"), api.user("vic", role="viewer")
    ozzie = api.user("ozzie", project="elsewhere")
    claim = _create(api, "team claim", token=meg)
    url = f"/api/v1/claims/{claim['id']}"
    # a viewer reads, cannot create, edit, lock, comment or review
    assert _get(api, claim["id"], vic)["name"] == "team claim"
    listed = api.client.get(f"/api/v1/projects/{_pid(api, vic)}/claims", headers=api.h(vic))
    assert listed.status_code == 200 and [c["name"] for c in listed.json()["items"]] == ["team claim"]
    assert listed.json()["items"][0]["can_edit"] is False
    res = api.client.post(
        f"/api/v1/projects/{_pid(api, vic)}/claims",
        json={"name": "v", "definition": _definition()},
        headers=api.h(vic),
    )
    assert res.status_code == 403
    assert api.client.patch(url, json={"name": "x"}, headers=api.h(vic)).status_code == 403
    assert api.client.post(f"{url}/lock", headers=api.h(vic)).status_code == 403
    assert api.client.post(f"{url}/comments", json={"body": "hm"}, headers=api.h(vic)).status_code == 403
    assert api.client.put(f"{url}/review", json={"state": "approved"}, headers=api.h(vic)).status_code == 403
    # another project's user: 404, as a missing claim
    for method, path in (("GET", url), ("GET", f"{url}/versions"), ("POST", f"{url}/lock"), ("DELETE", url)):
        assert api.client.request(method, path, headers=api.h(ozzie)).status_code == 404
    assert api.client.get(f"/api/v1/projects/{_pid(api)}/claims", headers=api.h(ozzie)).status_code == 404
    assert api.client.get("/api/v1/claims/999999", headers=api.h()).status_code == 404
    # comments and reviews, like an experiment's
    res = api.client.post(f"{url}/comments", json={"body": "which seeds?"}, headers=api.h(meg))
    assert res.status_code == 201 and res.json()["author"] == "meg"
    assert [c["body"] for c in api.client.get(f"{url}/comments", headers=api.h(vic)).json()] == [
        "which seeds?"
    ]
    res = api.client.put(f"{url}/review", json={"state": "approved", "body": "ok"}, headers=api.h())
    assert res.status_code == 200 and res.json()["version"] == 1
    assert _get(api, claim["id"], vic)["review"] == "approved"
    assert [r["state"] for r in api.client.get(f"{url}/reviews", headers=api.h(vic)).json()] == ["approved"]
    api.client.post(f"{url}/lock", headers=api.h(meg))
    feed = api.client.get(f"/api/v1/projects/{_pid(api)}/activity", headers=api.h(vic)).json()
    mine = [(a["type"], a["claim_id"]) for a in feed if a["claim_id"] is not None]
    assert mine == [
        ("locked", claim["id"]),
        ("reviewed", claim["id"]),
        ("commented", claim["id"]),
        ("claimed", claim["id"]),
    ]
    # only its author or a project admin deletes it
    max_ = api.user("max")
    assert api.client.delete(url, headers=api.h(max_)).status_code == 403
    assert api.client.delete(url, headers=api.h(meg)).status_code == 204
    assert api.client.get(url, headers=api.h(meg)).status_code == 404


def test_a_stored_definition_the_language_no_longer_takes_is_inconclusive_saying_why(api: Api) -> None:
    """A claim checked when it was stated whose query later stops parsing (a kind's result field gone, say)
    is evaluated, not a 500: its comparisons name the problem."""
    from backend.db import get_engine, session_factory, session_scope
    from backend.models import ClaimVersion

    claim = _create(api, "stale")
    with session_scope(session_factory(get_engine(api.settings.database_url))) as session:
        row = session.get(ClaimVersion, (claim["id"], 1))
        assert row is not None
        row.definition = {
            **row.definition,
            "arms": [{"name": "a", "query": "colour = 1"}, row.definition["arms"][1]],
        }
    got = _get(api, claim["id"])["evaluation"]
    assert got["verdict"] == "inconclusive" and [a["n"] for a in got["arms"]] == [0, 0]
    assert got["comparisons"][0]["reason"].startswith("the definition no longer reads: ")
