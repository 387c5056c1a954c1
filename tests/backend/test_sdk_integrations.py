"""The SDK's optional integrations against the API (in process): a Hugging Face ``Trainer`` with
``ReasonLabCallback`` and a plain PyTorch loop with ``StepLogger`` (reasonlab_sdk/integrations/)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from reasonlab_sdk import init
from reasonlab_sdk.integrations.torch import StepLogger
from reasonlab_sdk.integrations.transformers import ReasonLabCallback, metric_name
from tests.backend.conftest import Api
from tests.backend.test_sdk_tracking import _client, _series


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_DIR", str(tmp_path / "runs"))


def test_trainer_keys_are_named_as_other_trackers_name_them() -> None:
    assert [metric_name(k) for k in ("loss", "grad_norm", "eval_loss", "test_acc", "epoch")] == [
        "train/loss",
        "train/grad_norm",
        "eval/loss",
        "test/acc",
        "train/epoch",
    ]


class _Tokens(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __init__(self, n: int, seed: int) -> None:
        self.ids = torch.randint(0, 32, (n, 8), generator=torch.Generator().manual_seed(seed))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


@pytest.mark.heavy
def test_a_trainer_run_logs_its_curves_config_and_summary(api: Api, tmp_path: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            n_layer=1, n_head=2, n_embd=16, vocab_size=32, n_positions=8, bos_token_id=0, eos_token_id=0
        )
    )
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=6,
        logging_steps=2,
        eval_strategy="steps",
        eval_steps=3,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    callback = ReasonLabCallback(experiment="hf", tags=["trainer"], client=_client(api))
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=_Tokens(24, 1),
        eval_dataset=_Tokens(8, 2),
        callbacks=[callback],
    )
    trainer.train()
    assert callback.run is None  # finished at the end of training

    runs = api.client.get("/api/v1/runs", params={"q": "kind = 'external'"}, headers=api.h()).json()["items"]
    [run] = [r for r in runs if "trainer" in r["tags"]]
    got = api.client.get(f"/api/v1/runs/{run['id']}", headers=api.h()).json()
    assert got["status"] == "succeeded"
    assert got["spec"]["training_args"]["max_steps"] == 6
    assert got["spec"]["model"]["n_layer"] == 1

    history = trainer.state.log_history
    train = [(h["step"], h["loss"]) for h in history if "loss" in h]
    evals = [(h["step"], h["eval_loss"]) for h in history if "eval_loss" in h]
    assert [s for s, _ in train] == [2, 4, 6] and [s for s, _ in evals] == [3, 6]
    assert _series(api, run["id"], "train/loss") == [(s, pytest.approx(v)) for s, v in train]
    assert _series(api, run["id"], "eval/loss") == [(s, pytest.approx(v)) for s, v in evals]
    assert [s for s, _ in _series(api, run["id"], "train/learning_rate")] == [2, 4, 6]
    # the end-of-training statistics are the summary, not one-point curves
    params = got["logged_params"]
    end = next(h for h in history if "train_runtime" in h)
    assert params["summary.train_loss"] == pytest.approx(end["train_loss"])
    assert "summary.train_runtime" in params
    keys = api.client.get(f"/api/v1/runs/{run['id']}/metrics", headers=api.h()).json()["series"]
    assert not any(k.endswith("train_runtime") for k in keys)


def _grad_norm(model: torch.nn.Module) -> float:
    """The global L2 norm of the gradients, computed here apart from the SDK's."""
    return math.sqrt(
        sum(float((p.grad.double() ** 2).sum()) for p in model.parameters() if p.grad is not None)
    )


def test_a_plain_pytorch_loop_logs_every_step_with_one_read_per_flush(api: Api) -> None:
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    losses: list[float] = []
    norms: dict[int, float] = {}
    with init(experiment="loop", tags=["torch"], client=_client(api)) as run:
        logger = StepLogger(run, model, optimizer, every=3)
        for step in range(7):
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            losses.append(float(loss.detach()))
            if step % 3 == 0:
                norms[step] = _grad_norm(model)
            logger.step(loss, half=loss / 2, count=step)
            optimizer.step()
            optimizer.zero_grad()
        with pytest.raises(ValueError, match="half: a scalar tensor is needed"):
            logger.step(loss, half=torch.ones(2))
        logger.close()
    assert [s for s, _ in _series(api, run.id, "loss")] == list(range(7))
    assert [v for _, v in _series(api, run.id, "loss")] == pytest.approx(losses, rel=1e-6)
    assert [v for _, v in _series(api, run.id, "half")] == pytest.approx([v / 2 for v in losses], rel=1e-6)
    assert _series(api, run.id, "count") == [(s, float(s)) for s in range(7)]
    assert _series(api, run.id, "lr") == [(0, 0.05), (3, 0.05), (6, 0.05)]
    got = _series(api, run.id, "grad_norm")
    assert [s for s, _ in got] == [0, 3, 6]
    assert [v for _, v in got] == pytest.approx([norms[s] for s in (0, 3, 6)], rel=1e-5)


def test_a_bad_every_is_refused() -> None:
    class _NoRun:
        pass

    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="every must be a positive integer"):
            StepLogger(_NoRun(), every=bad)  # type: ignore[arg-type]
