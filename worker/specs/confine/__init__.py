"""What a spec may name (DESIGN.md, Trust model; docs/spec-confinement.md): files inside the platform's
stores, models by preset, alias, store folder or Hugging Face id, and outbound endpoints on the admin's
allow-list. Pydantic and the standard library only, so the backend (at submission) and the worker (again,
before a run and at connect time) apply one check; every refusal is one error, ``Refused``.

    _refusal  Refused (a RunError and a ValueError), field_error: a refusal as a spec field's 422
    _fields   Confined, the mark of a confined field in its JSON schema; confined_fields finds them
    _paths    the store paths and names: DataPath, ModelFolder, ModelName, HubDatasetId, HubConfigName,
              CacheName; relative_path, dataset names (``dataset:<name>``), dataset_references
    _network  the outbound policy: OutboundPolicy, outbound_policy, check_url, EndpointUrl; where a
              project secret may be sent: SecretHost, secret_hosts, secret_refusal

Import every name from here: the modules are private because the registry reads a package at the root
of ``worker.specs`` as a kind family, each public module of which must be a kind.

Spec-level checks (here) are syntactic and need no file system or network. The worker resolves what they
let through inside its stores at run time (``worker.runtime.confined``) and checks every address a host
resolves to before it connects (``worker.chat_apis.outbound``), refusing with the same ``Refused``.
"""

from __future__ import annotations

from worker.specs.confine._fields import SCHEMA_KEY, Confined, confined_fields
from worker.specs.confine._network import (
    ALLOW_ENV,
    ALLOW_PRIVATE_ENV,
    MAX_SECRET_HOSTS,
    METADATA_ADDRESSES,
    METADATA_HOSTS,
    EndpointUrl,
    IPAddress,
    IPNetwork,
    OutboundPolicy,
    SecretHost,
    Target,
    check_url,
    outbound_policy,
    parse_ipv4,
    parse_secret_host,
    secret_hosts,
    secret_refusal,
)
from worker.specs.confine._paths import (
    DATASET_NAME_PATTERN,
    DATASET_PREFIX,
    PACKAGED_BUILDERS,
    CacheName,
    DataPath,
    HubConfigName,
    HubDatasetId,
    ModelFolder,
    ModelName,
    dataset_name,
    dataset_references,
    relative_path,
    uploaded_dataset,
)
from worker.specs.confine._refusal import Refused, field_error

__all__ = [
    "ALLOW_ENV",
    "ALLOW_PRIVATE_ENV",
    "DATASET_NAME_PATTERN",
    "DATASET_PREFIX",
    "MAX_SECRET_HOSTS",
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "PACKAGED_BUILDERS",
    "SCHEMA_KEY",
    "CacheName",
    "Confined",
    "DataPath",
    "EndpointUrl",
    "HubConfigName",
    "HubDatasetId",
    "IPAddress",
    "IPNetwork",
    "ModelFolder",
    "ModelName",
    "OutboundPolicy",
    "Refused",
    "SecretHost",
    "Target",
    "check_url",
    "confined_fields",
    "dataset_name",
    "dataset_references",
    "field_error",
    "outbound_policy",
    "parse_ipv4",
    "parse_secret_host",
    "relative_path",
    "secret_hosts",
    "secret_refusal",
    "uploaded_dataset",
]
