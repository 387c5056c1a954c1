"""Kinds as the API sees them: the registry of manifests (worker.specs), its errors as 422s."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter

from backend.errors import Invalid
from backend.kinds.schemas import KindExample, KindPublic
from worker.specs import SpecBase, UnknownKind, manifests
from worker.specs import result_class as _result_class
from worker.specs import spec_class as _spec_class


def _invalid(exc: UnknownKind, loc: list[str | int]) -> Invalid:
    return Invalid(exc.message, [{"loc": loc, "msg": exc.message, "type": "unknown_kind"}])


def spec_class(kind: str, loc: list[str | int]) -> type[SpecBase]:
    """The spec of ``kind``; 422 naming ``loc`` and the known kinds otherwise."""
    try:
        return _spec_class(kind)
    except UnknownKind as exc:
        raise _invalid(exc, loc) from None


def result_class(kind: str, loc: list[str | int]) -> type[BaseModel]:
    try:
        return _result_class(kind)
    except UnknownKind as exc:
        raise _invalid(exc, loc) from None


def public() -> list[KindPublic]:
    """Every kind with its spec's JSON schema, defaults and examples (``GET /kinds``)."""
    return [
        KindPublic(
            name=m.name,
            description=m.description,
            spec_schema=m.spec.model_json_schema(),
            defaults=m.spec().model_dump(mode="json"),
            result_kinds=list(m.result_kinds),
            examples=[
                KindExample(
                    name=e.name,
                    description=e.description,
                    spec=dict(e.spec),
                    sweep=dict(e.sweep) if e.sweep is not None else None,
                )
                for e in m.examples
            ],
        )
        for m in manifests().values()
    ]


_PUBLIC = TypeAdapter(list[KindPublic])
_public_json: tuple[object, bytes] | None = None


def public_json() -> bytes:
    """``public()`` as the route's JSON, made once per registry: a spec's JSON schema is pydantic's
    slowest output (~140 ms of CPU for every kind, on each request before), and the kinds change only
    when the registry is read again (``worker.specs.reload``, a new process)."""
    global _public_json
    current = manifests()  # a new dict when the registry is read again
    if _public_json is None or _public_json[0] is not current:
        _public_json = (current, _PUBLIC.dump_json(public()))
    return _public_json[1]
