"""ReasonFormer's configuration (paper 001, sections 3-4.3): which skills, which variant, how deep, how
the encoder of the backbone is cut into a representation module and reasoning modules.

Two layers of configuration:
- ``ReasoningConfig``: the reasoning part alone, a plain dataclass shared by the encoder-decoder model
  (``model.py``) and the decoder-only extension (``causal.py``).
- ``ReasonFormerConfig``: a ``T5Config`` that also carries the ``ReasoningConfig`` fields, so
  ``save_pretrained``/``from_pretrained`` keep everything in one ``config.json``.

Defaults follow the paper for T5-base (section 4.3.2) and DESIGN.md "Choices where the papers are silent".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from huggingface_hub.dataclasses import strict
from transformers import T5Config

# The five fundamental skills of section 2 plus the "general" skill every instance also activates.
SKILLS: tuple[str, ...] = ("logic", "qa", "ner", "nli", "fact", "general")
GENERAL = "general"

Variant = Literal["shared", "private", "single", "morm"]
VARIANTS: tuple[str, ...] = ("shared", "private", "single", "morm")
# Layers per reasoning module (section 4.3.2): shared modules 3 layers, private modules 1 layer (3 steps x 1
# = the 3 top T5 blocks, "closed for a fair comparison"); single and MoRM reuse the shared module's 3.
DEFAULT_MODULE_LAYERS = {"shared": 3, "private": 1, "single": 3, "morm": 3}


@dataclass
class ReasoningConfig:
    """The reasoning part of ReasonFormer (sections 3.2-3.3)."""

    skills: tuple[str, ...] = SKILLS
    # shared: one module per skill reused at every step, with per-(skill, step) adapters (section 3.2.2);
    # private: one module per (step, skill) (section 3.2.3); single: shared, depth 1, no adapter (section
    # 4.3.1); morm: MoRM (section 4.3.3): the last blocks duplicated per skill, depth 1, no routing loss.
    variant: Variant = "shared"
    depth: int = 3  # maximum reasoning depth (section 4.3.2)
    representation_layers: int = 9  # T5-base encoder blocks 1-9 (section 4.3.2)
    module_layers: int | None = None  # None = DEFAULT_MODULE_LAYERS[variant]
    top_k: int | None = 2  # sparse activation of the top-2 modules (section 4.3.1); None = full
    adapter_bottleneck: int | None = 256  # appendix B: "down projection hidden size of adapter 256"
    stop_gate: bool = True  # section 3.2.1, eq. 4
    routing_loss_weight: float = 1.0  # weight of L_r in pre-training (section 3.3; the paper gives none)
    router_hidden: int = 256  # hidden width of the router's and the stop gate's FFN (paper silent)
    general_skill: str | None = GENERAL  # the skill every pre-training instance also activates (section 3.3)
    dispatch: Literal["sparse", "masked"] = "sparse"  # masked: every module on every row (the reference)

    def __post_init__(self) -> None:
        self.skills = tuple(self.skills)
        if self.module_layers is None:
            self.module_layers = DEFAULT_MODULE_LAYERS[self.variant]
        self.validate()

    @property
    def num_skills(self) -> int:
        return len(self.skills)

    @property
    def layers(self) -> int:
        """Blocks per reasoning module (``module_layers`` resolved)."""
        assert self.module_layers is not None
        return self.module_layers

    @property
    def k(self) -> int:
        """Modules activated per step: top_k, or every skill under full activation."""
        return self.num_skills if self.top_k is None else self.top_k

    @property
    def uses_adapters(self) -> bool:
        return self.variant == "shared" and self.adapter_bottleneck is not None

    def validate(self) -> None:
        assert self.variant in VARIANTS, f"variant must be one of {VARIANTS}, got {self.variant!r}"
        assert len(self.skills) >= 1, f"at least one skill, got {self.skills}"
        assert len(set(self.skills)) == len(self.skills), f"skills must be distinct, got {self.skills}"
        assert self.depth >= 1, f"depth must be >= 1, got {self.depth}"
        assert self.representation_layers >= 1, (
            f"representation_layers must be >= 1 (block 0 owns T5's position bias), got {self.representation_layers}"
        )
        assert self.layers >= 1, f"module_layers must be >= 1, got {self.module_layers}"
        assert self.top_k is None or 1 <= self.top_k <= len(self.skills), (
            f"top_k must be in 1..{len(self.skills)} or None (full), got {self.top_k}"
        )
        assert self.adapter_bottleneck is None or self.adapter_bottleneck >= 1, (
            f"adapter_bottleneck must be >= 1 or None, got {self.adapter_bottleneck}"
        )
        if self.variant in ("single", "morm"):
            assert self.depth == 1, f"variant {self.variant} has depth 1 (section 4.3.1), got {self.depth}"
        if self.variant == "morm":
            assert self.routing_loss_weight == 0.0, (
                f"MoRM is trained without the skill routing loss (section 4.3.3), got {self.routing_loss_weight}"
            )
        assert self.routing_loss_weight >= 0.0, f"routing_loss_weight >= 0, got {self.routing_loss_weight}"
        assert self.router_hidden >= 1, f"router_hidden must be >= 1, got {self.router_hidden}"
        assert self.general_skill is None or self.general_skill in self.skills, (
            f"general_skill {self.general_skill!r} is not one of the skills {self.skills}"
        )
        assert self.dispatch in ("sparse", "masked"), f"dispatch sparse|masked, got {self.dispatch!r}"

    def source_blocks(self, step: int) -> list[int]:
        """Which blocks of the backbone's encoder the module used at ``step`` is initialised from (section
        4.3.2): the blocks right after the representation module; a private module of step i starts from
        block R + i*L (DESIGN.md: "module i of the private variant starts from block 9+i")."""
        R, L = self.representation_layers, self.layers
        offset = step * L if self.variant == "private" else 0
        return list(range(R + offset, R + offset + L))

    def blocks_needed(self) -> int:
        """Encoder blocks a backbone must have to initialise every module from its own block."""
        steps = self.depth if self.variant == "private" else 1
        return self.representation_layers + steps * self.layers

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["skills"] = list(self.skills)
        return out


@strict
class ReasonFormerConfig(T5Config):
    """A T5 configuration with ReasonFormer's reasoning part (``ReasoningConfig``) nested under
    ``reasoning_config``, so ``save_pretrained``/``from_pretrained`` keep everything in one ``config.json``
    and no reasoning field is mistaken for a generation setting (``top_k``). ``num_layers`` keeps T5's
    meaning: the encoder blocks of the backbone it was built from."""

    model_type = "reasonformer_t5"

    reasoning_config: dict[str, Any] | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        if self.reasoning_config is None:
            self.reasoning_config = ReasoningConfig().to_dict()
        super().__post_init__(**kwargs)
        self.reasoning_config = self.reasoning.to_dict()  # validated and resolved (module_layers)

    @property
    def reasoning(self) -> ReasoningConfig:
        assert self.reasoning_config is not None
        return ReasoningConfig(**self.reasoning_config)

    @classmethod
    def of(cls, t5: T5Config, reasoning: ReasoningConfig) -> ReasonFormerConfig:
        """A ReasonFormer config from a backbone T5 config and the reasoning part."""
        base = t5.to_dict()
        for key in ("model_type", "transformers_version", "architectures", "tie_word_embeddings"):
            base.pop(key, None)
        return cls(**base, reasoning_config=reasoning.to_dict())


# --- T5 presets: configs built locally (no hub access needed) ---------------------------------------


def _t5_v1_1(d_model: int, d_ff: int, layers: int, heads: int) -> dict[str, Any]:
    """The google/t5-v1_1-* architecture of that size (their config.json): gated GELU, 64-dim heads,
    untied embeddings, dropout 0.1, the same encoder and decoder depth."""
    return dict(
        d_model=d_model,
        d_kv=64,
        d_ff=d_ff,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=heads,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.1,
        vocab_size=32128,
        tie_word_embeddings=False,
    )


T5_PRESETS: dict[str, dict[str, Any]] = {
    # tests and CPU demos: 6 encoder blocks (2 representation + room for 3 private steps of 1 block, or a
    # 3-block shared module plus one spare), 2 decoder blocks, T5 v1.1's gated GELU
    "t5-tiny": dict(
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=6,
        num_decoder_layers=2,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
        relative_attention_num_buckets=16,
        relative_attention_max_distance=64,
    ),
    "t5-mini": dict(
        d_model=128,
        d_kv=32,
        d_ff=256,
        num_layers=6,
        num_decoder_layers=3,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
    ),
    # the google/t5-v1_1-* architectures (their config.json), for random-init runs and parameter counts
    "t5-v1_1-small": _t5_v1_1(d_model=512, d_ff=1024, layers=8, heads=6),
    "t5-v1_1-base": _t5_v1_1(d_model=768, d_ff=2048, layers=12, heads=12),
    "t5-v1_1-large": _t5_v1_1(d_model=1024, d_ff=2816, layers=24, heads=16),
}


def t5_preset(name: str, **overrides: Any) -> T5Config:
    """A T5 config from a named preset (``T5_PRESETS``), e.g. ``t5_preset("t5-tiny", vocab_size=40)``."""
    assert name in T5_PRESETS, f"unknown T5 preset {name!r}; known: {sorted(T5_PRESETS)}"
    values = {"decoder_start_token_id": 0, **T5_PRESETS[name], **overrides}
    return T5Config(**values)
