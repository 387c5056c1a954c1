"""Per-step routing analysis (paper 001, section 5.4, Figure 3): for each task, the mean router weight of
every skill at every reasoning step and the mean stop gate; case studies with the top-2 skills per step of
sampled instances; and, where the right skill of each step is known (the synthetic suite), how often the
router's top skill is it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from worker.core.reasonformer.data.example import Example


@dataclass(frozen=True)
class CaseStep:
    skills: tuple[str, ...]  # the top-2 skills, best first
    weights: tuple[float, ...]
    stop_gate: float | None


@dataclass(frozen=True)
class Case:
    input: str
    target: str
    prediction: str | None
    expected: tuple[str | None, ...]
    steps: tuple[CaseStep, ...]


@dataclass(frozen=True)
class TaskRouting:
    task: str
    count: int
    weights: list[list[float]]  # [S][n] mean router distribution
    stop_gates: list[float] | None  # [S] mean
    expected: list[str | None] | None  # the right skill per step when the task has one order, else None
    step_match: list[float | None]  # [S] top (non-general) skill == the expected one, over labelled instances
    match: float | None  # over all labelled (instance, step) pairs
    order_match: float | None  # instances whose every labelled step matches
    cases: list[Case]


def expected_per_step(skills: Sequence[str], depth: int) -> list[str | None]:
    """One skill: that skill at every step (the paper's pre-training target); a program: its skills in
    order, None past its end."""
    if len(skills) == 1:
        return [skills[0]] * depth
    return [skills[s] if s < len(skills) else None for s in range(depth)]


def top_skill(probs: Tensor, skills: Sequence[str], general: str | None) -> Tensor:
    """Index of the most weighted skill per step, ``general`` excluded (every instance activates it, so
    "the instance's skill" is the best of the others). probs: [..., n] -> [...] long."""
    if general is None or general not in skills:
        return probs.argmax(dim=-1)
    masked = probs.clone()
    masked[..., skills.index(general)] = -1.0
    return masked.argmax(dim=-1)


def summarize_routing(
    examples: Sequence[Example],
    probs: Sequence[Tensor],
    stop_gates: Sequence[Tensor | None],
    skills: Sequence[str],
    general: str | None,
    *,
    predictions: Sequence[str] | None = None,
    cases_per_task: int = 3,
    seed: int = 0,
) -> list[TaskRouting]:
    """TaskRouting of every task among ``examples`` (probs[i]: [S, n], stop_gates[i]: [S] or None)."""
    assert len(examples) == len(probs), f"{len(examples)} examples, {len(probs)} traces"
    rng = np.random.default_rng(seed)
    by_task: dict[str, list[int]] = {}
    for i, e in enumerate(examples):
        by_task.setdefault(e.task, []).append(i)
    out = []
    for task in sorted(by_task):
        idx = by_task[task]
        P = torch.stack([probs[i] for i in idx])  # [N, S, n]
        N, S, _ = P.shape
        gates = [stop_gates[i] for i in idx]
        G = torch.stack([g for g in gates if g is not None]) if all(g is not None for g in gates) else None
        top = top_skill(P, skills, general)  # [N, S]
        expected: list[list[str | None]] = [
            expected_per_step(examples[i].skills, S) if examples[i].skills else [None] * S for i in idx
        ]
        hits = torch.zeros(N, S)
        labelled = torch.zeros(N, S, dtype=torch.bool)
        for r, exp in enumerate(expected):
            for s, name in enumerate(exp):
                if name is not None:
                    labelled[r, s] = True
                    hits[r, s] = float(skills[int(top[r, s])] == name)
        step_match = [
            float(hits[:, s][labelled[:, s]].mean()) if labelled[:, s].any() else None for s in range(S)
        ]
        has = labelled.any(dim=1)
        match = float(hits[labelled].mean()) if labelled.any() else None
        order_match = float(((hits.bool() | ~labelled).all(dim=1))[has].float().mean()) if has.any() else None
        one_order = all(e == expected[0] for e in expected)
        chosen = rng.choice(len(idx), size=min(cases_per_task, len(idx)), replace=False)
        cases = []
        for r in sorted(chosen.tolist()):
            i = idx[r]
            top2 = torch.topk(P[r], k=min(2, P.shape[-1]), dim=-1)  # [S, 2]
            steps = tuple(
                CaseStep(
                    skills=tuple(skills[j] for j in top2.indices[s].tolist()),
                    weights=tuple(round(w, 4) for w in top2.values[s].tolist()),
                    stop_gate=float(G[r, s]) if G is not None else None,
                )
                for s in range(S)
            )
            cases.append(
                Case(
                    examples[i].input,
                    examples[i].output,
                    predictions[i] if predictions is not None else None,
                    tuple(expected[r]),
                    steps,
                )
            )
        out.append(
            TaskRouting(
                task=task,
                count=N,
                weights=P.mean(dim=0).tolist(),
                stop_gates=G.mean(dim=0).tolist() if G is not None else None,
                expected=expected[0] if one_order and any(x is not None for x in expected[0]) else None,
                step_match=step_match,
                match=match,
                order_match=order_match,
                cases=cases,
            )
        )
    return out
