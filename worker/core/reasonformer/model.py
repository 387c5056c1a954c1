"""ReasonFormer on T5 (paper 001, section 3, Figure 2): a T5 encoder-decoder whose encoder is cut into the
representation module (System 1) and cascaded, routed reasoning modules (System 2); the T5 decoder reads
the last reasoning step's output. Works with ``generate()``, ``save_pretrained``/``from_pretrained``.

Read top to bottom: outputs, encoder, model, initialisation from T5 (section 4.3.2).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from transformers import AutoConfig, AutoModelForSeq2SeqLM, GenerationMixin, T5ForConditionalGeneration
from transformers.masking_utils import create_bidirectional_mask
from transformers.modeling_outputs import BaseModelOutput, Seq2SeqLMOutput
from transformers.models.t5.modeling_t5 import T5Block, T5LayerNorm, T5PreTrainedModel, T5Stack

from worker.core.reasonformer.adapter import AdapterPair
from worker.core.reasonformer.blocks import T5Context
from worker.core.reasonformer.cascade import CascadedReasoner, ReasoningTrace
from worker.core.reasonformer.config import ReasonFormerConfig, ReasoningConfig
from worker.core.reasonformer.heads import RMSNorm
from worker.core.reasonformer.linear import FanInLinear, ZeroLinear
from worker.core.reasonformer.reasoning import ReasoningModule
from worker.core.reasonformer.representation import RepresentationModule
from worker.core.reasonformer.router import SkillRouter
from worker.core.reasonformer.routing import routing_targets, skill_routing_loss
from worker.core.reasonformer.stop_gate import StopGate

# --- outputs ---------------------------------------------------------------------------------------


@dataclass
class ReasonFormerEncoderOutput(BaseModelOutput):
    """The encoder's output and what the router and stop gates decided (``ReasoningTrace``, batch first)."""

    router_logits: Tensor | None = None  # [B, S, n]
    routing_weights: Tensor | None = None  # [B, S, k]
    selected_skills: Tensor | None = None  # [B, S, k]
    stop_gates: Tensor | None = None  # [B, S]


@dataclass
class ReasonFormerOutput(Seq2SeqLMOutput):
    """Seq2SeqLMOutput plus the two terms of the pre-training loss and the routing decisions.

    loss = lm_loss + routing_loss_weight * routing_loss (section 3.3) when skill labels are given.
    """

    lm_loss: Tensor | None = None
    routing_loss: Tensor | None = None
    router_logits: Tensor | None = None  # [B, S, n]
    routing_weights: Tensor | None = None  # [B, S, k]
    selected_skills: Tensor | None = None  # [B, S, k]
    stop_gates: Tensor | None = None  # [B, S]


def expand_skill_labels(skill_labels: Tensor, depth: int) -> Tensor:
    """[B] (one skill for every step, the paper's pre-training) or [B, S] -> [B, depth] long, -1 = none."""
    if skill_labels.dim() == 1:
        return skill_labels[:, None].expand(-1, depth)
    B, S = skill_labels.shape
    assert depth >= S, f"skill labels for {S} steps, the model has depth {depth}"
    if depth > S:
        return torch.cat([skill_labels, skill_labels.new_full((B, depth - S), -1)], dim=1)
    return skill_labels


# --- encoder ---------------------------------------------------------------------------------------


class ReasonFormerEncoder(nn.Module):
    """Embeddings -> representation module (R T5 blocks) -> cascaded reasoning -> T5's final norm.

    Takes the place of ``T5Stack`` as the encoder (same call: input_ids, attention_mask, inputs_embeds).
    """

    main_input_name = "input_ids"  # read by GenerationMixin

    def __init__(self, config: ReasonFormerConfig, embed_tokens: nn.Embedding) -> None:
        super().__init__()
        self.config = config  # an encoder copy (is_decoder False): create_bidirectional_mask reads it
        rc = config.reasoning
        d, L, n, S = config.d_model, rc.layers, rc.num_skills, rc.depth

        def blocks(count: int) -> list[nn.Module]:
            return [T5Block(config, has_relative_attention_bias=False) for _ in range(count)]

        def adapters() -> list[list[AdapterPair]] | None:
            if not rc.uses_adapters:
                return None
            assert rc.adapter_bottleneck is not None
            return [[AdapterPair(d, rc.adapter_bottleneck) for _ in range(L)] for _ in range(S)]

        self.embed_tokens = embed_tokens
        self.representation = RepresentationModule(
            [T5Block(config, has_relative_attention_bias=i == 0) for i in range(rc.representation_layers)]
        )
        router = SkillRouter(blocks(1)[0], d, rc.router_hidden, n, S)
        modules: list[ReasoningModule] | list[list[ReasoningModule]]
        if rc.variant == "private":
            modules = [[ReasoningModule(blocks(L)) for _ in range(n)] for _ in range(S)]
        else:
            modules = [ReasoningModule(blocks(L), adapters()) for _ in range(n)]
        gates = [StopGate(d, rc.router_hidden) for _ in range(S)] if rc.stop_gate else None
        self.reasoner = CascadedReasoner(rc, router, modules, gates)
        self.final_layer_norm = T5LayerNorm(d, eps=config.layer_norm_epsilon)
        self.dropout = nn.Dropout(config.dropout_rate)

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        **kwargs: Any,
    ) -> ReasonFormerEncoderOutput:
        if inputs_embeds is None:
            assert input_ids is not None, "input_ids or inputs_embeds"
            inputs_embeds = self.embed_tokens(input_ids)
        B, T, _ = inputs_embeds.shape
        if attention_mask is None:
            attention_mask = torch.ones(B, T, dtype=torch.long, device=inputs_embeds.device)
        mask = create_bidirectional_mask(
            config=self.config, inputs_embeds=inputs_embeds, attention_mask=attention_mask
        )  # [B, 1, T, T] or None without padding
        assert mask is None or isinstance(mask, Tensor), (
            f"a flex-attention BlockMask is not supported: {type(mask)}"
        )
        ctx = T5Context(mask, self.representation.t5_position_bias(T))
        h0 = self.representation(self.dropout(inputs_embeds), ctx)  # [B, T, d], eq. 1
        h, trace = self.reasoner(h0, ctx, attention_mask.bool())  # [B, T, d]
        h = self.dropout(self.final_layer_norm(h))
        return ReasonFormerEncoderOutput(
            last_hidden_state=h,
            router_logits=trace.router_logits,
            routing_weights=trace.routing_weights,
            selected_skills=trace.selected_skills,
            stop_gates=trace.stop_gates,
        )


# --- model -----------------------------------------------------------------------------------------


class ReasonFormerForConditionalGeneration(T5PreTrainedModel, GenerationMixin):
    """ReasonFormer encoder + T5 decoder + LM head. ``forward(..., labels, skill_labels)`` returns the
    teacher-forcing loss plus the weighted skill-routing loss (section 3.3)."""

    config_class = ReasonFormerConfig
    config: ReasonFormerConfig
    _keys_to_ignore_on_load_unexpected = [
        "decoder.block.0.layer.1.EncDecAttention.relative_attention_bias.weight"
    ]
    _tied_weights_keys = {
        "encoder.embed_tokens.weight": "shared.weight",
        "decoder.embed_tokens.weight": "shared.weight",
        "lm_head.weight": "shared.weight",
    }

    def __init__(self, config: ReasonFormerConfig) -> None:
        super().__init__(config)
        self.model_dim = config.d_model
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        encoder_config = copy.deepcopy(config)
        encoder_config.is_decoder = False
        encoder_config.use_cache = False
        self.encoder = ReasonFormerEncoder(encoder_config, self.shared)
        decoder_config = copy.deepcopy(config)
        decoder_config.is_decoder = True
        decoder_config.num_layers = config.num_decoder_layers or config.num_layers
        self.decoder = T5Stack(decoder_config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.post_init()

    @property
    def reasoning(self) -> ReasoningConfig:
        return self.config.reasoning

    def get_input_embeddings(self) -> nn.Embedding:
        return self.shared

    def set_input_embeddings(self, new_embeddings: nn.Module) -> None:
        assert isinstance(new_embeddings, nn.Embedding), (
            f"an nn.Embedding, got {type(new_embeddings).__name__}"
        )
        self.shared = new_embeddings
        self.encoder.embed_tokens = new_embeddings
        self.decoder.set_input_embeddings(new_embeddings)

    def set_attn_implementation(self, attn_implementation: Any, allow_all_kernels: bool = False) -> None:
        """As PreTrainedModel's, and also for the encoder, which is not a PreTrainedModel: its blocks read
        the encoder's config copy."""
        super().set_attn_implementation(attn_implementation, allow_all_kernels=allow_all_kernels)
        self.encoder.config._attn_implementation_internal = self.config._attn_implementation

    def get_encoder(self, modality: str | None = None) -> ReasonFormerEncoder:
        return self.encoder

    def get_decoder(self) -> T5Stack:
        return self.decoder

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        factor = self.config.initializer_factor
        if isinstance(module, ReasonFormerForConditionalGeneration):
            nn.init.normal_(module.shared.weight, mean=0.0, std=factor * 1.0)  # as T5's embeddings
        elif isinstance(module, FanInLinear | ZeroLinear):  # adapters, router heads, stop gates
            module.reset_parameters()
        elif isinstance(module, RMSNorm):
            nn.init.ones_(module.weight)
        else:
            super()._init_weights(module)

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        decoder_input_ids: Tensor | None = None,
        decoder_attention_mask: Tensor | None = None,
        encoder_outputs: BaseModelOutput | tuple[Tensor, ...] | None = None,
        past_key_values: Any = None,
        inputs_embeds: Tensor | None = None,
        decoder_inputs_embeds: Tensor | None = None,
        labels: Tensor | None = None,
        skill_labels: Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ) -> ReasonFormerOutput:
        """As ``T5ForConditionalGeneration.forward``; ``skill_labels`` ([B] or [B, S] skill indices, -1 =
        none) add the skill-routing loss L_r (section 3.3)."""
        if encoder_outputs is None:
            encoder_outputs = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, inputs_embeds=inputs_embeds
            )
        elif not isinstance(encoder_outputs, BaseModelOutput):
            encoder_outputs = BaseModelOutput(last_hidden_state=encoder_outputs[0])
        assert isinstance(encoder_outputs, BaseModelOutput)
        hidden_states = encoder_outputs.last_hidden_state
        if labels is not None and decoder_input_ids is None and decoder_inputs_embeds is None:
            decoder_input_ids = self._shift_right(labels)
        decoder_outputs = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=decoder_attention_mask,
            inputs_embeds=decoder_inputs_embeds,
            past_key_values=past_key_values,
            encoder_hidden_states=hidden_states,
            encoder_attention_mask=attention_mask,
            use_cache=use_cache,
            **kwargs,
        )
        sequence_output = decoder_outputs[0]
        if self.config.scale_decoder_outputs:  # T5 (not v1.1) rescales before the tied LM head
            sequence_output = sequence_output * (self.model_dim**-0.5)
        logits = self.lm_head(sequence_output)  # [B, T_dec, V]

        lm_loss = routing_loss = None
        if labels is not None:
            lm_loss = F.cross_entropy(
                logits.float().view(-1, logits.size(-1)), labels.to(logits.device).view(-1), ignore_index=-100
            )
        trace = _trace_of(encoder_outputs)
        if skill_labels is not None and trace is not None:
            rc = self.reasoning
            general = rc.skills.index(rc.general_skill) if rc.general_skill is not None else None
            targets, labelled = routing_targets(
                expand_skill_labels(skill_labels, rc.depth), rc.num_skills, general
            )
            routing_loss = skill_routing_loss(trace.router_logits, targets, labelled)
        loss = lm_loss
        if lm_loss is not None and routing_loss is not None and self.reasoning.routing_loss_weight > 0:
            loss = lm_loss + self.reasoning.routing_loss_weight * routing_loss

        return ReasonFormerOutput(
            loss=loss,
            logits=logits,
            past_key_values=decoder_outputs.past_key_values,
            encoder_last_hidden_state=hidden_states,
            lm_loss=lm_loss,
            routing_loss=routing_loss,
            router_logits=trace.router_logits if trace else None,
            routing_weights=trace.routing_weights if trace else None,
            selected_skills=trace.selected_skills if trace else None,
            stop_gates=trace.stop_gates if trace else None,
        )

    # --- initialisation from T5 (section 4.3.2) ---------------------------------------------------------

    @classmethod
    def from_t5(
        cls, t5: T5ForConditionalGeneration, reasoning: ReasoningConfig
    ) -> ReasonFormerForConditionalGeneration:
        """Initialise from a T5 model (section 4.3.2): embeddings, decoder and LM head as they are; the
        representation module from encoder blocks 0..R-1; every skill's module from the blocks after them
        (shared: R..R+L-1, "the 9th to 12th layers"; private module of step i: R+i*L..R+(i+1)*L-1); the
        router's block from block R (our choice, the paper is silent); adapters, router heads and stop
        gates fresh (adapters start as the identity). T5's final encoder norm stays the final norm."""
        source = t5.encoder.block
        need = reasoning.blocks_needed()
        assert len(source) >= need, (
            f"{reasoning.variant} with R={reasoning.representation_layers}, L={reasoning.layers}, depth "
            f"{reasoning.depth} initialises from {need} encoder blocks; the backbone has {len(source)}"
        )
        model = cls(ReasonFormerConfig.of(t5.config, reasoning))
        model.set_attn_implementation(t5.config._attn_implementation)
        model.to(dtype=t5.dtype, device=t5.device)  # type: ignore[call-arg]
        model.shared.load_state_dict(t5.shared.state_dict())
        model.decoder.load_state_dict(t5.decoder.state_dict())
        model.lm_head.load_state_dict(t5.lm_head.state_dict())
        enc = model.encoder
        enc.final_layer_norm.load_state_dict(t5.encoder.final_layer_norm.state_dict())
        for i, block in enumerate(enc.representation.blocks):
            block.load_state_dict(source[i].state_dict())
        enc.reasoner.router.block.load_state_dict(
            source[min(reasoning.representation_layers, len(source) - 1)].state_dict()
        )
        for step in range(reasoning.depth if reasoning.variant == "private" else 1):
            for module in enc.reasoner.modules_at(step):
                for block, src in zip(module.blocks, reasoning.source_blocks(step)):
                    block.load_state_dict(source[src].state_dict())
        model.tie_weights()
        return model


def _trace_of(encoder_outputs: BaseModelOutput) -> ReasoningTrace | None:
    if not isinstance(encoder_outputs, ReasonFormerEncoderOutput) or encoder_outputs.router_logits is None:
        return None
    assert encoder_outputs.routing_weights is not None and encoder_outputs.selected_skills is not None
    return ReasoningTrace(
        router_logits=encoder_outputs.router_logits,
        routing_weights=encoder_outputs.routing_weights,
        selected_skills=encoder_outputs.selected_skills,
        stop_gates=encoder_outputs.stop_gates,
    )


AutoConfig.register("reasonformer_t5", ReasonFormerConfig, exist_ok=True)
AutoModelForSeq2SeqLM.register(ReasonFormerConfig, ReasonFormerForConditionalGeneration, exist_ok=True)
