from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Path
from pydantic import AfterValidator, BaseModel, Field

from worker.specs.confine import MAX_SECRET_HOSTS, parse_secret_host

# what a spec's ``*_secret`` field may name (worker/specs/secrets.py holds the same pattern)
SECRET_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
SecretName = Annotated[str, Path(pattern=SECRET_NAME, max_length=64, description="the secret's name")]


def _host(entry: str) -> str:
    parse_secret_host(entry)  # Refused (a ValueError): a 422 at the entry
    return entry.strip()


SecretHostEntry = Annotated[str, Field(min_length=1, max_length=2000), AfterValidator(_host)]
HOSTS_DESCRIPTION = (
    "where the secret may be sent: host names (https), *.domain (https, any name below it), IP addresses "
    "or networks (https to an address inside), or URL prefixes (http(s)://host[:port][/path]: that "
    "scheme, host and port, a path below it); empty: nowhere. A spec whose endpoint is not covered is a 422"
)


class SecretSet(BaseModel):
    value: str = Field(min_length=1, max_length=16_384, description="the secret; never returned by the API")
    hosts: list[SecretHostEntry] | None = Field(
        None,
        max_length=MAX_SECRET_HOSTS,
        description=f"{HOSTS_DESCRIPTION}. Omitted: a secret set before keeps its hosts, a new one has none",
    )


class SecretHostsSet(BaseModel):
    hosts: list[SecretHostEntry] = Field(max_length=MAX_SECRET_HOSTS, description=HOSTS_DESCRIPTION)


class SecretPublic(BaseModel):
    """A secret as the API shows it: its name, where it may be sent, and when and by whom it was set,
    never its value."""

    name: str
    hosts: list[str]
    updated_at: datetime
    updated_by: str | None


class SecretValue(BaseModel):
    """A secret handed to the run whose spec names it (the run's own token only), with the hosts it may
    be sent to: the worker checks every call against them before it connects."""

    name: str
    value: str
    hosts: list[str]
