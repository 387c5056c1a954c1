"""A checkpoint spread over devices by accelerate's device_map (worker.core.models.store.Placement), on a
CPU-only machine: the CPU holds the input embeddings and layer 0, the disk the rest (or everything). The
placed model computes what the single-device load computes, its inputs go to the input embeddings'
device, and the experts-per-token knob still finds and sets every router, offloaded ones included."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

from tests.tiny_moe import cpu_budget_for_one_layer, tiny_moe
from worker.core.models import Placement, PlacementError, input_device, load_model
from worker.core.models.routers import find_routers, set_experts_per_token

pytestmark = pytest.mark.usefixtures("one_thread")
# Llama 3's ids of "<bos>The quick brown fox jumps over"
PROMPT = [[128000, 791, 4062, 14198, 39935, 35308, 927]]


def logits(model: torch.nn.Module) -> torch.Tensor:
    ids = torch.tensor(PROMPT, device=input_device(model))  # [1, T]
    with torch.no_grad():
        return model(input_ids=ids).logits  # [1, T, V]


def greedy(model: torch.nn.Module) -> list[int]:
    ids = torch.tensor(PROMPT, device=input_device(model))
    with torch.no_grad():
        out = model.generate(input_ids=ids, max_new_tokens=6, do_sample=False, pad_token_id=0)
    return [int(t) for t in out[0, ids.shape[1] :]]


@pytest.mark.parametrize(("model_type", "renormalises"), [("mixtral", True), ("qwen2_moe", False)])
@pytest.mark.heavy
def test_a_model_split_over_cpu_and_disk_equals_the_single_device_load_at_every_ept(
    tmp_path: Path, model_type: str, renormalises: bool
) -> None:
    name = tiny_moe(tmp_path / model_type, model_type)
    single = load_model(name).model.eval()
    budget = cpu_budget_for_one_layer(single)
    lm = load_model(name, placement=Placement("auto", {"cpu": budget}, tmp_path / "offload"))
    placed = lm.model.eval()

    assert lm.device_map is not None and set(lm.device_map.values()) == {"cpu", "disk"}, lm.device_map
    assert (lm.device_map["model.embed_tokens"], lm.device_map["model.layers.1"]) == ("cpu", "disk")
    assert input_device(placed) == torch.device("cpu")
    # layer 1's router lives on the meta device until its forward: found all the same, and probed
    routers = find_routers(placed)
    assert any(r.gate.weight.device.type == "meta" for r in routers)
    assert [(r.name, r.experts, r.renormalises) for r in routers] == [
        (r.name, r.experts, r.renormalises) for r in find_routers(single)
    ]
    assert {r.renormalises for r in routers} == {renormalises}

    assert torch.allclose(logits(placed), logits(single), atol=1e-6)
    assert greedy(placed) == greedy(single)
    default = logits(single)
    for model in (single, placed):
        report = set_experts_per_token(model, 1)
        assert (report.routers, report.previous, report.renormalises) == (2, [2], renormalises)
        assert all(int(getattr(r.module, "top_k")) == 1 for r in find_routers(model))  # noqa: B009
    at_one = logits(placed)
    assert not torch.allclose(at_one, default, atol=1e-4)  # the knob reached the offloaded layer too
    assert torch.allclose(at_one, logits(single), atol=1e-6)
    assert greedy(placed) == greedy(single)


@pytest.mark.heavy
def test_embeddings_on_the_disk_take_their_inputs_on_the_execution_device(tmp_path: Path) -> None:
    name = tiny_moe(tmp_path / "mixtral", "mixtral")
    single = load_model(name).model.eval()
    lm = load_model(name, placement=Placement("sequential", {"cpu": 1024}, tmp_path / "offload"))
    assert lm.device_map == {"": "disk"}
    assert lm.model.get_input_embeddings().weight.device.type == "meta"
    assert input_device(lm.model) == torch.device("cpu")
    assert torch.allclose(logits(lm.model.eval()), logits(single), atol=1e-6)
    assert len(find_routers(lm.model)) == 2


@pytest.mark.heavy
def test_the_offload_folder_of_the_store_goes_with_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REASONLAB_CACHE", str(tmp_path / "cache"))
    name = tiny_moe(tmp_path / "mixtral", "mixtral")
    budget = cpu_budget_for_one_layer(load_model(name).model)
    lm = load_model(name, placement=Placement("balanced", {"cpu": budget}))
    (folder,) = (tmp_path / "cache" / "offload").iterdir()
    assert "disk" in (lm.device_map or {}).values() and any(folder.rglob("*"))
    del lm
    gc.collect()
    assert not folder.exists()


def test_a_preset_or_a_bad_device_map_cannot_be_placed() -> None:
    with pytest.raises(PlacementError, match="tiny preset built in memory"):
        load_model("tiny-mixtral", placement=Placement("auto"))
    with pytest.raises(PlacementError, match="auto, balanced or sequential"):
        Placement("everywhere")


@pytest.mark.parametrize("how", ["max_memory", "gpus"])
def test_a_placement_needing_more_gpus_than_the_worker_sees_is_refused_before_loading(how: str) -> None:
    visible = torch.cuda.device_count()  # 0 on the CPU machines that run the tests
    if how == "max_memory":
        placement = Placement("auto", {visible: 2**30, "cpu": 2**30})  # GPU `visible` is one too many
    else:
        placement = Placement("auto", gpus=visible + 1)
    # refused before any loading: the hub id is never looked up
    with pytest.raises(PlacementError, match=rf"needs {visible + 1} GPU\(s\) .* this worker sees {visible}:"):
        load_model("mistralai/Mixtral-8x7B-Instruct-v0.1", placement=placement)
