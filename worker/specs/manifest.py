"""A kind's manifest: everything the platform needs to know about an experiment kind, declared once.

A kind lives in two modules named after it, one in each side's package of its paper family:
``worker/specs/<family>/<name>.py`` (pydantic only) holds its spec, its result record types and
``MANIFEST = KindManifest(...)``; ``worker/kinds/<family>/<name>.py`` holds ``run(spec, ctx)``. The registry (``worker.specs.registry``) finds manifests by convention, so adding a
kind edits no shared file. A kind outside this repository names its runner explicitly
(``runner="mypackage.run:run"``) and is listed in ``REASONLAB_KIND_PLUGINS`` or under the
``reasonlab.kinds`` entry-point group.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from worker.specs.base import SpecBase

SPECS_PACKAGE, KINDS_PACKAGE = "worker.specs", "worker.kinds"


@dataclass(frozen=True)
class Example:
    """A ready-to-submit experiment of the kind (the body of ``POST /experiments`` less ``kind``)."""

    name: str
    description: str
    spec: Mapping[str, Any] = field(default_factory=dict)
    sweep: Mapping[str, Any] | None = None


def literal_kind(model: type[BaseModel]) -> str:
    """The value of a model's ``kind: Literal["..."]`` field: the discriminator of the typed unions."""
    info = model.model_fields.get("kind")
    args = typing.get_args(info.annotation) if info is not None else ()
    if info is None or typing.get_origin(info.annotation) is not typing.Literal or len(args) != 1:
        raise TypeError(f"{model.__name__} needs a field kind: Literal['<name>'] (the union discriminator)")
    if info.default != args[0]:
        raise TypeError(f"{model.__name__}.kind must default to {args[0]!r}")
    return str(args[0])


@dataclass(frozen=True)
class KindManifest:
    """One experiment kind: its name, what it is, its spec, the result records it posts, its examples.

    ``runner`` is ``"module:function"``; empty means the convention: the kinds module that mirrors the spec's
    (``worker.specs.<family>.<name>`` -> ``worker.kinds.<family>.<name>:run``), or ``worker.kinds.<name>:run``
    for a spec defined elsewhere.
    ``source_runs`` maps a dotted spec field that names another run by id (e.g. ``"init.run_id"``) to the
    kind that run must be; at submission the backend checks that the run exists, is visible to the
    submitter, is of that kind and succeeded (a 422 naming the field otherwise). A null field names none.
    ``metric_directions`` maps metric key patterns (``fnmatch``, case-sensitive: ``"*loss*"``) to ``"min"``
    or ``"max"``: which way is better, the first matching pattern winning; the query language's
    ``best(metrics.<key>)`` uses it (backend/query).
    ``result_fields`` maps a name to ``"<result kind>.<dotted path>"`` in that record's payload (one of
    ``results``): the query language's ``results.<name>`` (``{"test_acc": "carma_eval.test_acc"}``).
    """

    name: str
    description: str
    spec: type[SpecBase]
    results: tuple[type[BaseModel], ...] = ()
    examples: tuple[Example, ...] = ()
    runner: str = ""
    source_runs: Mapping[str, str] = field(default_factory=dict)
    metric_directions: Mapping[str, str] = field(default_factory=dict)
    result_fields: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"kind name {self.name!r} must be an identifier")
        if literal_kind(self.spec) != self.name:
            raise ValueError(f"{self.spec.__name__}.kind is {literal_kind(self.spec)!r}, not {self.name!r}")
        for record in self.results:
            literal_kind(record)
        names = [e.name for e in self.examples]
        if len(set(names)) != len(names):
            raise ValueError(f"kind {self.name!r} has two examples of one name: {names}")
        for path, kind in self.source_runs.items():
            if not all(part.isidentifier() for part in path.split(".")) or not kind.isidentifier():
                raise ValueError(f"kind {self.name!r}: source_runs entry {path!r}: {kind!r} is malformed")
        for pattern, direction in self.metric_directions.items():
            if not pattern or direction not in ("min", "max"):
                raise ValueError(
                    f"kind {self.name!r}: metric_directions entry {pattern!r}: {direction!r} is not min or max"
                )
        for name, target in self.result_fields.items():
            record_kind, _, path = target.partition(".")
            parts = path.split(".")
            if (
                not name.isidentifier()
                or record_kind not in self.result_kinds
                or not all(part.isidentifier() for part in parts)
            ):
                raise ValueError(
                    f"kind {self.name!r}: result_fields entry {name!r}: {target!r} is not "
                    f"'<one of {list(self.result_kinds)}>.<path>'"
                )
        if self.runner and ":" not in self.runner:
            raise ValueError(f"runner {self.runner!r} of kind {self.name!r} must be 'module:function'")

    @property
    def result_kinds(self) -> tuple[str, ...]:
        return tuple(literal_kind(r) for r in self.results)

    @property
    def runner_path(self) -> tuple[str, str]:
        """``(module, function)`` of the kind's ``run(spec, ctx)``."""
        if self.runner:
            module, _, function = self.runner.partition(":")
            return module, function
        spec_module = self.spec.__module__
        if spec_module.startswith(SPECS_PACKAGE + "."):
            return KINDS_PACKAGE + spec_module.removeprefix(SPECS_PACKAGE), "run"
        return f"{KINDS_PACKAGE}.{self.name}", "run"
