"""How a spec names a project secret: a field whose name ends in ``_secret`` holds a secret's name (never
its value). The backend checks at submission that the project has every secret a spec names (a 422
naming the field otherwise) and hands a run only the secrets its own spec names (docs/operations.md,
"Project secrets").

Where a secret goes: to the endpoint URL beside it, the fields of the same object that are confined
URLs (``EndpointUrl``: ``url`` of a skillmix ``ChatEndpoint``). ``secret_destinations`` finds them, so
the backend refuses a spec whose URL is not among the secret's hosts (a kind that sends a
secret elsewhere must name that URL in the same object)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints

from worker.specs.confine import Confined

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


def secret_destinations(spec: BaseModel) -> dict[tuple[str | int, ...], tuple[str, tuple[str, ...]]]:
    """Every secret a validated spec names, with the URLs it is sent to: field path -> (secret name, the
    confined URL fields of the same object, as written)."""
    found: dict[tuple[str | int, ...], tuple[str, tuple[str, ...]]] = {}
    for path, name in secret_references(spec).items():
        owner: Any = spec
        for step in path[:-1]:
            if isinstance(owner, dict):
                owner = owner[str(step)]
            elif isinstance(owner, list | tuple):
                owner = owner[int(step)]
            else:
                owner = getattr(owner, str(step))
        found[path] = (name, _urls_of(owner))
    return found


def _urls_of(model: BaseModel) -> tuple[str, ...]:
    urls = []
    for field_name, info in type(model).model_fields.items():
        value = getattr(model, field_name)
        if isinstance(value, str) and any(isinstance(m, Confined) and m.how == "url" for m in info.metadata):
            urls.append(value)
    return tuple(urls)
