"""Experts-per-token on every router of a mixture-of-experts model: one knob, found by class and attribute.

A router is a module with an integer ``top_k`` in a router role, never a hard-coded module path:

- a gate: ``top_k`` on a module whose class name says Router/Gate or that its parent holds as ``gate`` or
  ``router`` (HF 5.x ``MixtralTopKRouter``, ``Qwen2MoeTopKRouter``, ``OlmoeTopKRouter``);
- an MoE block that owns k for a gate child without one (``DbrxFFN`` with its ``DbrxRouter``; our own
  ``SparseMoE`` with its linear ``router``; ReasonFormer's ``CascadedReasoner`` with its ``SkillRouter``).

A block whose gate child already has ``top_k`` (``MixtralSparseMoeBlock.top_k``, unused by its forward) is
set too, so no stale copy of k remains, but the gate is what is counted. The model's config follows
(``num_experts_per_tok``; DBRX ``ffn_config.moe_top_k``; ReasonFormer ``reasoning_config["top_k"]``), so a
saved model or a later reader of the config sees the k that runs (shared/REFERENCE.md, "Experts-per-token
in HuggingFace transformers").

Whether a router renormalises its top-k weights to sum to 1 differs by family (Mixtral does, Qwen2-MoE and
OLMoE do not by default): with no renormalisation, raising k also raises the total expert weight, a confound
across families that every result records. It is read from the module (``renormalises`` on our
own, ``norm_topk_prob``, DBRX's ``moe_normalize_expert_weights`` = 1), else measured: the gate run at k = 1 on
a zero hidden state (uniform probabilities) gives weight 1 when it renormalises and 1/E when it does not.

A model spread over devices by accelerate (``device_map``) keeps its module tree: its routers are found and
set the same way, and a gate whose weights were offloaded is probed on the device its hook computes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

GATE_NAMES = ("gate", "router")
ROLE_WORDS = ("router", "gate")


class RouterError(ValueError):
    """A model without routers, or an experts-per-token outside 1..E."""


@dataclass(frozen=True)
class Router:
    """One routing decision: ``module`` holds ``top_k``; ``gate`` computes the logits (itself for a gate)."""

    name: str  # the module's path in the model (for messages only; never used to find it)
    module: nn.Module
    gate: nn.Module
    experts: int | None
    renormalises: bool | None


@dataclass(frozen=True)
class RouterReport:
    """What ``set_experts_per_token`` changed. ``experts`` is E (the smallest over routers if they differ);
    ``renormalises`` is None where routers disagree or it cannot be told; ``classes`` are the router classes
    (sorted, distinct); ``previous`` the distinct k values before."""

    routers: int
    experts: int
    renormalises: bool | None
    classes: list[str]
    top_k: int
    previous: list[int] = field(default_factory=list)


def _is_top_k(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _get_k(module: nn.Module) -> int:
    return int(getattr(module, "top_k"))  # noqa: B009 - nn.Module types attributes as Tensor | Module


def _set_k(module: nn.Module, k: int) -> None:
    setattr(module, "top_k", k)  # noqa: B010 - a property setter (ReasonFormer) validates it


def _has_role(module: nn.Module, attribute_name: str) -> bool:
    cls = type(module).__name__.lower()
    return attribute_name in GATE_NAMES or any(word in cls for word in ROLE_WORDS)


def _gate_child(module: nn.Module) -> nn.Module | None:
    for name in GATE_NAMES:
        child = getattr(module, name, None)
        if isinstance(child, nn.Module):
            return child
    return None


def _experts_of(module: nn.Module, gate: nn.Module) -> int | None:
    """E from ``num_experts`` of the module, its gate or its experts, else the gate's output width."""
    for owner in (module, gate, getattr(module, "experts", None)):
        value = getattr(owner, "num_experts", None)
        if _is_top_k(value):
            return int(value)  # type: ignore[arg-type]
    weight = getattr(gate, "weight", None)
    if isinstance(weight, torch.Tensor) and weight.dim() == 2:
        return int(weight.shape[0])  # router weight [E, d]
    for sub in gate.modules():
        if isinstance(sub, nn.Linear):
            return int(sub.out_features)
    return None


def _run_device(module: nn.Module, weight: torch.Tensor) -> torch.device:
    """Where ``module`` computes: its weight's device, or, for a weight accelerate offloaded (on the meta
    device until the forward), the execution device of the hook that brings it back (device_map)."""
    execution = getattr(getattr(module, "_hf_hook", None), "execution_device", None)
    if weight.device.type == "meta" and execution is not None:
        return torch.device(execution)
    return weight.device


def _probe_renormalises(gate: nn.Module, experts: int | None) -> bool | None:
    """Run a gate returning ``(logits, weights, indices)`` at k = 1 on a zero hidden state: the logits are
    all 0, the probabilities uniform, so the kept weight is 1 if renormalised and 1/E if not."""
    weight = getattr(gate, "weight", None)
    if experts is None or experts < 2 or not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        return None
    saved = _get_k(gate)
    try:
        _set_k(gate, 1)
        with torch.no_grad():
            out = gate(torch.zeros(1, weight.shape[1], dtype=weight.dtype, device=_run_device(gate, weight)))
    except Exception:  # a gate of another signature: nothing can be told
        return None
    finally:
        _set_k(gate, saved)
    if not (isinstance(out, tuple) and len(out) == 3 and isinstance(out[1], torch.Tensor)):
        return None
    kept = float(out[1].float().reshape(-1)[0])
    if abs(kept - 1.0) < 1e-4:
        return True
    if abs(kept - 1.0 / experts) < 1e-4:
        return False
    return None


def _renormalises(module: nn.Module, gate: nn.Module, experts: int | None) -> bool | None:
    for owner in (module, gate):
        flag = getattr(owner, "renormalises", None)
        if isinstance(flag, bool):
            return flag
        flag = getattr(owner, "norm_topk_prob", None)
        if isinstance(flag, bool):
            return flag
    if hasattr(module, "moe_normalize_expert_weights"):
        # DBRX divides the top-k weights by their p-norm; only p = 1 makes them sum to 1.
        p = getattr(module, "moe_normalize_expert_weights")  # noqa: B009 - typed as Tensor | Module
        return p is not None and float(p) == 1.0
    if gate is module:
        return _probe_renormalises(gate, experts)
    return None


def find_routers(model: nn.Module) -> list[Router]:
    """Every router of ``model`` (module order), found by class and attribute; see the module docstring."""
    gates: list[tuple[str, nn.Module]] = []
    blocks: list[tuple[str, nn.Module, nn.Module]] = []
    for name, module in model.named_modules():
        if not _is_top_k(getattr(module, "top_k", None)):
            continue
        gate = _gate_child(module)
        if gate is not None:
            blocks.append((name, module, gate))
        elif _has_role(module, name.rsplit(".", 1)[-1]):
            gates.append((name, module))
    gate_ids = {id(m) for _, m in gates}
    routers = [Router(n, m, m, _experts_of(m, m), None) for n, m in gates]
    for name, module, gate in blocks:
        if id(gate) in gate_ids:
            continue  # the block's own copy of k (Mixtral): set by _holders, not counted
        routers.append(Router(name, module, gate, _experts_of(module, gate), None))
    return [
        Router(r.name, r.module, r.gate, r.experts, _renormalises(r.module, r.gate, r.experts))
        for r in routers
    ]


def _holders(model: nn.Module, routers: list[Router]) -> list[nn.Module]:
    """Blocks that keep a copy of k for a gate that is counted (MixtralSparseMoeBlock.top_k)."""
    gate_ids = {id(r.module) for r in routers}
    out = []
    for module in model.modules():
        gate = _gate_child(module)
        if gate is not None and id(gate) in gate_ids and _is_top_k(getattr(module, "top_k", None)):
            out.append(module)
    return out


def count_experts(model: nn.Module) -> int | None:
    """E, the experts each router chooses from (the smallest if routers differ); None without routers."""
    experts = [r.experts for r in find_routers(model) if r.experts is not None]
    return min(experts) if experts else None


def _configs(model: nn.Module) -> list[object]:
    config = getattr(model, "config", None)
    if config is None:
        return []
    out = [config]
    get_text_config = getattr(config, "get_text_config", None)
    if callable(get_text_config):
        text = get_text_config()
        if text is not config:
            out.append(text)
    return out


def _config_top_k(config: object) -> list[tuple[object, str, int]]:
    """``(owner, key, value)`` of every k field a config carries (attribute, or item of a dict owner)."""
    out: list[tuple[object, str, int]] = []
    if _is_top_k(getattr(config, "num_experts_per_tok", None)):
        out.append((config, "num_experts_per_tok", config.num_experts_per_tok))  # type: ignore[attr-defined]
    ffn = getattr(config, "ffn_config", None)  # DBRX
    if ffn is not None and _is_top_k(getattr(ffn, "moe_top_k", None)):
        out.append((ffn, "moe_top_k", ffn.moe_top_k))
    reasoning = getattr(config, "reasoning_config", None)  # ReasonFormer (a dict in its config.json)
    if isinstance(reasoning, dict) and "top_k" in reasoning:
        out.append((reasoning, "top_k", reasoning["top_k"]))
    return out


def _assign(owner: object, key: str, value: int | None) -> None:
    if isinstance(owner, dict):
        owner[key] = value
    else:
        setattr(owner, key, value)


def _check(model: nn.Module, k: int) -> tuple[list[Router], int]:
    routers = find_routers(model)
    if not routers:
        raise RouterError(
            f"{type(model).__name__} has no router (no module with an integer top_k in a router role): "
            "experts-per-token applies to mixture-of-experts models only"
        )
    experts = [r.experts for r in routers if r.experts is not None]
    if len(experts) != len(routers):
        unknown = [r.name for r in routers if r.experts is None]
        raise RouterError(f"cannot tell the number of experts of routers {unknown}")
    E = min(experts)
    if not _is_top_k(k) or not 1 <= k <= E:
        raise RouterError(f"experts per token must be an integer in 1..{E} (the model's experts), got {k!r}")
    return routers, E


def set_experts_per_token(model: nn.Module, k: int) -> RouterReport:
    """Set experts-per-token to ``k`` on every router of ``model`` and in its config.

    Raises ``RouterError`` for a model without routers or ``k`` outside 1..E.
    """
    routers, E = _check(model, k)
    holders = _holders(model, routers)
    previous = sorted({_get_k(r.module) for r in routers})
    for module in [r.module for r in routers] + holders:
        _set_k(module, k)
    for config in _configs(model):
        for owner, key, _ in _config_top_k(config):
            _assign(owner, key, k)
    flags = {r.renormalises for r in routers}
    return RouterReport(
        routers=len(routers),
        experts=E,
        renormalises=flags.pop() if len(flags) == 1 else None,
        classes=sorted({type(r.module).__name__ for r in routers}),
        top_k=k,
        previous=previous,
    )


@contextmanager
def experts_per_token(model: nn.Module, k: int) -> Iterator[RouterReport]:
    """``set_experts_per_token`` for the ``with`` body only; every router and config field gets its own k
    back afterwards (an evaluation at several k' leaves the model as it was trained)."""
    routers, _ = _check(model, k)
    modules = [r.module for r in routers] + _holders(model, routers)
    saved_modules = [(m, _get_k(m)) for m in modules]
    saved_config = [entry for config in _configs(model) for entry in _config_top_k(config)]
    try:
        yield set_experts_per_token(model, k)
    finally:
        for module, value in saved_modules:
            _set_k(module, value)
        for owner, key, value in saved_config:
            _assign(owner, key, value)
