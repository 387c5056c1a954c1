"""Sweep expansion: grid x random x seeds over dotted spec paths (docs/api.md, Experiments)."""

from __future__ import annotations

import copy
import itertools
import math
import random
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PATH_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
DottedPath = Annotated[str, Field(pattern=PATH_PATTERN)]


class Distribution(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dist: Literal["uniform", "loguniform", "int_uniform", "choice"]
    low: float | None = None
    high: float | None = None
    values: list[Any] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _check(self) -> Distribution:
        if self.dist == "choice":
            if not self.values:
                raise ValueError("'choice' needs a non-empty 'values' list")
            return self
        if self.low is None or self.high is None:
            raise ValueError(f"'{self.dist}' needs 'low' and 'high'")
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low > self.high:
            raise ValueError("'low' must be finite and <= 'high'")
        if self.dist == "loguniform" and self.low <= 0:
            raise ValueError("'loguniform' needs low > 0")
        if self.dist == "int_uniform" and math.ceil(self.low) > math.floor(self.high):
            raise ValueError("'int_uniform' needs an integer between 'low' and 'high'")
        return self

    def sample(self, rng: random.Random) -> Any:
        if self.dist == "choice":
            assert self.values is not None
            return copy.deepcopy(rng.choice(self.values))
        assert self.low is not None and self.high is not None
        if self.dist == "uniform":
            return rng.uniform(self.low, self.high)
        if self.dist == "loguniform":
            return math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        return rng.randint(math.ceil(self.low), math.floor(self.high))


class RandomSweep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1, le=10_000, description="number of random samples")
    seed: int = Field(0, ge=0, description="seed of the sampler (the expansion is reproducible)")
    params: dict[DottedPath, Distribution] = Field(min_length=1)


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grid: dict[DottedPath, Annotated[list[Any], Field(min_length=1)]] = Field(default_factory=dict)
    random: RandomSweep | None = None
    seeds: list[Annotated[int, Field(ge=0, le=2**32 - 1)]] = Field(default_factory=list)


def set_path(spec: dict[str, Any], path: str, value: Any) -> None:
    """Set ``a.b.c`` in a nested dict, creating missing levels; ValueError if a level is not a mapping."""
    parts = path.split(".")
    node = spec
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = {}
            node[part] = child
        if not isinstance(child, dict):
            raise ValueError(f"cannot set {path!r}: {'.'.join(parts[: i + 1])!r} is not an object")
        node = child
    node[parts[-1]] = value


def expand(sweep: Sweep | None) -> list[dict[str, Any]]:
    """The parameter sets of a sweep, in a stable order: grid (keys in given order) x random x seeds."""
    if sweep is None:
        return [{}]
    grid_keys = list(sweep.grid)
    grid = [dict(zip(grid_keys, combo)) for combo in itertools.product(*(sweep.grid[k] for k in grid_keys))]
    samples: list[dict[str, Any]] = [{}]
    if sweep.random is not None:
        rng = random.Random(sweep.random.seed)
        samples = [{k: d.sample(rng) for k, d in sweep.random.params.items()} for _ in range(sweep.random.n)]
    seeds: list[dict[str, Any]] = [{"seed": s} for s in sweep.seeds] or [{}]
    return [{**g, **r, **s} for g in grid for r in samples for s in seeds]


def count(sweep: Sweep | None) -> int:
    if sweep is None:
        return 1
    n = math.prod(len(v) for v in sweep.grid.values()) if sweep.grid else 1
    n *= sweep.random.n if sweep.random is not None else 1
    return n * (len(sweep.seeds) or 1)


def apply(spec: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    resolved = copy.deepcopy(spec)
    for path, value in params.items():
        set_path(resolved, path, value)
    return resolved
