"""The ``skillmix`` kind: Skill-Mix (k skills, one topic, graded by a chat model) on a HuggingFace causal
LM or an OpenAI-compatible endpoint, with the experts-per-token (ept) of every router of an MoE student
overridden: paper 004 section 2.2, Table 1, Figure 6 and the metrics of appendix A.3.1
(docs/experiments/skillmix.md).

One run is one cell (model, ept, k) of Table 1. ``{}`` is a CPU demo of a few minutes: SmolLM2-135M-
Instruct from the model store as the student (dense: ept stays null), k = 2, 3 combinations x 3
generations, graded 3 times each by the rule-based grader. The sweep preset (ept in 1..E x k in 1..5) and
the paper-scale settings are the manifest's examples. The API key of an endpoint never goes in a spec: the
spec names a project secret that holds it (``api_key_secret``; worker/specs/secrets.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from worker.specs.base import SpecBase, StrictModel
from worker.specs.confine import CacheName, DataPath, EndpointUrl, ModelName
from worker.specs.manifest import Example, KindManifest
from worker.specs.placement import (
    DEVICE_MAP_DESCRIPTION,
    MAX_MEMORY_DESCRIPTION,
    DeviceMapName,
    MaxMemory,
    placement_errors,
)
from worker.specs.secrets import SecretName

# Experts per MoE layer and the default experts per token of models the platform can name, so an ept
# above E is a 422 before the run starts (other models are checked when the run loads them).
KNOWN_EXPERTS: dict[str, tuple[int, int]] = {
    "mistralai/Mixtral-8x7B-Instruct-v0.1": (8, 2),
    "mistralai/Mixtral-8x7B-v0.1": (8, 2),
    "mistralai/Mixtral-8x22B-Instruct-v0.1": (8, 2),
    "databricks/dbrx-instruct": (16, 4),
    "Qwen/Qwen1.5-MoE-A2.7B-Chat": (60, 4),
    "allenai/OLMoE-1B-7B-0924-Instruct": (64, 8),
}
# dense models the platform names: they have no router, so ept must stay null
KNOWN_DENSE = ("smollm2-135m", "tiny-gpt2", "tiny-llama", "tiny-qwen2", "tiny-gemma")
BUILTIN_SKILLS = 12  # worker/core/skillmix/data/skills.csv (a test keeps the two in step)


class ChatEndpoint(StrictModel):
    """An OpenAI-compatible chat-completions endpoint. Its key is the project secret ``api_key_secret``
    names: set by a project admin, handed only to this run, never in specs, logs, results or MLflow."""

    url: EndpointUrl = Field(
        min_length=1,
        max_length=2000,
        pattern=r"^https?://\S+$",
        description="base URL (…/v1) or the full …/chat/completions URL; its host must be on the admin's "
        "outbound allow-list (REASONLAB_OUTBOUND_ALLOW); loopback, private, link-local and metadata "
        "addresses are refused, also after DNS resolution (docs/spec-confinement.md)",
    )
    model: str = Field(min_length=1, max_length=500, description="the model name sent with each request")
    api_key_secret: SecretName | None = Field(
        None,
        description="the project secret holding the API key (its name, never the key; set by a project "
        "admin under project settings); null: the endpoint takes no key",
    )
    timeout_s: float = Field(120.0, gt=0.0, le=3600.0, description="seconds per request before a retry")
    max_retries: int = Field(3, ge=0, le=10, description="retries of a timed-out, failed or garbage answer")
    concurrency: int = Field(4, ge=1, le=64, description="requests in flight at once")


class SkillmixStudent(StrictModel):
    name: ModelName = Field(
        "smollm2-135m",
        min_length=1,
        max_length=500,
        description="a tiny preset, a store alias (smollm2-135m), a folder of the model store (relative to "
        "it) or a Hugging Face id; ignored when `endpoint` is set",
    )
    dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="weights' dtype (HF students; bfloat16 for large models)"
    )
    device_map: DeviceMapName | None = Field(None, description=DEVICE_MAP_DESCRIPTION)
    max_memory: MaxMemory | None = Field(None, description=MAX_MEMORY_DESCRIPTION)
    endpoint: ChatEndpoint | None = Field(
        None, description="an OpenAI-compatible endpoint as the student instead of an HF model"
    )
    batch_size: int = Field(8, ge=1, le=1024, description="conversations generated at once (left padded)")
    threads: int | None = Field(
        1,
        ge=1,
        le=256,
        description="torch intra-op threads on CPU (null = torch's default); 1: on a shared 2-core machine "
        "a second thread mostly waits (SmolLM2 generation ran several times faster at 1 than at 2 there)",
    )


class SkillmixGeneration(StrictModel):
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="sampling temperature (Skill-Mix: 0.7)")
    max_new_tokens: int = Field(64, ge=1, le=8192, description="tokens per turn (paper scale: 512)")


class SkillmixGrader(StrictModel):
    type: Literal["rules", "local", "endpoint"] = Field(
        "rules",
        description="rules: a scripted grader from surface features (demos, tests); local: an HF model; "
        "endpoint: an OpenAI-compatible endpoint (the paper: GPT-4)",
    )
    model: ModelName = Field(
        "smollm2-135m",
        min_length=1,
        max_length=500,
        description="the local grader's model (type local): a preset, alias, model-store folder or HF id",
    )
    dtype: Literal["float32", "bfloat16"] = Field(
        "float32", description="the local grader's weights' dtype (bfloat16 for large models)"
    )
    device_map: DeviceMapName | None = Field(
        None, description=f"the local grader's: {DEVICE_MAP_DESCRIPTION}"
    )
    max_memory: MaxMemory | None = Field(None, description=f"the local grader's: {MAX_MEMORY_DESCRIPTION}")
    endpoint: ChatEndpoint | None = Field(
        None, validate_default=True, description="the grader's endpoint (type endpoint)"
    )
    temperature: float = Field(
        0.7, ge=0.0, le=2.0, description="grading temperature (Skill-Mix's grader default: 0.7)"
    )
    max_new_tokens: int = Field(384, ge=16, le=8192, description="tokens of a grading answer")
    attempts: int = Field(
        3, ge=1, le=10, description="a grading that fails or cannot be parsed is asked up to this many times"
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint_for_type(cls, endpoint: ChatEndpoint | None, info: ValidationInfo) -> ChatEndpoint | None:
        kind = info.data.get("type")
        if kind == "endpoint" and endpoint is None:
            raise ValueError("grader type endpoint needs an endpoint {url, model, api_key_secret}")
        if kind is not None and kind != "endpoint" and endpoint is not None:
            raise ValueError(f"an endpoint is given but the grader type is {kind!r}: set type: endpoint")
        return endpoint


class SkillmixData(StrictModel):
    skills: DataPath | None = Field(
        None,
        max_length=1000,
        description="a Skill-Mix skills CSV (skill, definition, example, ...) in the data store, relative to "
        "it; null = our 12 skills",
    )
    topics: DataPath | None = Field(
        None,
        max_length=1000,
        description="a topics file (one per line) in the data store, relative to it; null = our 10 topics",
    )


class SkillmixCache(StrictModel):
    enabled: bool = Field(True, description="reuse generations and gradings of earlier runs")
    dir: CacheName | None = Field(
        None,
        description="a cache of its own: a name (letters, digits, . _ -), the folder <cache root>/skillmix/"
        "<name> on the worker; null = <cache root>/skillmix (shared by every run)",
    )


def _error(loc: tuple[str, ...], kind: str, message: str, value: Any) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError(kind, message), loc=loc, input=value)


class SkillmixSpec(SpecBase):
    kind: Literal["skillmix"] = "skillmix"
    student: SkillmixStudent = Field(default_factory=SkillmixStudent)
    ept: int | None = Field(
        None, ge=1, le=1024, description="experts per token on every router; null = the model's default"
    )
    k: int = Field(2, ge=1, le=20, description="skills per combination: the task's difficulty")
    combinations: int = Field(
        3, ge=1, le=100_000, description="(k skills, topic) combinations (paper: 5; one gives no +-)"
    )
    generations: int = Field(3, ge=1, le=20, description="texts per combination; the best counts (paper: 3)")
    gradings: int = Field(3, ge=1, le=21, description="gradings per text; majority vote (paper: 3)")
    filter_skill_names: bool = Field(
        False, description="zero a skill point when the text names the skill (Skill-Mix's filter)"
    )
    data: SkillmixData = Field(default_factory=SkillmixData)
    generation: SkillmixGeneration = Field(default_factory=SkillmixGeneration)
    grader: SkillmixGrader = Field(default_factory=SkillmixGrader)
    cache: SkillmixCache = Field(default_factory=SkillmixCache)

    @model_validator(mode="wrap")
    @classmethod
    def _ept_and_k_fit(cls, data: Any, handler: Any) -> Any:
        """ept against what the spec can know of the student, k against the built-in list, the models'
        placements against the run's resources: 422s that name ``ept``, ``k`` or the placement field."""
        spec = handler(data)
        errors: list[InitErrorDetails] = []
        name = spec.student.name
        if spec.ept is not None:
            if spec.student.endpoint is not None:
                message = (
                    "an OpenAI-compatible endpoint serves a fixed model: its experts per token are the "
                    "server's, not the spec's; leave ept null (or name an HF model as the student)"
                )
                errors.append(_error(("ept",), "ept_endpoint", message, spec.ept))
            elif name in KNOWN_DENSE:
                errors.append(
                    _error(("ept",), "ept_dense", f"{name} is dense (no router): leave ept null", spec.ept)
                )
            elif name in KNOWN_EXPERTS and spec.ept > KNOWN_EXPERTS[name][0]:
                experts = KNOWN_EXPERTS[name][0]
                message = f"ept {spec.ept} is above the {experts} experts per layer of {name}"
                errors.append(_error(("ept",), "ept_above_experts", message, spec.ept))
        if spec.data.skills is None and spec.k > BUILTIN_SKILLS:
            message = f"k {spec.k} is above the {BUILTIN_SKILLS} skills of the built-in list"
            errors.append(_error(("k",), "k_above_skills", message, spec.k))
        s, g = spec.student, spec.grader
        errors += placement_errors(("student",), s.device_map, s.max_memory, spec.resources)
        errors += placement_errors(("grader",), g.device_map, g.max_memory, spec.resources)
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return spec


class MetricValue(StrictModel):
    mean: float
    stderr: float | None = Field(description="std (ddof 1) / sqrt(combinations); null for one combination")


class SkillmixSample(StrictModel):
    """One combination: its texts, their voted points and the best of each metric."""

    index: int
    skills: list[str]
    topic: str
    texts: list[str | None] = Field(description="the graded text of each generation; null = it failed")
    points: list[list[int]] = Field(
        description="per generation, the voted k+3 points (skills, topic, sense, sentences)"
    )
    sentences: list[int | None] = Field(description="per generation, the sentence counter's count")
    partial_gradings: list[int] = Field(
        default_factory=list,
        description="per generation, its gradings that named only some criteria (the others scored 0); "
        "empty in records older than this field",
    )
    best: dict[str, float] = Field(description="per metric, the maximum over the generations")


class SkillmixCell(StrictModel):
    """Result record ``skillmix_cell``: one cell (model, ept, k) of Table 1 / Figure 6 of paper 004 with
    the six metrics of A.3.1 (mean and standard error over combinations)."""

    kind: Literal["skillmix_cell"] = "skillmix_cell"
    model: str
    student: Literal["hf", "endpoint"]
    grader: str = Field(description="the grader: rules, a local model or an endpoint model (no secret)")
    k: int
    ept: int | None = Field(description="experts per token in effect (null: dense model or endpoint)")
    default_ept: int | None = Field(description="the model's own experts per token")
    num_experts: int | None = Field(description="experts per MoE layer (E)")
    routers: int | None = Field(description="routers the override reached")
    renormalises: bool | None = Field(
        description="whether the routers renormalise their top-k weights (a confound across families)"
    )
    combinations: int
    generations: int
    gradings: int
    filter_skill_names: bool
    full_marks: MetricValue
    all_skills: MetricValue
    skill_fraction: MetricValue
    total_score: MetricValue
    total_skill_score: MetricValue
    rescaled_score: MetricValue
    failed_gradings: int = Field(description="gradings that failed after their attempts (count as zeros)")
    partial_gradings: int = Field(
        0,
        description="gradings parsed with some criteria named by no row: those scored 0 (paper 004 A.3.1, "
        "each criterion parsed individually; a missing one earns nothing)",
    )
    total_gradings: int
    failed_generations: int = Field(description="texts the student failed to produce (score zeros)")
    cached_replies: int = Field(description="replies taken from the cache (not paid again)")
    new_replies: int = Field(description="replies asked of the models in this run")
    samples: list[SkillmixSample]


_MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"
_GPT4 = {
    "type": "endpoint",
    "endpoint": {"url": "https://api.openai.com/v1", "model": "gpt-4", "api_key_secret": "OPENAI_API_KEY"},
    "max_new_tokens": 512,
}
_MIXTRAL_STUDENT = {"name": _MIXTRAL, "dtype": "bfloat16", "batch_size": 16}
_PAPER = {
    "student": _MIXTRAL_STUDENT,
    "combinations": 5,
    "generation": {"max_new_tokens": 512},
    "grader": _GPT4,
    "resources": {"device": "cuda", "gpus": 1},
}
# Mixtral over two 80 GB GPUs: 87 GiB of bf16 weights, about 43.5 GiB on each (auto balances them)
_PAPER_2GPU = {
    **_PAPER,
    "student": {**_MIXTRAL_STUDENT, "device_map": "auto"},
    "resources": {"device": "cuda", "gpus": 2},
}
# DBRX Instruct over four 80 GB GPUs: 246 GiB of bf16 weights, at most 64-66 GiB a GPU, the rest of each
# GPU's ~79 GiB left to the KV cache, activations and CUDA's own (docs/experiments/skillmix.md)
_DBRX = {
    **_PAPER,
    "student": {
        "name": "databricks/dbrx-instruct",
        "dtype": "bfloat16",
        "batch_size": 16,
        "device_map": "auto",
        "max_memory": {"0": "64GiB", "1": "66GiB", "2": "66GiB", "3": "66GiB"},
    },
    "resources": {"device": "cuda", "gpus": 4},
}

MANIFEST = KindManifest(
    name="skillmix",
    description="Skill-Mix on a HuggingFace causal LM or an OpenAI-compatible endpoint: k skills and a "
    "topic, two-turn generation, graded by a chat model, the six metrics of the SMoE paper's A.3.1, with "
    "the experts per token of every router of an MoE student overridden (SMoE paper, section 2.2).",
    spec=SkillmixSpec,
    metric_directions={name: "max" for name in ("full_marks", "all_skills", "skill_fraction", "*score*")},
    result_fields={
        name: f"skillmix_cell.{name}.mean"
        for name in (
            "full_marks",
            "all_skills",
            "skill_fraction",
            "total_score",
            "total_skill_score",
            "rescaled_score",
        )
    },
    results=(SkillmixCell,),
    examples=(
        Example(
            name="cpu-demo-k-sweep",
            description="SmolLM2-135M (dense) graded by the rule-based grader at k = 1, 2, 3: the pipeline "
            "on a laptop in minutes (docs/experiments/skillmix.md)",
            spec={},
            sweep={"grid": {"k": [1, 2, 3]}},
        ),
        Example(
            name="tiny-k-sweep",
            description="a random tiny Llama with Llama 3's tokenizer, 2 combinations x 2 texts x 3 "
            "gradings by the rule-based grader, k = 1, 2: seconds per run (name a tiny MoE folder as the "
            "student and add an ept axis for an ept x k table; the dashboard's e2e test does)",
            spec={
                "student": {"name": "tiny-llama"},
                "combinations": 2,
                "generations": 2,
                "generation": {"max_new_tokens": 8},
            },
            sweep={"grid": {"k": [1, 2]}},
        ),
        Example(
            name="paper-mixtral-table-1",
            description="Table 1: Mixtral-8x7B Instruct, ept 1..8 x k 1..5, 5 combinations, graded by "
            "GPT-4 (key in the worker's OPENAI_API_KEY); bf16 on one 141 GB GPU (H200): 93 GB of weights "
            "(the doc has the arithmetic; two 80 GB GPUs: paper-mixtral-table-1-2gpu)",
            spec=_PAPER,
            sweep={"grid": {"ept": list(range(1, 9)), "k": [1, 2, 3, 4, 5]}},
        ),
        Example(
            name="paper-mixtral-table-1-2gpu",
            description="Table 1 as paper-mixtral-table-1 on two 80 GB GPUs (A100/H100): the bf16 weights "
            "spread by device_map auto, ~43.5 GiB a GPU; needs a worker that sees both GPUs",
            spec=_PAPER_2GPU,
            sweep={"grid": {"ept": list(range(1, 9)), "k": [1, 2, 3, 4, 5]}},
        ),
        Example(
            name="paper-dbrx-figure-6",
            description="Figure 6: DBRX Instruct (132B, 16 experts, default ept 4), ept 1..16 x k 1..4, 5 "
            "combinations, graded by GPT-4; bf16 (246 GiB) over four 80 GB GPUs by device_map auto with "
            "max_memory; needs a worker that sees all four",
            spec=_DBRX,
            sweep={"grid": {"ept": list(range(1, 17)), "k": [1, 2, 3, 4]}},
        ),
        Example(
            name="sweep-ept-by-k",
            description="the sweep preset: ept in 1..E x k in 1..5 for a MoE student (here OLMoE's E = 64 "
            "trimmed to 1..16), graded by an endpoint",
            spec={
                "student": {"name": "allenai/OLMoE-1B-7B-0924-Instruct", "dtype": "bfloat16"},
                "combinations": 5,
                "grader": _GPT4,
                "resources": {"device": "cuda", "gpus": 1},
            },
            sweep={"grid": {"ept": list(range(1, 17)), "k": [1, 2, 3, 4, 5]}},
        ),
    ),
)
