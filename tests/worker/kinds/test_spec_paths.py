"""Each kind resolves the files and model names its spec names inside the stores (docs/spec-confinement.md):
run through the kind's own ``run``, a value the spec accepts but that leads out of its store (a symlink in
the store pointing outside, a name the worker's working directory shadows) fails the run naming the field,
before anything is read. Every path-like field the schemas mark (tests/worker/specs/test_hostile_fields.py
finds them) has a case here, so a new one without a run-level check fails."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.worker.kinds.sraven_context import MemoryContext
from tests.worker.stores import Stores
from worker.kinds import get_kind
from worker.specs import manifests
from worker.specs.confine import confined_fields
from worker.tracking.context import RunError

pytestmark = pytest.mark.usefixtures("one_thread")

TINY_SKILLMIX = {"student": {"name": "tiny-llama"}, "combinations": 1, "generations": 1, "gradings": 1}
TINY_SKILLMIX = {**TINY_SKILLMIX, "generation": {"max_new_tokens": 2}}
JSONL_PRETRAIN = {"source": "jsonl", "path": "ok.jsonl", "tokenizer": "tok"}
JSONL_FINETUNE = {"source": "jsonl", "train_path": "ok.jsonl", "eval_path": "ok.jsonl", "tokenizer": "tok"}
ESCAPE = "link/secret.txt"  # a data-store symlink to a folder outside it
OUT = "link"  # a model-store (and cache) symlink to a folder outside it

# (kind, field, spec): the spec names an escaping value in that field and nothing else that could fail first
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("skillmix", "data.skills", {**TINY_SKILLMIX, "data": {"skills": ESCAPE}}),
    ("skillmix", "data.topics", {**TINY_SKILLMIX, "data": {"topics": ESCAPE}}),
    ("skillmix", "student.name", {**TINY_SKILLMIX, "student": {"name": OUT}}),
    ("skillmix", "grader.model", {**TINY_SKILLMIX, "grader": {"type": "local", "model": "org/name"}}),
    ("skillmix", "cache.dir", {**TINY_SKILLMIX, "cache": {"dir": OUT}}),
    ("carma", "data.path", {"model": {"name": "tiny-gpt2"}, "data": {"source": "jsonl", "path": ESCAPE}}),
    ("carma", "synonyms.map_path", {"model": {"name": "tiny-gpt2"}, "synonyms": {"source": "json", "map_path": ESCAPE}}),
    ("carma", "model.name", {"model": {"name": OUT}}),
    ("carma", "data.hf_name", {"model": {"name": "tiny-gpt2"}, "data": {"task": "sc", "source": "hf", "hf_name": "org/name"}}),
    ("reasonformer_pretrain", "data.path", {"data": {**JSONL_PRETRAIN, "path": ESCAPE}}),
    ("reasonformer_pretrain", "data.eval_path", {"data": {**JSONL_PRETRAIN, "eval_path": ESCAPE}}),
    ("reasonformer_pretrain", "data.tokenizer", {"data": {**JSONL_PRETRAIN, "tokenizer": OUT}}),
    ("reasonformer_pretrain", "model.backbone", {"model": {"backbone": "org/name"}}),
    ("reasonformer_finetune", "init.path", {"init": {"path": OUT}}),
    ("reasonformer_finetune", "data.train_path", {"data": {**JSONL_FINETUNE, "train_path": ESCAPE}}),
    ("reasonformer_finetune", "data.eval_path", {"data": {**JSONL_FINETUNE, "eval_path": ESCAPE}}),
    ("reasonformer_finetune", "data.tokenizer", {"data": {**JSONL_FINETUNE, "tokenizer": OUT}}),
    ("reasonformer_finetune", "model.backbone", {"model": {"backbone": OUT}}),
    ("reasonformer_finetune", "init.pretrain.data.path", {"init": {"pretrain": {"data": {**JSONL_PRETRAIN, "path": ESCAPE}}}, "data": JSONL_FINETUNE}),
    ("reasonformer_finetune", "init.pretrain.data.eval_path", {"init": {"pretrain": {"data": {**JSONL_PRETRAIN, "eval_path": ESCAPE}}}, "data": JSONL_FINETUNE}),
    ("reasonformer_finetune", "init.pretrain.data.tokenizer", {"init": {"pretrain": {"data": {**JSONL_PRETRAIN, "tokenizer": OUT}}}, "data": JSONL_FINETUNE}),
    ("reasonformer_finetune", "init.pretrain.model.backbone", {"init": {"pretrain": {"model": {"backbone": OUT}}}}),
    ("topk_eval", "target.smoe_sraven.path", {"target": {"type": "smoe_sraven", "path": OUT}}),
    ("topk_eval", "target.hf.model", {"target": {"type": "hf", "model": OUT}}),
    ("topk_eval", "target.hf.text_path", {"target": {"type": "hf", "text_path": ESCAPE}}),
    ("topk_eval", "target.hf.choices_path", {"target": {"type": "hf", "score": "multiple_choice", "choices_path": ESCAPE}}),
    ("topk_eval", "target.reasonformer.path", {"target": {"type": "reasonformer", "path": OUT}}),
]  # fmt: skip
# marked fields whose value never names a file or folder: how they are confined instead
NOT_FILES = {
    "url": "checked at connect time by the endpoint client: tests/worker/chat_apis/test_outbound_guard.py",
    "name": "a bare name (datasets' configuration): refused by the spec unless letters, digits, . _ -",
}


@pytest.fixture
def escaping_stores(stores: Stores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    outside = tmp_path / "outside"
    (outside / "org" / "name").mkdir(parents=True)
    (outside / "config.json").write_text('{"model_type": "t5"}')
    (outside / "secret.txt").write_text("skill,definition,example\nnot,yours,here\n")
    (stores.data / "link").symlink_to(outside)
    (stores.data / "ok.jsonl").write_text('{"skill": "qa", "input": "a", "output": "b"}\n')
    (stores.models / "link").symlink_to(outside)
    (stores.cache / "skillmix").mkdir()
    (stores.cache / "skillmix" / "link").symlink_to(outside)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError(f"a network call: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    cwd = os.getcwd()
    os.chdir(outside)  # "org/name" exists in the worker's working directory
    try:
        yield outside
    finally:
        os.chdir(cwd)


def test_every_marked_field_has_a_case() -> None:
    marked = {
        f"{kind}:{field}"
        for kind, declared in manifests().items()
        for field, how in confined_fields(declared.spec.model_json_schema()).items()
        if how not in NOT_FILES
    }
    assert marked == {f"{kind}:{field}" for kind, field, _ in CASES}


@pytest.mark.parametrize(("kind", "field", "spec"), CASES, ids=[f"{k}:{f}" for k, f, _ in CASES])
@pytest.mark.usefixtures("escaping_stores")
@pytest.mark.heavy
def test_a_value_leading_out_of_its_store_fails_the_run_naming_the_field(
    kind: str, field: str, spec: dict[str, Any], tmp_path: Path
) -> None:
    declared = get_kind(kind)
    validated = declared.spec.model_validate(spec)  # the spec cannot see the store: it accepts the value
    ctx = MemoryContext(out_dir=tmp_path / "out")
    with pytest.raises(RunError, match=rf"^{field.replace('.', '[.]')}: ") as info:
        declared.run(validated, ctx)
    message = str(info.value)
    assert "not yours" not in message  # nothing of the outside file came back
    assert any(why in message for why in ("leads outside", "working directory", "local path")), message
    assert not ctx.results
