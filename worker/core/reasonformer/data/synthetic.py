"""A synthetic compositional-skills suite: five primitive skills on short digit sequences, and composite
tasks that apply two or three of them in a known order, so "which skill at which step" (paper 001,
section 5.4, Figure 3) has a right answer to compare the router with.

Primitives (a skill each; stand-ins for the paper's five, on symbols):
    reverse   3 1 4 -> 4 1 3        reorder by position
    sort      3 1 4 -> 1 3 4        reorder by value
    shift     3 1 4 -> 4 2 5        every digit + 1 mod 10
    lookup    3 1 4 -> T[3] T[1] T[4], T a fixed permutation of the digits: a "fact" table to memorise
    rotate    3 1 4 -> 1 4 3        the first digit moves to the end

A composite program ``(a, b)`` applies a then b: input ``"a then b : 3 1 4"``, output ``b(a(x))``. Only
order-identifiable programs are kept: on most inputs their output differs from that of every other order
of the same skills (``reverse then shift`` equals ``shift then reverse`` and is left out), so the order
is a fact of the task, not a convention. A seeded fraction of the programs is held out of pre-training.

Pre-training data (``{skill, input, output}``): primitives (the skill wanted at every step, as in the
paper) and the non-held-out composites with their per-step skills (our extension: step i's routing
target is skill i). Downstream tasks use the held-out programs only: ``compose2`` and ``compose3``
(generative, exact match) and ``choose2`` (multiple choice among the outputs of the program, of its
reversed order and of each skill alone).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from worker.core.reasonformer.data.example import Example

Digits = tuple[int, ...]
PRIMITIVE_NAMES: tuple[str, ...] = ("reverse", "sort", "shift", "lookup", "rotate")
# A fixed "fact" table (a permutation of 0..9, the same in every run): lookup must be memorised.
LOOKUP_TABLE: tuple[int, ...] = (7, 3, 9, 0, 5, 8, 1, 6, 2, 4)
DOWNSTREAM_TASKS: tuple[str, ...] = ("compose2", "compose3", "choose2")


def _reverse(x: Digits) -> Digits:
    return x[::-1]


def _sort(x: Digits) -> Digits:
    return tuple(sorted(x))


def _shift(x: Digits) -> Digits:
    return tuple((v + 1) % 10 for v in x)


def _lookup(x: Digits) -> Digits:
    return tuple(LOOKUP_TABLE[v] for v in x)


def _rotate(x: Digits) -> Digits:
    return x[1:] + x[:1]


PRIMITIVES: dict[str, Callable[[Digits], Digits]] = {
    "reverse": _reverse,
    "sort": _sort,
    "shift": _shift,
    "lookup": _lookup,
    "rotate": _rotate,
}


def apply(program: Sequence[str], x: Digits) -> Digits:
    """Apply the skills of ``program`` left to right."""
    for skill in program:
        x = PRIMITIVES[skill](x)
    return x


def program_name(program: Sequence[str]) -> str:
    return ">".join(program)


def render(program: Sequence[str], x: Digits) -> str:
    return f"{' then '.join(program)} : {' '.join(map(str, x))}"


def digits_text(x: Digits) -> str:
    return " ".join(map(str, x))


def order_identifiable(program: tuple[str, ...], probe: Sequence[Digits], threshold: float = 0.5) -> bool:
    """True when, on at least ``threshold`` of the probe inputs, the program's output differs from the
    output of every other order of its skills."""
    others = [p for p in itertools.permutations(program) if p != program]
    distinct = sum(all(apply(program, x) != apply(o, x) for o in others) for x in probe)
    return distinct >= threshold * len(probe)


@dataclass(frozen=True)
class SuiteConfig:
    min_len: int = 3
    max_len: int = 5
    composite_lengths: tuple[int, ...] = (2, 3)
    heldout_fraction: float = 0.3  # of the order-identifiable programs of each length
    split_seed: int = 0  # the held-out programs (fixed across runs of one study)
    primitive_fraction: float = 0.5  # of pre-training instances; the rest are training composites

    def __post_init__(self) -> None:
        assert 1 <= self.min_len <= self.max_len <= 12, f"lengths {self.min_len}..{self.max_len}"
        assert all(2 <= n <= len(PRIMITIVE_NAMES) for n in self.composite_lengths), self.composite_lengths
        assert 0.0 < self.heldout_fraction < 1.0, f"heldout_fraction in (0, 1), got {self.heldout_fraction}"
        assert 0.0 < self.primitive_fraction <= 1.0, (
            f"primitive_fraction in (0, 1], got {self.primitive_fraction}"
        )


class SkillSuite:
    """Programs, the held-out split and seeded instance sampling."""

    skills: tuple[str, ...] = PRIMITIVE_NAMES

    def __init__(self, cfg: SuiteConfig | None = None) -> None:
        self.cfg = cfg = cfg or SuiteConfig()
        probe_rng = np.random.default_rng(12345)  # a fixed probe: the program list is the same everywhere
        probe = [self._digits(probe_rng) for _ in range(200)]
        split_rng = np.random.default_rng(cfg.split_seed)
        self.train_programs: list[tuple[str, ...]] = []
        self.heldout_programs: list[tuple[str, ...]] = []
        for n in cfg.composite_lengths:
            programs = [p for p in itertools.permutations(PRIMITIVE_NAMES, n) if order_identifiable(p, probe)]
            order = split_rng.permutation(len(programs))
            num_heldout = max(1, round(cfg.heldout_fraction * len(programs)))
            self.heldout_programs += [programs[i] for i in sorted(order[:num_heldout])]
            self.train_programs += [programs[i] for i in sorted(order[num_heldout:])]

    def vocabulary(self) -> list[str]:
        return [*PRIMITIVE_NAMES, "then", ":", "?", "|", *map(str, range(10))]

    def heldout_of_length(self, n: int) -> list[tuple[str, ...]]:
        return [p for p in self.heldout_programs if len(p) == n]

    def _digits(self, rng: np.random.Generator) -> Digits:
        n = int(rng.integers(self.cfg.min_len, self.cfg.max_len + 1))
        return tuple(int(v) for v in rng.integers(0, 10, size=n))

    def instance(
        self, rng: np.random.Generator, program: tuple[str, ...], task: str | None = None
    ) -> Example:
        """A generative instance of ``program``; its ``skills`` are the program (one per step)."""
        x = self._digits(rng)
        return Example(
            task=task or program_name(program),
            input=render(program, x),
            output=digits_text(apply(program, x)),
            skills=program,
        )

    def choice(self, rng: np.random.Generator, program: tuple[str, ...], task: str = "choose2") -> Example:
        """A multiple-choice instance: which output does ``program`` give? Options: the outputs of the
        program, its reversed order and each of its skills alone (distinct ones, shuffled)."""
        candidates = [program, program[::-1], *[(s,) for s in program]]
        for _ in range(100):
            x = self._digits(rng)
            outputs = list(dict.fromkeys(digits_text(apply(p, x)) for p in candidates))
            if len(outputs) >= 3:
                break
        right = outputs[0]
        options = [outputs[i] for i in rng.permutation(len(outputs))]
        return Example(
            task=task,
            input=f"{render(program, x)} ? {' | '.join(options)}",
            output=right,
            skills=program,
            options=tuple(options),
            answer=options.index(right),
        )

    # --- pre-training -------------------------------------------------------------------------------

    def pretrain_example(self, rng: np.random.Generator) -> Example:
        """A primitive (skill at every step) or a training composite (per-step skills)."""
        if not self.train_programs or rng.random() < self.cfg.primitive_fraction:
            skill = PRIMITIVE_NAMES[int(rng.integers(len(PRIMITIVE_NAMES)))]
            return self.instance(rng, (skill,))
        program = self.train_programs[int(rng.integers(len(self.train_programs)))]
        return self.instance(rng, program)

    def pretrain_eval(self, rng: np.random.Generator, per_task: int) -> list[Example]:
        """Held-out instances of every primitive, every training composite and every held-out composite,
        ``per_task`` each (task = the program's name)."""
        out: list[Example] = []
        for program in [(s,) for s in PRIMITIVE_NAMES] + self.train_programs + self.heldout_programs:
            out += [self.instance(rng, program) for _ in range(per_task)]
        return out

    # --- downstream (held-out programs) -----------------------------------------------------------------

    def downstream(self, task: str, rng: np.random.Generator) -> Example:
        """One instance of a downstream task: a random held-out program of its kind."""
        if task == "choose2":
            programs = self.heldout_of_length(2)
            return self.choice(rng, programs[int(rng.integers(len(programs)))])
        n = {"compose2": 2, "compose3": 3}.get(task)
        assert n is not None, f"unknown synthetic task {task!r}; known: {DOWNSTREAM_TASKS}"
        programs = self.heldout_of_length(n)
        assert programs, f"no held-out program of length {n} (composite_lengths {self.cfg.composite_lengths})"
        return self.instance(rng, programs[int(rng.integers(len(programs)))], task=task)

    def available_tasks(self) -> tuple[str, ...]:
        have = {len(p) for p in self.heldout_programs}
        return tuple(t for t in DOWNSTREAM_TASKS if {"compose2": 2, "compose3": 3, "choose2": 2}[t] in have)


class ExampleStream:
    """An endless, seeded stream of examples from ``draw(rng)``, skipping inputs reserved for evaluation;
    ``state_dict``/``load_state_dict`` restore it exactly (the shared trainer's exact resume)."""

    def __init__(
        self, draw: Callable[[np.random.Generator], Example], seed: int, reserved: set[str] | None = None
    ) -> None:
        self.draw = draw
        self.rng = np.random.default_rng(seed)
        self.reserved = reserved or set()
        self.drawn = 0

    def __iter__(self) -> Iterator[Example]:
        return self

    def __next__(self) -> Example:
        for _ in range(1000):
            example = self.draw(self.rng)
            if example.input not in self.reserved:
                self.drawn += 1
                return example
        raise RuntimeError("1000 draws in a row hit the evaluation set: the input space is too small")

    def take(self, n: int) -> list[Example]:
        return [next(self) for _ in range(n)]

    def state_dict(self) -> dict[str, Any]:
        return {"bit_generator": self.rng.bit_generator.state, "drawn": self.drawn}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["bit_generator"]
        self.drawn = int(state["drawn"])
