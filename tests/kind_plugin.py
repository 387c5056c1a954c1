"""A throwaway experiment kind written as a user would, in a package of its own outside the repository:
a spec, one result type and a run function. Tests write it into a temporary folder and register it
through ``REASONLAB_KIND_PLUGINS``; nothing shared is edited."""

from __future__ import annotations

from pathlib import Path

PACKAGE = "throwaway_kind"

SPEC_MODULE = """
from typing import Literal

from pydantic import Field

from worker.specs import Example, KindManifest, SpecBase, StrictModel


class Sizes(StrictModel):
    n: int = Field(5, ge=1, le=100, description="how many squares to sum")


class ThrowawaySpec(SpecBase):
    kind: Literal["throwaway"] = "throwaway"
    sizes: Sizes = Field(default_factory=Sizes)


class SquareSum(StrictModel):
    kind: Literal["square_sum"] = "square_sum"
    n: int
    total: int


MANIFEST = KindManifest(
    name="throwaway",
    description="sums the first n squares (a plugin kind for tests)",
    spec=ThrowawaySpec,
    results=(SquareSum,),
    examples=(Example(name="ten", description="n = 10", spec={"sizes": {"n": 10}}),),
    runner="throwaway_kind.run:run",
)
"""

RUN_MODULE = """
from throwaway_kind.spec import SquareSum, ThrowawaySpec


def run(spec: ThrowawaySpec, ctx) -> None:
    total = 0
    for i in range(1, spec.sizes.n + 1):
        total += i * i
        ctx.log_metrics({"total": float(total)}, i)
        ctx.progress(i, spec.sizes.n, "summing")
    ctx.log_result(SquareSum(n=spec.sizes.n, total=total))
"""


def write_plugin(root: Path) -> str:
    """Write the plugin package under ``root``; returns the module to list in REASONLAB_KIND_PLUGINS."""
    package = root / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spec.py").write_text(SPEC_MODULE)
    (package / "run.py").write_text(RUN_MODULE)
    return f"{PACKAGE}.spec"
