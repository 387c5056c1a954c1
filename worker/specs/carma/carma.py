"""The ``carma`` kind: fine-tune a HuggingFace causal LM with or without CARMA's regularisers (paper 003,
section 3), then measure it as the paper does: exact-match accuracy, CAP layer curves (section 5.1,
Figure 2) and synonym consistency (section 5.2, Tables 1, 4, 5). docs/experiments/carma.md.

One run is one variant: ``original`` (no training), ``ft`` (task loss only, lambda = 0) or ``carma``
(lambda, gamma, eta on a layer range). ``{}`` is a CPU demo of a few minutes: SmolLM2-135M-Instruct on
WordNet inverse dictionary modelling (500 examples), 60 steps of CARMA, then CAP at 4 depths on 32
test items and synonyms at 25% and 40% over 5 seeds. Paper-scale settings are the manifest's examples.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from worker.specs.base import SpecBase, StrictModel
from worker.specs.confine import DataPath, HubConfigName, HubDatasetId, ModelName
from worker.specs.manifest import Example, KindManifest

# Depths (decoder blocks) of the models the platform names, so a layer past the depth is a 422 before the
# run starts; other models are checked when the run loads them. The tiny presets are
# worker/core/models/presets.py's (a test keeps the two in step).
KNOWN_DEPTHS: dict[str, int] = {
    "tiny-gpt2": 4,
    "tiny-llama": 4,
    "tiny-qwen2": 4,
    "tiny-gemma": 4,
    "tiny-mixtral": 4,
    "tiny-qwen2-moe": 4,
    "tiny-olmoe": 4,
    "smollm2-135m": 30,
    "gpt2": 12,
    "openai-community/gpt2": 12,
    "gpt2-large": 36,
    "openai-community/gpt2-large": 36,
    "meta-llama/Llama-3.2-1B": 16,
    "meta-llama/Llama-3.2-3B": 28,
    "Qwen/Qwen2.5-0.5B": 24,
    "Qwen/Qwen2.5-3B": 36,
    "google/gemma-2b": 18,
}


class CarmaModelSpec(StrictModel):
    name: ModelName = Field(
        "smollm2-135m",
        min_length=1,
        max_length=500,
        description="a tiny preset (tiny-gpt2, tiny-llama, tiny-qwen2, tiny-gemma), a store alias "
        "(smollm2-135m), a folder of the model store with an HF checkpoint (relative to it), or a Hugging "
        "Face id",
    )
    dtype: Literal["float32", "bfloat16"] = Field("float32", description="weights' dtype")


class CarmaRegularisation(StrictModel):
    """CARMA's weights and layer range (paper 003, eqs. 7-8)."""

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)

    lambda_: float = Field(
        0.2,
        alias="lambda",
        ge=0.0,
        le=1.0,
        description="lambda of eq. 8: (1-lambda) task + lambda CARMA; 0 = fine-tuning (reference CLI: 0.2)",
    )
    gamma: float = Field(0.2, ge=0.0, le=1.0, description="weight of the MI loss, eq. 7 (reference: 0.2)")
    eta: float = Field(
        0.3, ge=0.0, le=1.0, description="weight of the stability loss, eq. 7 (reference: 0.3)"
    )
    layers: list[int] | None = Field(
        None,
        description="[first, last] decoder block, inclusive, counted from 0 (the paper's layer n is block "
        "n - 1); null = section 3.2's default: layers round(L/4)..L/2-2 counted from 1 (3-4 of 12, 6-10 of "
        "24), i.e. blocks round(L/4)-1..L/2-3",
    )
    stability_layers: list[int] | None = Field(
        None,
        description="[first, last] block range of the stability loss (eq. 6), counted from 0, when it "
        "differs from the MI range `layers` (B.3: Llama-3B stops stability at layer 8, MI at 12); "
        "null = `layers`",
    )
    temperature: float = Field(0.1, gt=0.0, le=10.0, description="InfoNCE temperature (reference: 0.1)")
    num_negatives: int = Field(5, ge=1, le=64, description="negatives per positive pair (reference: 5)")

    @field_validator("layers", "stability_layers")
    @classmethod
    def _a_range(cls, layers: list[int] | None) -> list[int] | None:
        if layers is None:
            return None
        if len(layers) != 2:
            raise ValueError(f"a layer range is [first, last], got {layers}")
        first, last = layers
        if first < 0:
            raise ValueError(f"layers are counted from 0, got {layers}")
        if first > last:
            raise ValueError(f"empty or inverted layer range {layers}: first must be <= last")
        return layers


class CarmaData(StrictModel):
    task: Literal["idm", "sc"] = Field(
        "idm", description="idm: a WordNet definition -> the word; sc: a sentence -> its sentiment"
    )
    source: Literal["wordnet", "jsonl", "csv", "hf"] = Field(
        "wordnet",
        validate_default=True,
        description="wordnet (IDM, offline), a JSONL or CSV file, or a HuggingFace dataset",
    )
    path: DataPath | None = Field(
        None,
        max_length=1000,
        validate_default=True,
        description="the JSONL or CSV file (sources jsonl, csv) in the data store, relative to it",
    )
    text_field: str = Field("text", min_length=1, description="field/column of the input text")
    label_field: str = Field(
        "label", min_length=1, description="field/column of the label: a string, or an SST score in [0, 1]"
    )
    hf_name: HubDatasetId = Field(
        "stanfordnlp/sst", min_length=1, description="HuggingFace dataset id, name or org/name (source hf)"
    )
    hf_config: HubConfigName | None = Field(None, description="HuggingFace dataset configuration")
    hf_splits: list[str] = Field(
        ["train", "validation", "test"],
        min_length=3,
        max_length=3,
        description="train, validation and test splits of the HF dataset (its own splits are kept)",
    )
    wordnet_pos: list[Literal["n", "v", "a", "r"]] = Field(
        ["n"], min_length=1, description="WordNet parts of speech for IDM"
    )
    max_examples: int | None = Field(
        500,
        ge=10,
        description="examples kept (after single-token filtering, shuffled with split_seed) before the "
        "80/10/10 split; null = all",
    )
    split_seed: int = Field(
        42, ge=0, le=2**32 - 1, description="seed of the shuffle and split (reference: 42)"
    )
    max_length: int = Field(64, ge=4, le=4096, description="prompts longer than this (tokens) are dropped")
    prompt: str | None = Field(
        None,
        max_length=2000,
        description="custom prompt with {text} once; null = the family's prompt "
        '(IDM: {text} is called a "; SC: The sentiment of {text} is ")',
    )
    positive_above: float = Field(0.6, ge=0.0, le=1.0, description="SST score above this is positive")
    negative_below: float = Field(0.4, ge=0.0, le=1.0, description="SST score below this is negative")

    @field_validator("path")
    @classmethod
    def _path_for_files(cls, path: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("source") in ("jsonl", "csv") and not path:
            raise ValueError(f"source {info.data['source']!r} needs a path")
        return path

    @field_validator("source")
    @classmethod
    def _wordnet_is_idm(cls, source: str, info: ValidationInfo) -> str:
        if source == "wordnet" and info.data.get("task") != "idm":
            raise ValueError("the wordnet source gives IDM examples only (task idm)")
        return source

    @field_validator("prompt")
    @classmethod
    def _one_placeholder(cls, prompt: str | None) -> str | None:
        if prompt is not None and prompt.count("{text}") != 1:
            raise ValueError("a prompt holds {text} exactly once")
        return prompt

    @field_validator("negative_below")
    @classmethod
    def _ordered(cls, negative_below: float, info: ValidationInfo) -> float:
        positive_above = info.data.get("positive_above")
        if positive_above is not None and negative_below > positive_above:
            raise ValueError(f"negative_below {negative_below} exceeds positive_above {positive_above}")
        return negative_below


class CarmaTrain(StrictModel):
    batch_size: int = Field(8, ge=1, le=4096, description="examples per step (paper: 16 to 64 by model)")
    epochs: int = Field(3, ge=1, le=1000, description="passes over the training split (reference: 3)")
    max_steps: int | None = Field(
        60, ge=1, description="cap on optimiser steps (the CPU demo); null = epochs x steps per epoch"
    )
    lr: float = Field(6e-5, gt=0.0, le=1.0, description="AdamW peak learning rate (reference: 6e-5)")
    warmup_steps: int = Field(
        10, ge=0, description="linear warmup, then linear decay to 0 (reference: 500; 10 for the demo)"
    )
    weight_decay: float = Field(0.01, ge=0.0, le=10.0, description="AdamW weight decay (torch's default)")
    grad_clip: float | None = Field(1.0, gt=0.0, description="max global gradient norm (reference: 1.0)")
    eval_interval: int = Field(
        30, ge=1, description="steps between validation evaluations (the best one is kept)"
    )
    eval_batch_size: int = Field(32, ge=1, le=4096)
    log_every: int = Field(5, ge=1, description="steps between training-metric points")
    checkpoint_every: int = Field(
        0, ge=0, description="steps between resume checkpoints; 0 = only when cancelled"
    )


class CarmaCap(StrictModel):
    enabled: bool = Field(True, description="run the CAP intervention on the best checkpoint")
    layers: list[int] | None = Field(
        None, description="start layers (0-indexed); null = `points` layers evenly spread over the depth"
    )
    points: int = Field(
        4, ge=2, le=1000, description="start layers when `layers` is null (first and last included)"
    )
    protocols: list[Literal["mean", "max", "sum"]] = Field(
        ["mean", "max", "sum"], min_length=1, description="pooling protocols (appendix C.1)"
    )
    max_items: int | None = Field(32, ge=1, description="test items CAP uses; null = all")

    @field_validator("layers")
    @classmethod
    def _non_negative(cls, layers: list[int] | None) -> list[int] | None:
        if layers is not None and (not layers or min(layers) < 0):
            raise ValueError(f"CAP start layers are a non-empty list counted from 0, got {layers}")
        return layers


class CarmaSynonyms(StrictModel):
    enabled: bool = Field(True, description="run the synonym intervention on the best checkpoint")
    source: Literal["wordnet", "json"] = Field(
        "wordnet", description="wordnet (nltk, offline) or a JSON map {word: [synonyms]}"
    )
    map_path: DataPath | None = Field(
        None,
        max_length=1000,
        validate_default=True,
        description="the JSON synonym map (source json) in the data store, relative to it",
    )
    rates: list[float] = Field(
        [0.25, 0.4], min_length=1, description="fractions of words replaced (paper: 25%, 40%)"
    )
    seeds: list[int] = Field(
        [0, 1, 2, 3, 4], min_length=5, description="one replacement draw per seed (paper: at least 5)"
    )
    max_items: int | None = Field(None, ge=1, description="test items considered; null = all")

    @field_validator("rates")
    @classmethod
    def _rates(cls, rates: list[float]) -> list[float]:
        if any(not 0.0 < r <= 1.0 for r in rates):
            raise ValueError(f"rates are in (0, 1], got {rates}")
        return rates

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds) or min(seeds) < 0:
            raise ValueError(f"seeds must be distinct and >= 0, got {seeds}")
        return seeds

    @field_validator("map_path")
    @classmethod
    def _map_for_json(cls, map_path: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("source") == "json" and not map_path:
            raise ValueError("the json synonym source needs map_path")
        return map_path


def _past_depth(loc: tuple[str, ...], layers: list[int], name: str, depth: int) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError(
            "layer_past_depth",
            "layer {layer} is past the depth of {model}: {depth} blocks, 0..{last}",
            {"layer": max(layers), "model": name, "depth": depth, "last": depth - 1},
        ),
        loc=loc,
        input=layers,
    )


class CarmaSpec(SpecBase):
    kind: Literal["carma"] = "carma"
    variant: Literal["original", "ft", "carma"] = Field(
        "carma", description="original: no training; ft: task loss only; carma: with CARMA's losses"
    )
    model: CarmaModelSpec = Field(default_factory=CarmaModelSpec)
    data: CarmaData = Field(default_factory=CarmaData)
    carma: CarmaRegularisation = Field(default_factory=CarmaRegularisation)
    train: CarmaTrain = Field(default_factory=CarmaTrain)
    cap: CarmaCap = Field(default_factory=CarmaCap)
    synonyms: CarmaSynonyms = Field(default_factory=CarmaSynonyms)

    @model_validator(mode="wrap")
    @classmethod
    def _layers_within_depth(cls, data: Any, handler: Any) -> Any:
        """A layer past a known model's depth names its field (``carma.layers``, ``carma.stability_layers``,
        ``cap.layers``)."""
        spec = handler(data)
        depth = KNOWN_DEPTHS.get(spec.model.name)
        if depth is None:
            return spec
        errors = [
            _past_depth(loc, layers, spec.model.name, depth)
            for loc, layers in (
                (("carma", "layers"), spec.carma.layers),
                (("carma", "stability_layers"), spec.carma.stability_layers),
                (("cap", "layers"), spec.cap.layers),
            )
            if layers is not None and max(layers) >= depth
        ]
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return spec


class CapPoint(StrictModel):
    layer: int = Field(description="start layer L (0-indexed): the stream entering block L is pooled")
    depth: float = Field(description="normalised depth L / (n - 1)")
    accuracy: float


class CarmaEval(StrictModel):
    """Result record ``carma_eval``: the variant's accuracy (Figures 3-4) and its training."""

    kind: Literal["carma_eval"] = "carma_eval"
    variant: Literal["original", "ft", "carma"]
    model: str
    task: Literal["idm", "sc"]
    lambda_: float | None = Field(alias="lambda", description="lambda of eq. 8; 0 for ft, null for original")
    gamma: float | None
    eta: float | None
    layers: list[int] | None = Field(
        description="CARMA's (MI) layer range [first, last], blocks counted from 0; null when not trained"
    )
    stability_layers: list[int] | None = Field(
        None, description="the stability loss's range when it differs from `layers`; null = `layers`"
    )
    num_layers: int
    train_size: int
    validation_size: int
    test_size: int
    steps: int
    best_step: int | None = Field(description="step of the best validation accuracy; null for original")
    validation_acc: float
    test_acc: float
    test_loss: float
    step_seconds: float | None = Field(description="mean wall-clock seconds per training step")

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


class CapCurve(StrictModel):
    """Result record ``cap_curve``: accuracy under CAP per normalised depth, one protocol (Figure 2)."""

    kind: Literal["cap_curve"] = "cap_curve"
    variant: Literal["original", "ft", "carma"]
    model: str
    task: Literal["idm", "sc"]
    lambda_: float | None = Field(alias="lambda")
    protocol: Literal["mean", "max", "sum"]
    num_layers: int
    items: int = Field(description="test items evaluated")
    clean_acc: float = Field(description="accuracy of the same items without CAP")
    points: list[CapPoint]

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


class SynonymConsistency(StrictModel):
    """Result record ``synonym_consistency``: ConsistSyn over seeds at one rate (Tables 1, 4, 5)."""

    kind: Literal["synonym_consistency"] = "synonym_consistency"
    variant: Literal["original", "ft", "carma"]
    model: str
    task: Literal["idm", "sc"]
    lambda_: float | None = Field(alias="lambda")
    rate: float
    source: Literal["wordnet", "json"]
    seeds: list[int]
    consist_syn: list[float] = Field(description="per seed, percent (appendix B.4, eq. 12)")
    mean: float = Field(description="mean ConsistSyn over seeds, percent")
    std: float = Field(description="population std (ddof 0) of ConsistSyn over seeds")
    cv: float = Field(description="std / mean (eq. 13)")
    correct_before: int = Field(description="originally-correct test items the replacement applies to")
    changed: list[int] = Field(description="per seed, items with at least one word replaced")

    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


def _variants(**extra: Any) -> dict[str, Any]:
    return {"grid": {"variant": ["original", "ft", "carma"], **extra}}


_PAPER_TRAIN = {"batch_size": 16, "epochs": 3, "max_steps": None, "lr": 6e-5, "warmup_steps": 500,
                "grad_clip": 1.0, "eval_interval": 200, "eval_batch_size": 64, "log_every": 20,
                "checkpoint_every": 1000}  # fmt: skip
_PAPER_DATA = {"task": "idm", "source": "wordnet", "max_examples": 12000}
_PAPER_EVAL = {
    "cap": {"layers": None, "points": 1000, "max_items": None},
    "synonyms": {"seeds": [0, 1, 2, 3, 4]},
}
_GPU = {"device": "cuda", "gpus": 1}


def _blocks(first_layer: int, last_layer: int) -> list[int]:
    """A layer range as the paper writes it (layers counted from 1: section 3.2's "layers 3-4 in 12-layer
    models", B.3's stopping layers) as the spec's blocks counted from 0."""
    return [first_layer - 1, last_layer - 1]


def _paper(
    model: str,
    layers: tuple[int, int],
    lam: float,
    batch: int,
    epochs: int,
    stability: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A paper-scale spec; ``layers`` (and ``stability``) are the paper's layer numbers, counted from 1: the
    last is B.3's stopping layer, the first is ours (B.3 names only where the range ends)."""
    carma: dict[str, Any] = {"lambda": lam, "gamma": 0.5, "eta": 0.2, "layers": _blocks(*layers)}
    if stability is not None:
        carma["stability_layers"] = _blocks(*stability)
    return {
        "seed": 42,
        "resources": _GPU,
        "model": {"name": model},
        "data": _PAPER_DATA,
        "carma": carma,
        "train": {**_PAPER_TRAIN, "batch_size": batch, "epochs": epochs},
        **_PAPER_EVAL,
    }


MANIFEST = KindManifest(
    name="carma",
    description="Fine-tune a HuggingFace causal LM with or without CARMA's MI and stability regularisers "
    "(IDM or sentiment), then measure exact-match accuracy, CAP layer curves and synonym consistency "
    "(CARMA paper, sections 3-5).",
    spec=CarmaSpec,
    metric_directions={
        "*loss*": "min",
        "*acc*": "max",  # the CAP regions' cap/<region>_acc included
        "*consistency*": "max",
        "consist_syn/*": "max",  # ConsistSyn per rate (eq. 12): higher is more consistent
        "consist_syn_cv/*": "min",  # its CV (eq. 13): lower is more stable (section 5.2)
        "step_time": "min",
    },
    result_fields={
        "test_acc": "carma_eval.test_acc",
        "validation_acc": "carma_eval.validation_acc",
        "test_loss": "carma_eval.test_loss",
        "variant": "carma_eval.variant",
    },
    results=(CarmaEval, CapCurve, SynonymConsistency),
    examples=(
        Example(
            name="cpu-demo-three-variants",
            description="SmolLM2-135M on WordNet IDM: Original vs FT vs CARMA, each followed by CAP and "
            "synonyms (3 runs of a few minutes on 2 cores; docs/experiments/carma.md)",
            spec={},
            sweep=_variants(),
        ),
        Example(
            name="cpu-lambda-sweep",
            description="SmolLM2-135M on WordNet IDM, lambda in {0, 0.1, 0.2, 0.4} (lambda 0 is FT)",
            spec={"variant": "carma", "cap": {"enabled": False}},
            sweep={"grid": {"carma.lambda": [0.0, 0.1, 0.2, 0.4]}},
        ),
        Example(
            name="tiny-gpt2-three-variants",
            description="a random tiny GPT-2 with GPT-2's real tokenizer on WordNet IDM: the whole pipeline "
            "for Original, FT and CARMA in seconds each (the dashboard's e2e test)",
            spec={"model": {"name": "tiny-gpt2"}, "data": {"max_examples": 200}, "train": {"max_steps": 10}},
            sweep=_variants(),
        ),
        Example(
            name="paper-gpt2-small-idm",
            description="GPT-2 S on WordNet IDM as section B.3: batch 16, 2 epochs, stopping layer 3 (the "
            "paper counts layers from 1: block 2), "
            "CARMA weight 0.2 (one GPU, about an hour for the three variants)",
            spec=_paper("openai-community/gpt2", (1, 3), 0.2, 16, 2),
            sweep=_variants(),
        ),
        Example(
            name="paper-gpt2-large-idm",
            description="GPT-2 L on WordNet IDM: batch 16, 2 epochs, stopping layer 8, weight 0.3",
            spec=_paper("openai-community/gpt2-large", (4, 8), 0.3, 16, 2),
            sweep=_variants(),
        ),
        Example(
            name="paper-llama-3.2-1b-idm",
            description="Llama-3.2 1B on WordNet IDM: batch 32, 3 epochs, stopping layer 7, weight 0.4",
            spec=_paper("meta-llama/Llama-3.2-1B", (4, 7), 0.4, 32, 3),
            sweep=_variants(),
        ),
        Example(
            name="paper-llama-3.2-3b-idm",
            description="Llama-3.2 3B on WordNet IDM: batch 32, 3 epochs, stopping layers 12 (MI) and 8 "
            "(stability), weight 0.5",
            spec=_paper("meta-llama/Llama-3.2-3B", (7, 12), 0.5, 32, 3, stability=(7, 8)),
            sweep=_variants(),
        ),
        Example(
            name="paper-qwen2.5-0.5b-idm",
            description="Qwen2.5 0.5B on WordNet IDM: batch 64, 3 epochs, stopping layer 5, weight 0.5",
            spec=_paper("Qwen/Qwen2.5-0.5B", (3, 5), 0.5, 64, 3),
            sweep=_variants(),
        ),
        Example(
            name="paper-qwen2.5-3b-idm",
            description="Qwen2.5 3B on WordNet IDM: batch 32, 3 epochs, stopping layer 10, weight 0.4",
            spec=_paper("Qwen/Qwen2.5-3B", (6, 10), 0.4, 32, 3),
            sweep=_variants(),
        ),
        Example(
            name="paper-gemma-2b-idm",
            description="Gemma-2B on WordNet IDM: batch 16, 2 epochs, stopping layer 10, weight 0.3",
            spec=_paper("google/gemma-2b", (6, 10), 0.3, 16, 2),
            sweep=_variants(),
        ),
        Example(
            name="paper-sst-gpt2-small",
            description="GPT-2 S on SST sentiment from the HF hub (needs `datasets` and hub access): batch "
            "16, 2 epochs, ending layer 4, weight 0.4",
            spec={
                **_paper("openai-community/gpt2", (2, 4), 0.4, 16, 2),
                "data": {"task": "sc", "source": "hf", "hf_name": "stanfordnlp/sst", "max_examples": None},
            },
            sweep=_variants(),
        ),
    ),
)
