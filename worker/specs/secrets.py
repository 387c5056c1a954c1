"""How a spec names a project secret: a field whose name ends in ``_secret`` holds a secret's name (never
its value). The backend checks at submission that the project has every secret a spec names (a 422
naming the field otherwise) and hands a run only the secrets its own spec names (docs/operations.md,
"Project secrets")."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints

SECRET_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
SECRET_FIELD_SUFFIX = "_secret"

SecretName = Annotated[str, StringConstraints(pattern=SECRET_NAME_PATTERN, max_length=64)]


def secret_references(spec: BaseModel) -> dict[tuple[str | int, ...], str]:
    """Every secret a validated spec names: field path -> secret name."""
    found: dict[tuple[str | int, ...], str] = {}
    _walk(spec, (), found)
    return found


def _walk(value: Any, path: tuple[str | int, ...], found: dict[tuple[str | int, ...], str]) -> None:
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            child = getattr(value, name)
            if name.endswith(SECRET_FIELD_SUFFIX) and isinstance(child, str):
                found[(*path, name)] = child
            else:
                _walk(child, (*path, name), found)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _walk(item, (*path, i), found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, (*path, str(key)), found)
