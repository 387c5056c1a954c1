"""How a spec field is marked confined (``Confined``: ``x-reasonlab-confined`` in its JSON schema, data |
model | model-or-hub | hub-dataset | name | cache-name | url) and every marked field of a schema found
again (``confined_fields``), so tools and the security tests see each one from the schemas alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

SCHEMA_KEY = "x-reasonlab-confined"  # how a field is confined, in the JSON schema: data | model | ...


@dataclass(frozen=True)
class Confined:
    """Marks a field's JSON schema with how it is confined (``x-reasonlab-confined``), so tools and the
    security tests find every such field from the schemas alone."""

    how: str

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema[SCHEMA_KEY] = self.how
        return schema


def confined_fields(schema: dict[str, Any]) -> dict[str, str]:
    """Dotted field path -> how it is confined, for every marked field of a JSON schema (a kind's spec
    schema); lists are ``[]``, dict values ``{}``, a discriminated union's variant its tag (as pydantic's
    error locations name it: ``target.hf.text_path``). For tools and tests."""
    found: dict[str, str] = {}
    defs = schema.get("$defs", {})

    def walk(node: dict[str, Any], path: list[str], seen: frozenset[str]) -> None:
        if SCHEMA_KEY in node:
            found[".".join(path)] = str(node[SCHEMA_KEY])
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            if name not in seen:
                walk(defs[name], path, seen | {name})
        mapping = node.get("discriminator", {}).get("mapping", {})
        for tag, tagged in mapping.items():  # a discriminated union: pydantic's locs name the variant
            walk({"$ref": tagged}, [*path, tag], seen)
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key, []) if not mapping else []:
                walk(sub, path, seen)
        for name, sub in node.get("properties", {}).items():
            walk(sub, [*path, name], seen)
        if isinstance(node.get("items"), dict):
            walk(node["items"], [*path, "[]"], seen)
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], [*path, "{}"], seen)

    walk(schema, [], frozenset())
    return found
