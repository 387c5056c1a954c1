from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from backend.kinds.typing import SpecPayload


class KindExample(BaseModel):
    name: str
    description: str
    spec: dict[str, Any]
    sweep: dict[str, Any] | None


class KindPublic(BaseModel):
    name: str
    description: str
    spec_schema: dict[str, Any]
    defaults: SpecPayload
    result_kinds: list[str]
    examples: list[KindExample]
