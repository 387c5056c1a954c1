"""Experts-per-token on every router (worker.core.models.routers): tiny random Mixtral, Qwen2-MoE, OLMoE and
DBRX built from their HF config classes (no hub), our SMoE and ReasonFormer's skill router."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch
from torch import nn
from transformers import (
    DbrxConfig,
    DbrxForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MixtralConfig,
    MixtralForCausalLM,
    OlmoeConfig,
    OlmoeForCausalLM,
    PreTrainedModel,
    Qwen2MoeConfig,
    Qwen2MoeForCausalLM,
    T5ForConditionalGeneration,
)

from worker.core.models.routers import (
    RouterError,
    count_experts,
    experts_per_token,
    find_routers,
    set_experts_per_token,
)
from worker.core.moe import MoEConfig, SparseMoE, set_top_k
from worker.core.reasonformer.cascade import CascadedReasoner, set_skill_top_k
from worker.core.reasonformer.config import ReasoningConfig, t5_preset
from worker.core.reasonformer.model import ReasonFormerForConditionalGeneration
from worker.core.sraven.model import SravenTransformer, SravenTransformerConfig

E, K, LAYERS, VOCAB = 4, 2, 2, 64
SMALL = dict(
    vocab_size=VOCAB,
    hidden_size=16,
    intermediate_size=24,
    num_hidden_layers=LAYERS,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=64,
)


@pytest.fixture(autouse=True)
def _one_thread_and_seed() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


def mixtral() -> PreTrainedModel:
    return MixtralForCausalLM(MixtralConfig(**SMALL, num_local_experts=E, num_experts_per_tok=K)).eval()


def qwen2_moe(norm_topk_prob: bool = False) -> PreTrainedModel:
    config = Qwen2MoeConfig(
        **SMALL,
        num_experts=E,
        num_experts_per_tok=K,
        moe_intermediate_size=24,
        shared_expert_intermediate_size=24,
        norm_topk_prob=norm_topk_prob,
    )
    model = Qwen2MoeForCausalLM(config).eval()
    # Qwen2-MoE initialises its router to zeros (uniform routing); random weights make k matter.
    for router in find_routers(model):
        nn.init.normal_(router.gate.weight, std=0.5)
    return model


def olmoe() -> PreTrainedModel:
    model = OlmoeForCausalLM(OlmoeConfig(**SMALL, num_experts=E, num_experts_per_tok=K)).eval()
    for router in find_routers(model):
        nn.init.normal_(router.gate.weight, std=0.5)
    return model


def dbrx(p: float | None = 1.0) -> PreTrainedModel:
    config = DbrxConfig(
        d_model=16,
        n_heads=2,
        n_layers=LAYERS,
        max_seq_len=64,
        vocab_size=VOCAB,
        # transformers 5.23's DBRX attention reads attn_config.rope_theta (absent by default) and clamps
        # with clip_qkv even when it is None: both set so a fresh config runs.
        attn_config={"kv_n_heads": 1, "rope_theta": 10000.0, "clip_qkv": 8.0},
        ffn_config={
            "ffn_hidden_size": 24,
            "moe_num_experts": E,
            "moe_top_k": K,
            "moe_normalize_expert_weights": p,
        },
    )
    return DbrxForCausalLM(config).eval()


FAMILIES: dict[str, tuple[Callable[[], PreTrainedModel], bool]] = {
    "mixtral": (mixtral, True),
    "qwen2_moe": (qwen2_moe, False),
    "olmoe": (olmoe, False),
    "dbrx": (dbrx, True),
}


def logits(model: nn.Module, seed: int = 1) -> torch.Tensor:
    ids = torch.randint(0, VOCAB, (2, 7), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        return model(input_ids=ids).logits


def config_k(model: PreTrainedModel) -> int:
    if model.config.model_type == "dbrx":
        return int(model.config.ffn_config.moe_top_k)
    return int(model.config.num_experts_per_tok)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_override_reaches_every_router_and_changes_the_output(family: str) -> None:
    build, renormalises = FAMILIES[family]
    model = build()
    before = logits(model)
    report = set_experts_per_token(model, 1)
    assert report.routers == LAYERS
    assert report.experts == E == count_experts(model)
    assert report.renormalises is renormalises
    assert report.previous == [K] and report.top_k == 1
    assert all(int(m.top_k) == 1 for m in model.modules() if hasattr(m, "top_k"))
    assert config_k(model) == 1
    after = logits(model)
    assert not torch.allclose(before, after, atol=1e-5), f"{family}: k=1 gave the k={K} output"
    set_experts_per_token(model, K)
    torch.testing.assert_close(logits(model), before)


def test_router_classes_are_the_families_own() -> None:
    assert set_experts_per_token(mixtral(), 1).classes == ["MixtralTopKRouter"]
    assert set_experts_per_token(qwen2_moe(), 1).classes == ["Qwen2MoeTopKRouter"]
    assert set_experts_per_token(olmoe(), 1).classes == ["OlmoeTopKRouter"]
    assert set_experts_per_token(dbrx(), 1).classes == ["DbrxFFN"]


def test_renormalise_flag_follows_the_family_setting() -> None:
    assert set_experts_per_token(qwen2_moe(norm_topk_prob=True), 1).renormalises is True
    assert set_experts_per_token(dbrx(p=None), 1).renormalises is False
    assert set_experts_per_token(dbrx(p=2.0), 1).renormalises is False


def dense_mixture_mixtral(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """sum_e softmax(x W_r^T)_e * expert_e(x), every expert, written from the weights (not the module)."""
    probs = torch.softmax(x @ block.gate.weight.T, dim=-1)  # [N, E]
    experts = block.experts
    out = torch.zeros_like(x)
    for e in range(E):
        gate, up = (x @ experts.gate_up_proj[e].T).chunk(2, dim=-1)  # [N, h] each
        y = (torch.nn.functional.silu(gate) * up) @ experts.down_proj[e].T  # [N, d]
        out += probs[:, e : e + 1] * y
    return out


def test_ept_equal_to_experts_is_the_dense_mixture_for_a_renormalising_router() -> None:
    model = mixtral()
    report = set_experts_per_token(model, E)
    assert report.renormalises is True
    block = model.model.layers[0].mlp  # the test may name a path; the code under test never does
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        got = block(x)[0]
        want = dense_mixture_mixtral(block, x[0])
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # Below E the top-k mixture is not the dense one.
    set_experts_per_token(model, 2)
    with torch.no_grad():
        assert not torch.allclose(block(x)[0], want, atol=1e-4)


def test_top_one_weight_is_one_when_renormalised_and_the_top_probability_when_not() -> None:
    x = torch.randn(6, 16)
    for model, renormalised in ((mixtral(), True), (qwen2_moe(), False)):
        set_experts_per_token(model, 1)
        gate = find_routers(model)[0].gate
        with torch.no_grad():
            _, weights, _ = gate(x)
            p_max = torch.softmax(x @ gate.weight.T, dim=-1).max(dim=-1).values
        want = torch.ones(6) if renormalised else p_max
        torch.testing.assert_close(weights[:, 0].float(), want)


@pytest.mark.parametrize("k", [0, E + 1, -1])
def test_out_of_range_k_is_refused(k: int) -> None:
    model = mixtral()
    with pytest.raises(RouterError, match=rf"1\.\.{E}"):
        set_experts_per_token(model, k)
    assert all(r.module.top_k == K for r in find_routers(model))


def test_a_dense_model_has_no_router() -> None:
    dense = LlamaForCausalLM(LlamaConfig(**SMALL))
    assert find_routers(dense) == [] and count_experts(dense) is None
    with pytest.raises(RouterError, match="no router"):
        set_experts_per_token(dense, 1)


def test_context_manager_restores_every_k() -> None:
    model = mixtral()
    before = logits(model)
    with experts_per_token(model, E) as report:
        assert report.top_k == E and model.config.num_experts_per_tok == E
        assert model.model.layers[1].mlp.top_k == E  # the block's own copy follows too
    assert model.config.num_experts_per_tok == K
    assert all(int(m.top_k) == K for m in model.modules() if hasattr(m, "top_k"))
    torch.testing.assert_close(logits(model), before)


def sraven_model() -> SravenTransformer:
    moe = MoEConfig(d_model=16, num_experts=8, top_k=2, expert_hidden=16)
    cfg = SravenTransformerConfig(
        d_model=16, num_layers=2, num_heads=2, qk_dim=8, v_dim=8, mlp_hidden=16, moe=moe
    )
    return SravenTransformer(cfg).eval()


def sraven_logits(model: nn.Module) -> torch.Tensor:
    tokens = torch.randn(3, 18, 8, generator=torch.Generator().manual_seed(0))  # [B, 9*M, 8]
    with torch.no_grad():
        return model(tokens)[0]


def test_our_smoe_has_the_same_knob() -> None:
    model = sraven_model()
    before = sraven_logits(model)
    report = set_experts_per_token(model, 5)
    assert (report.routers, report.experts, report.renormalises) == (2, 8, True)
    assert report.classes == ["SparseMoE"] and report.previous == [2]
    assert [m.top_k for m in model.modules() if isinstance(m, SparseMoE)] == [5, 5]
    assert not torch.allclose(sraven_logits(model), before)
    assert set_top_k(model, 2) == 2
    torch.testing.assert_close(sraven_logits(model), before)
    with pytest.raises(ValueError, match=r"1\.\.8"):
        set_top_k(model, 9)
    with pytest.raises(ValueError, match="no SparseMoE"):
        set_top_k(nn.Linear(2, 2), 1)


def reasonformer() -> ReasonFormerForConditionalGeneration:
    t5 = T5ForConditionalGeneration(t5_preset("t5-tiny", vocab_size=40, num_layers=4)).eval()
    rc = ReasoningConfig(
        skills=("a", "b", "c", "general"),
        variant="shared",
        depth=2,
        representation_layers=2,
        module_layers=1,
        top_k=2,
        adapter_bottleneck=8,
        router_hidden=16,
    )
    return ReasonFormerForConditionalGeneration.from_t5(t5, rc).eval()


def reasonformer_logits(model: nn.Module) -> torch.Tensor:
    ids = torch.randint(2, 40, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return model(input_ids=ids, decoder_input_ids=ids[:, :3]).logits


def test_reasonformer_skill_router_has_the_same_knob() -> None:
    model = reasonformer()
    before = reasonformer_logits(model)
    report = set_experts_per_token(model, 1)
    assert (report.routers, report.experts, report.renormalises) == (1, 4, True)
    assert report.classes == ["CascadedReasoner"]
    assert model.config.reasoning_config["top_k"] == 1 and model.reasoning.top_k == 1
    reasoner = next(m for m in model.modules() if isinstance(m, CascadedReasoner))
    assert reasoner.cfg.k == 1
    assert not torch.allclose(reasonformer_logits(model), before)
    assert set_skill_top_k(model, 2) == 1
    torch.testing.assert_close(reasonformer_logits(model), before)
    with pytest.raises(ValueError, match=r"1\.\.4"):
        set_skill_top_k(model, 5)
    with pytest.raises(RouterError, match=r"1\.\.4"):
        set_experts_per_token(model, 0)
