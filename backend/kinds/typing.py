"""Kind-typed payloads in the OpenAPI document, built from the manifests when the API starts.

``SpecPayload`` and ``ResultPayload`` are ``dict[str, Any]`` at run time: the services validate a spec
against its kind (resolving a sweep first, so errors name the swept combination and the field) and a
result against its declared type. In the OpenAPI document they are discriminated unions on ``kind`` over
every registered spec and result type, so the generated TypeScript client narrows them by ``kind``.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, SchemaValidator, core_schema

from worker.specs import manifests
from worker.specs.registry import registry


def _union(models: list[type[BaseModel]]) -> Any:
    if len(models) == 1:
        return models[0]
    return Annotated[Union[tuple(models)], Field(discriminator="kind")]  # noqa: UP007


class DocumentedAs:
    """Validate as ``dict[str, Any]``; document as ``documented`` (a type) in the JSON schema."""

    def __init__(self, documented: Any) -> None:
        self.documented = documented

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        plain = core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
        # The documented schema sits in the tree (as the validator's input schema) so its models are
        # collected as components; validation and serialisation are those of a plain dict.
        return core_schema.no_info_plain_validator_function(
            SchemaValidator(plain).validate_python,
            json_schema_input_schema=handler.generate_schema(self.documented),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda v: v),
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(schema["json_schema_input_schema"])  # type: ignore[typeddict-item]


SpecUnion = _union([m.spec for m in manifests().values()])
ResultUnion = _union(list(registry().results.values()))

SpecPayload = Annotated[dict[str, Any], DocumentedAs(SpecUnion)]
"""A kind's spec: typed in OpenAPI as the union of every kind's spec, discriminated by ``kind``."""

ResultPayload = Annotated[dict[str, Any], DocumentedAs(ResultUnion)]
"""A result record: typed in OpenAPI as the union of every result type, discriminated by ``kind``."""
