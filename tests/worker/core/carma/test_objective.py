"""One training step's loss: the default layer range (section 3.2), eq. 8's total from its parts, lambda 0
as plain fine-tuning, and exact-match accuracy (appendix B.4, eq. 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.worker.core.carma.tiny import EXAMPLES, tiny, tiny_batch
from worker.core.carma.evaluate import evaluate
from worker.core.carma.objective import CarmaConfig, CarmaObjective, default_layer_range
from worker.core.carma.tasks import encode, prompt_template

pytestmark = pytest.mark.usefixtures("one_thread")


def test_default_layer_range_fits_both_examples_of_section_3_2() -> None:
    # paper 003, section 3.2: "layers 3-4 in 12-layer models and 6-10 in 24-layer models", counted from 1;
    # default_layer_range answers blocks counted from 0, so layer n is block n - 1
    def paper(first_layer: int, last_layer: int) -> tuple[int, int]:
        return first_layer - 1, last_layer - 1

    assert default_layer_range(12) == paper(3, 4)
    assert default_layer_range(24) == paper(6, 10)
    # between and beyond them, the line through both: layers round(L/4)..L/2 - 2 counted from 1
    assert default_layer_range(30) == paper(8, 13)  # SmolLM2-135M
    assert default_layer_range(16) == paper(4, 6)  # Llama-3.2 1B
    assert default_layer_range(28) == paper(7, 12)  # Llama-3.2 3B: B.3's MI stopping layer is 12
    for n in range(1, 80):
        first, last = default_layer_range(n)
        assert 0 <= first <= last < n, (n, first, last)
    assert default_layer_range(4) == (0, 0) and default_layer_range(1) == (0, 0)
    with pytest.raises(ValueError, match="num_layers"):
        default_layer_range(0)


def test_separate_stability_range_reads_its_own_blocks() -> None:
    """Appendix B.3's Llama-3B: MI to layer 12, stability to layer 8. The stability loss of a separate
    range equals eq. 6 over that range's blocks (up to K + 1), computed on its own from the hidden states."""
    lm = tiny("tiny-llama")
    batch = tiny_batch(lm)
    objective = CarmaObjective(CarmaConfig(lam=0.5, layers=(1, 2), stability_layers=(0, 1)), 4)
    assert objective.mi_layers == [1, 2] and objective.stab_layers == [0, 1, 2]
    torch.manual_seed(0)
    _, m = objective(lm.model, batch)
    with torch.no_grad():
        out = lm.model(
            input_ids=batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True
        )
    # hidden_states[i + 1] is the residual stream after block i (no final norm before the last block)
    h = [out.hidden_states[i + 1].double() for i in (0, 1, 2)]
    mask = batch.attention_mask[..., None].double()
    count = float(mask.sum()) * h[0].shape[-1]
    energy = [float((x.pow(2) * mask).sum()) / count for x in h]
    expected = sum(
        float(((h[i + 1] - h[i]).pow(2) * mask).sum()) / count / (energy[i] + energy[i + 1] + 1e-8)
        for i in (0, 1)
    )
    assert float(m["stability_loss"]) == pytest.approx(expected, rel=1e-5)
    # the default: the stability range is the MI range
    assert CarmaObjective(CarmaConfig(layers=(1, 2)), 4).stab_layers == [1, 2, 3]
    with pytest.raises(ValueError, match="past the model"):
        CarmaObjective(CarmaConfig(layers=(1, 2), stability_layers=(2, 4)), 4)
    with pytest.raises(ValueError, match="stability layer range"):
        CarmaConfig(stability_layers=(3, 1))


@pytest.mark.parametrize("lam", [-0.1, 1.5, float("nan")])
def test_lambda_outside_0_1_is_a_value_error_naming_it(lam: float) -> None:
    with pytest.raises(ValueError, match=f"got {lam!r}"):
        CarmaConfig(lam=lam)


@pytest.mark.heavy
def test_lambda_checks_survive_python_O() -> None:
    """Asserts vanish under ``python -O``; the range checks of eq. 8's lambda must not."""
    code = (
        "import torch\n"
        "from worker.core.carma.objective import CarmaConfig\n"
        "from worker.core.carma.losses import total_loss\n"
        "for check in (lambda: CarmaConfig(lam=1.5), lambda: total_loss(torch.tensor(1.0), torch.tensor(1.0), 2.0)):\n"
        "    try:\n"
        "        check()\n"
        "    except ValueError as exc:\n"
        "        print('refused', exc)\n"
        "    else:\n"
        "        print('accepted')\n"
    )
    root = Path(__file__).resolve().parents[4]
    done = subprocess.run(
        [sys.executable, "-O", "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "refused lambda must be in [0, 1] (paper 003, eq. 8), got 1.5",
        "refused lambda must be in [0, 1] (paper 003, eq. 8), got 2.0",
    ]


def test_total_is_eq_8_of_the_parts_and_lambda_zero_trains_the_task_only() -> None:
    lm = tiny("tiny-llama")
    batch = tiny_batch(lm)
    torch.manual_seed(0)
    loss, m = CarmaObjective(CarmaConfig(lam=0.4, gamma=0.5, eta=0.25, layers=(1, 2)), 4)(lm.model, batch)
    expected = 0.6 * m["task_loss"] + 0.4 * (0.5 * m["mi_loss"] + 0.25 * m["stability_loss"])
    assert float(loss.detach()) == pytest.approx(float(expected), rel=1e-6)
    assert float(m["carma_loss"]) == pytest.approx(float(0.5 * m["mi_loss"] + 0.25 * m["stability_loss"]))
    loss, m = CarmaObjective(CarmaConfig(lam=0.0, layers=(1, 2)), 4)(lm.model, batch)
    assert float(loss.detach()) == float(m["task_loss"]) and "mi_loss" in m  # monitored, no gradient
    assert not m["mi_loss"].requires_grad
    loss, m = CarmaObjective(CarmaConfig(lam=0.0, layers=(1, 2), monitor=False), 4)(lm.model, batch)
    assert set(m) == {"task_loss", "train_acc"}
    with pytest.raises(ValueError, match="past the model"):
        CarmaObjective(CarmaConfig(layers=(1, 4)), 4)


def test_exact_match_accuracy_counts_argmax_hits() -> None:
    lm = tiny("tiny-gpt2")
    items, _ = encode(EXAMPLES, lm.tokenizer, prompt_template("idm", "gpt2"), 64)
    result = evaluate(lm.model, items, 2, int(lm.tokenizer.pad_token_id))
    batch = tiny_batch(lm)
    with torch.no_grad():
        logits = lm.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits
    last = batch.attention_mask.sum(dim=1) - 1
    answer = logits[torch.arange(len(batch)), last]
    assert result.correct == (answer.argmax(dim=-1) == batch.labels).tolist()
    assert result.accuracy == sum(result.correct) / len(items)
    assert result.loss == pytest.approx(float(F.cross_entropy(answer, batch.labels)), rel=1e-5)
