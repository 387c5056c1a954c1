"""Loading a cell's chat models: an OpenAI-compatible endpoint with its key, or an HF model on the
run's device or where a device_map puts it."""

from __future__ import annotations

import torch

from worker.chat_apis.openai_chat import OpenAIChat, completions_url
from worker.core.models import LoadedModel, ModelNotFound, Placement, PlacementError, load_model
from worker.specs.confine import check_url, secret_hosts, secret_refusal
from worker.specs.placement import accelerate_max_memory
from worker.specs.skillmix.skillmix import ChatEndpoint
from worker.tracking.context import RunContext, RunError


def endpoint_model(endpoint: ChatEndpoint, field: str, ctx: RunContext) -> OpenAIChat:
    """The endpoint with its key, the project secret the spec names (``ctx.secret``: handed to this run
    only and redacted from everything it records), bound to the hosts its admin set (``ctx.secret_hosts``):
    a URL they do not cover fails the run here, and every call is checked again before it connects."""
    key = ""
    hosts: tuple[str, ...] | None = None
    if endpoint.api_key_secret is not None:
        name = endpoint.api_key_secret
        try:
            key = ctx.secret(name)
            hosts = ctx.secret_hosts(name)
            if hosts is not None:
                why = secret_refusal(name, check_url(completions_url(endpoint.url)), secret_hosts(hosts))
                if why is not None:
                    raise RunError(why)
        except RunError as exc:  # Refused is one too
            raise RunError(f"{field}.api_key_secret: {exc}") from None
    return OpenAIChat(
        url=endpoint.url,
        model=endpoint.model,
        api_key=key,
        key_hosts=hosts,
        timeout_s=endpoint.timeout_s,
        max_retries=endpoint.max_retries,
        concurrency=endpoint.concurrency,
    )


def placement(device_map: str | None, max_memory: dict[str, str] | None, gpus: int) -> Placement | None:
    """The spec's placement fields as the model store takes them (None: one device, the run's)."""
    if device_map is None:
        return None
    return Placement(device_map, accelerate_max_memory(max_memory), gpus=gpus)


def devices_of(lm: LoadedModel) -> dict[str, int]:
    """Modules per device of a model placed by a device_map (``{"0": 12, "1": 13}``); {} on one device."""
    counts: dict[str, int] = {}
    for device in (lm.device_map or {}).values():
        counts[str(device)] = counts.get(str(device), 0) + 1
    return counts


def hf_model(
    name: str,
    dtype: str,
    seed: int,
    device: torch.device,
    prefix: str,
    name_field: str,
    where: Placement | None,
) -> LoadedModel:
    """An HF chat model for ``prefix`` (student or grader): on the run's device, or where ``where``'s
    device_map puts it (left there: inputs go to its input embeddings' device)."""
    try:
        lm = load_model(
            name,
            seed=seed,
            dtype=torch.bfloat16 if dtype == "bfloat16" else torch.float32,
            placement=where,
        )
    except ModelNotFound as exc:
        raise RunError(f"{prefix}.{name_field}: {exc}") from None
    except PlacementError as exc:
        raise RunError(f"{prefix}.device_map: {exc}") from None
    if where is None:
        lm.model.to(device)  # type: ignore[arg-type]
    lm.model.eval()
    return lm
