"""ReasonFormer's reasoning modules on a decoder-only backbone (Llama, Qwen2): the extension the paper names
as future work (paper 001, section 7: "we are curious about the effectiveness of this framework when it is
adapted to encoder-only or decoder-only architectures").

The same parts as the T5 model, cut from a causal LM: the first R decoder layers are the representation
module, the layers after them are copied into the reasoning modules (shared: layers R..R+L-1 for every
skill; private module of step i: R+i*L..), the router's block is a copy of layer R, then the backbone's
final norm and LM head. Everything runs under the causal mask with the backbone's rotary embeddings.

Routing stays per instance. So that a route never depends on the tokens being predicted, the router and
the stop gates pool over ``route_mask`` (the prompt; by default every non-pad token): with teacher forcing
the route of an instance is then a function of its prompt only, and greedy generation, which recomputes
the whole sequence at each step (no KV cache: a cache would be per module), keeps the same route.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_model, save_model
from torch import Tensor, nn
from torch.nn import functional as F
from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedModel
from transformers.masking_utils import create_causal_mask

from worker.core.reasonformer.adapter import AdapterPair
from worker.core.reasonformer.blocks import CausalContext
from worker.core.reasonformer.cascade import CascadedReasoner, ReasoningTrace
from worker.core.reasonformer.config import ReasoningConfig
from worker.core.reasonformer.model import expand_skill_labels
from worker.core.reasonformer.reasoning import ReasoningModule
from worker.core.reasonformer.representation import RepresentationModule
from worker.core.reasonformer.router import SkillRouter
from worker.core.reasonformer.routing import routing_targets, skill_routing_loss
from worker.core.reasonformer.stop_gate import StopGate

REASONING_FILE = "reasoning.json"
WEIGHTS_FILE = "model.safetensors"


@dataclass
class CausalReasonOutput:
    logits: Tensor  # [B, T, V]
    loss: Tensor | None
    lm_loss: Tensor | None
    routing_loss: Tensor | None
    trace: ReasoningTrace


class ReasonFormerForCausalLM(nn.Module):
    """Built from a causal LM (``LlamaForCausalLM``, ``Qwen2ForCausalLM``): takes its embeddings, rotary
    embeddings, first R layers, final norm and LM head, and copies later layers into reasoning modules."""

    def __init__(self, backbone: PreTrainedModel, reasoning: ReasoningConfig) -> None:
        super().__init__()
        config = backbone.config
        layer_types = getattr(config, "layer_types", None) or ["full_attention"]
        assert set(layer_types) == {"full_attention"}, (
            f"sliding-window layers are not supported: {layer_types}"
        )
        inner = backbone.model
        layers = inner.layers
        need = reasoning.blocks_needed()
        assert len(layers) >= need, (
            f"{reasoning.variant} with R={reasoning.representation_layers}, L={reasoning.layers}, depth "
            f"{reasoning.depth} copies {need} decoder layers; the backbone has {len(layers)}"
        )
        self.config = config
        self.reasoning = reasoning
        d, R, n, S = (
            config.hidden_size,
            reasoning.representation_layers,
            reasoning.num_skills,
            reasoning.depth,
        )
        self.embed_tokens = inner.embed_tokens
        self.rotary_emb = inner.rotary_emb
        self.representation = RepresentationModule(list(layers[:R]))

        def copies(step: int) -> list[nn.Module]:
            return [copy.deepcopy(layers[i]) for i in reasoning.source_blocks(step)]

        def adapters() -> list[list[AdapterPair]] | None:
            if not reasoning.uses_adapters:
                return None
            assert reasoning.adapter_bottleneck is not None
            return [
                [AdapterPair(d, reasoning.adapter_bottleneck) for _ in range(reasoning.layers)]
                for _ in range(S)
            ]

        router = SkillRouter(copy.deepcopy(layers[R]), d, reasoning.router_hidden, n, S)
        modules: list[ReasoningModule] | list[list[ReasoningModule]]
        if reasoning.variant == "private":
            modules = [[ReasoningModule(copies(step)) for _ in range(n)] for step in range(S)]
        else:
            modules = [ReasoningModule(copies(0), adapters()) for _ in range(n)]
        gates = [StopGate(d, reasoning.router_hidden) for _ in range(S)] if reasoning.stop_gate else None
        self.reasoner = CascadedReasoner(reasoning, router, modules, gates)
        self.norm = inner.norm
        self.lm_head = backbone.lm_head

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        route_mask: Tensor | None = None,
        skill_labels: Tensor | None = None,
    ) -> CausalReasonOutput:
        """input_ids [B, T] (right-padded); labels [B, T] as HF causal LMs take them (shifted inside, -100
        ignored); route_mask [B, T] tokens to route on; skill_labels [B] or [B, S] (-1 = none) add L_r."""
        T = input_ids.shape[1]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        h = self.embed_tokens(input_ids)  # [B, T, d]
        position_ids = torch.arange(T, device=input_ids.device)[None, :]  # [1, T]
        mask = create_causal_mask(
            config=self.config,
            inputs_embeds=h,
            attention_mask=attention_mask,
            past_key_values=None,
            position_ids=position_ids,
        )
        assert mask is None or isinstance(mask, Tensor), (
            f"a flex-attention BlockMask is not supported: {type(mask)}"
        )
        ctx = CausalContext(mask, self.rotary_emb(h, position_ids), position_ids)
        h0 = self.representation(h, ctx)
        pool_mask = (route_mask if route_mask is not None else attention_mask).bool()  # [B, T]
        h, trace = self.reasoner(h0, ctx, pool_mask)
        logits = self.lm_head(self.norm(h))  # [B, T, V]

        lm_loss = routing_loss = None
        if labels is not None:
            lm_loss = F.cross_entropy(
                logits[:, :-1].float().reshape(-1, logits.size(-1)),
                labels[:, 1:].reshape(-1),
                ignore_index=-100,
            )
        if skill_labels is not None:
            rc = self.reasoning
            general = rc.skills.index(rc.general_skill) if rc.general_skill is not None else None
            targets, labelled = routing_targets(
                expand_skill_labels(skill_labels, rc.depth), rc.num_skills, general
            )
            routing_loss = skill_routing_loss(trace.router_logits, targets, labelled)
        loss = lm_loss
        if lm_loss is not None and routing_loss is not None and self.reasoning.routing_loss_weight > 0:
            loss = lm_loss + self.reasoning.routing_loss_weight * routing_loss
        return CausalReasonOutput(logits, loss, lm_loss, routing_loss, trace)

    @torch.no_grad()
    def generate(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        max_new_tokens: int = 16,
        eos_token_id: int | None = None,
    ) -> Tensor:
        """Greedy decoding of right-padded prompts, routed on the prompt. Returns [B, max_new_tokens] new
        tokens (after a row's EOS: ``eos_token_id``, or 0 when there is none)."""
        B, T = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        lengths = attention_mask.sum(dim=1)  # [B]
        width = T + max_new_tokens
        ids = input_ids.new_zeros(B, width)
        ids[:, :T] = input_ids * attention_mask
        mask = attention_mask.new_zeros(B, width)
        mask[:, :T] = attention_mask
        route_mask = mask.clone()  # the prompt only, fixed while generating
        done = torch.zeros(B, dtype=torch.bool, device=input_ids.device)
        out = input_ids.new_full((B, max_new_tokens), eos_token_id if eos_token_id is not None else 0)
        rows = torch.arange(B, device=input_ids.device)
        for t in range(max_new_tokens):
            end = int((lengths + t).max())
            logits = self(ids[:, :end], mask[:, :end], route_mask=route_mask[:, :end]).logits  # [B, end, V]
            token = logits[rows, lengths + t - 1].argmax(dim=-1)  # [B]
            token = torch.where(done, out[:, t], token)
            out[:, t] = token
            ids[rows, lengths + t] = token
            mask[rows, lengths + t] = 1
            if eos_token_id is not None:
                done = done | (token == eos_token_id)
                if bool(done.all()):
                    break
        return out

    def save_pretrained(self, path: str | Path) -> None:
        """The backbone's config.json, reasoning.json and model.safetensors (shared tensors deduplicated)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.config.save_pretrained(path)
        (path / REASONING_FILE).write_text(json.dumps(self.reasoning.to_dict(), indent=2))
        save_model(self, str(path / WEIGHTS_FILE))

    @classmethod
    def from_pretrained(cls, path: str | Path) -> ReasonFormerForCausalLM:
        path = Path(path)
        config = AutoConfig.from_pretrained(path)
        reasoning = ReasoningConfig(**json.loads((path / REASONING_FILE).read_text()))
        model = cls(AutoModelForCausalLM.from_config(config), reasoning)
        load_model(model, str(path / WEIGHTS_FILE))
        return model
