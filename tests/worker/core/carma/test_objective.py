"""One training step's loss: the default layer range (section 3.2), eq. 8's total from its parts, lambda 0
as plain fine-tuning, and exact-match accuracy (appendix B.4, eq. 11)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.worker.core.carma.tiny import EXAMPLES, tiny, tiny_batch
from worker.core.carma.evaluate import evaluate
from worker.core.carma.objective import CarmaConfig, CarmaObjective, default_layer_range
from worker.core.carma.tasks import encode, prompt_template

pytestmark = pytest.mark.usefixtures("one_thread")


def test_default_layer_range_is_about_a_third_of_the_depth() -> None:
    # section 3.2: layers 3-4 of 12 and 6-10 of 24 (counted from 1); ours counted from 0
    assert default_layer_range(12) == (2, 3)
    assert default_layer_range(24) == (5, 7)
    assert default_layer_range(30) == (7, 9)
    assert default_layer_range(4) == (0, 0) and default_layer_range(1) == (0, 0)


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
    with pytest.raises(AssertionError, match="past the model"):
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
