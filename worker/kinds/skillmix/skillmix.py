"""Kind ``skillmix``: one cell (model, ept, k) of paper 004's Table 1 / Figure 6 (section 2.2, appendix
A.3). The student (an HF causal LM, its experts per token set on every router when ``ept`` is given, or an
OpenAI-compatible endpoint) writes two turns per (combination, generation); the grader (rules, a local HF
model or an endpoint) grades each text ``gradings`` times; the six metrics of A.3.1 are posted as one
``skillmix_cell``. Replies are cached on disk by (model, ept, prompt, seed): a resumed attempt, a retried
run or a repeated sweep asks only what was never answered. docs/experiments/skillmix.md.

Metrics, at step n = combinations graded so far (logged as each combination's last grading comes in, so
the run page draws lines while the cell is graded): the six metrics' running means over those n
combinations, ``failed_gradings`` and ``partial_gradings`` so far, ``cached_replies`` and ``new_replies`` so far (replies taken from
the cache vs asked of the models). At the last step (n = combinations) they are the cell's.
"""

from __future__ import annotations

from typing import Any

import torch

from worker.chat_apis.openai_chat import OpenAIChat
from worker.core.models import LoadedModel, ModelNotFound, Placement, PlacementError, load_model
from worker.core.models.routers import RouterError, find_routers, set_experts_per_token
from worker.core.skillmix.cache import ReplyCache
from worker.core.skillmix.chat import ChatModel, Sampling
from worker.core.skillmix.combinations import Combination, sample_combinations
from worker.core.skillmix.hf_chat import HFChat
from worker.core.skillmix.metrics import METRICS
from worker.core.skillmix.pipeline import Engine, Generation, Grading, Stopped, combination_best, score_cell
from worker.core.skillmix.rubric import criteria
from worker.core.skillmix.rule_grader import RuleGrader
from worker.core.skillmix.sentences import count_sentences
from worker.core.skillmix.skills import SkillListError, load_skills, load_topics
from worker.runtime import confined
from worker.specs.placement import accelerate_max_memory
from worker.specs.skillmix.skillmix import ChatEndpoint, SkillmixCell, SkillmixSpec
from worker.tracking.context import RunContext, RunError


def endpoint_model(endpoint: ChatEndpoint, field: str, ctx: RunContext) -> OpenAIChat:
    """The endpoint with its key, the project secret the spec names (``ctx.secret``: handed to this run
    only and redacted from everything it records)."""
    key = ""
    if endpoint.api_key_secret is not None:
        try:
            key = ctx.secret(endpoint.api_key_secret)
        except RunError as exc:
            raise RunError(f"{field}.api_key_secret: {exc}") from None
    return OpenAIChat(
        url=endpoint.url,
        model=endpoint.model,
        api_key=key,
        timeout_s=endpoint.timeout_s,
        max_retries=endpoint.max_retries,
        concurrency=endpoint.concurrency,
    )


def placement(device_map: str | None, max_memory: dict[str, str] | None, gpus: int) -> Placement | None:
    """The spec's placement fields as the model store takes them (None: one device, the run's)."""
    if device_map is None:
        return None
    return Placement(device_map, accelerate_max_memory(max_memory), gpus=gpus)


def devices_of(lm: LoadedModel) -> dict[str, int]:
    """Modules per device of a model placed by a device_map (``{"0": 12, "1": 13}``); {} on one device."""
    counts: dict[str, int] = {}
    for device in (lm.device_map or {}).values():
        counts[str(device)] = counts.get(str(device), 0) + 1
    return counts


def hf_model(
    name: str,
    dtype: str,
    seed: int,
    device: torch.device,
    prefix: str,
    name_field: str,
    where: Placement | None,
) -> LoadedModel:
    """An HF chat model for ``prefix`` (student or grader): on the run's device, or where ``where``'s
    device_map puts it (left there: inputs go to its input embeddings' device)."""
    try:
        lm = load_model(
            name,
            seed=seed,
            dtype=torch.bfloat16 if dtype == "bfloat16" else torch.float32,
            placement=where,
        )
    except ModelNotFound as exc:
        raise RunError(f"{prefix}.{name_field}: {exc}") from None
    except PlacementError as exc:
        raise RunError(f"{prefix}.device_map: {exc}") from None
    if where is None:
        lm.model.to(device)  # type: ignore[arg-type]
    lm.model.eval()
    return lm


def routing(model: torch.nn.Module, ept: int | None, name: str) -> dict[str, Any]:
    """Set ept on every router (``ept`` given) and describe the routing: ept in effect, the model's
    default, E, routers reached, whether they renormalise their top-k weights."""
    routers = find_routers(model)
    default = sorted({int(getattr(r.module, "top_k")) for r in routers})  # noqa: B009
    info: dict[str, Any] = {
        "ept": default[0] if len(default) == 1 else None,
        "default_ept": default[0] if len(default) == 1 else None,
        "num_experts": min((r.experts for r in routers if r.experts is not None), default=None),
        "routers": len(routers) or None,
        "renormalises": None,
    }
    flags = {r.renormalises for r in routers}
    info["renormalises"] = flags.pop() if len(flags) == 1 else None
    if ept is None:
        return info
    try:
        report = set_experts_per_token(model, ept)
    except RouterError as exc:
        raise RunError(f"ept: {ept} cannot be set on {name}: {exc}") from None
    info.update(
        ept=report.top_k, num_experts=report.experts, routers=report.routers, renormalises=report.renormalises
    )
    return info


def example_rows(
    gens: list[Generation], gradings: list[list[Grading]], points: list[Any]
) -> list[dict[str, Any]]:
    """The per-example table ``gradings``: one row per (combination, generation), keyed by both: the
    skills and topic, the student's replies and graded text, each grading's reply and its points per
    criterion (rubric order), and the points the cell scored the generation with."""
    rows = []
    for gen, rounds, scored in zip(gens, gradings, points, strict=True):
        c = gen.combination
        labels = [criterion.label for criterion in criteria(c)]
        rows.append(
            {
                "key": f"combination-{c.index}/generation-{gen.index}",
                "combination": c.index,
                "generation": gen.index,
                "skills": c.skill_names,
                "topic": c.topic,
                "replies": gen.replies,
                "reply": gen.text,
                "failure": gen.failure,
                "gradings": [
                    {
                        "reply": grading.reply,
                        "points": None
                        if grading.points is None
                        else dict(zip(labels, grading.points, strict=False)),
                        "partial": grading.partial,
                        "failure": grading.failure,
                    }
                    for grading in rounds
                ],
                "points": scored,
            }
        )
    return rows


def run(spec: SkillmixSpec, ctx: RunContext) -> None:
    device = torch.device(ctx.device)
    if device.type == "cpu" and spec.student.threads is not None:
        torch.set_num_threads(spec.student.threads)
    torch.manual_seed(spec.seed)
    skills_file = confined.data_file(spec.data.skills, "data.skills") if spec.data.skills else None
    topics_file = confined.data_file(spec.data.topics, "data.topics") if spec.data.topics else None
    try:
        skills = load_skills(skills_file)
        topics = load_topics(topics_file)
    except (OSError, SkillListError) as exc:
        raise RunError(f"data: {exc}") from None
    if spec.k > len(skills):
        raise RunError(f"k: {spec.k} is above the {len(skills)} skills of {spec.data.skills or 'the list'}")
    combinations = sample_combinations(skills, topics, spec.k, spec.combinations, spec.seed)

    s = spec.student
    student: ChatModel
    placed: dict[str, dict[str, int]] = {}  # modules per device of a model spread by a device_map
    route: dict[str, Any] = {
        "ept": None, "default_ept": None, "num_experts": None, "routers": None, "renormalises": None
    }  # fmt: skip
    if s.endpoint is not None:
        student, label, student_kind = (
            endpoint_model(s.endpoint, "student.endpoint", ctx),
            s.endpoint.model,
            "endpoint",
        )
        student_key: dict[str, Any] = {"model": student.identity, "ept": None}
    else:
        lm = hf_model(
            s.name,
            s.dtype,
            spec.seed,
            device,
            "student",
            "name",
            placement(s.device_map, s.max_memory, spec.resources.gpus),
        )
        placed["student_devices"] = devices_of(lm)
        route = routing(lm.model, spec.ept, s.name)
        student = HFChat(lm.model, lm.tokenizer, s.name, batch_size=s.batch_size)
        label, student_kind = s.name, "hf"
        # a random preset's weights depend on the seed; a loaded checkpoint's do not
        weights = f"seed{spec.seed}" if lm.source == "preset" else lm.source
        student_key = {"model": student.identity, "weights": weights, "dtype": s.dtype, "ept": route["ept"]}

    g = spec.grader
    grader: ChatModel
    grader_key: dict[str, Any] | None = None  # None: the grader's identity names its replies
    if g.type == "endpoint":
        assert g.endpoint is not None  # the spec refuses type endpoint without one
        grader = endpoint_model(g.endpoint, "grader.endpoint", ctx)
        grader_label = f"endpoint:{g.endpoint.model}"
    elif g.type == "local":
        same = (g.model, g.dtype, g.device_map, g.max_memory) == (s.name, s.dtype, s.device_map, s.max_memory)
        glm = lm if s.endpoint is None and same and spec.ept is None else None
        if glm is None:
            where = placement(g.device_map, g.max_memory, spec.resources.gpus)
            glm = hf_model(g.model, g.dtype, spec.seed, device, "grader", "model", where)
            placed["grader_devices"] = devices_of(glm)
        grader, grader_label = (
            HFChat(glm.model, glm.tokenizer, g.model, batch_size=s.batch_size),
            f"local:{g.model}",
        )
        if g.dtype != "float32":  # a float32 grader keeps the cache keys it always had
            grader_key = {"model": grader.identity, "dtype": g.dtype}
    else:
        grader, grader_label = RuleGrader(), "rules"

    cache_dir = confined.cache_folder(spec.cache.dir, "cache.dir", "skillmix")
    cache = ReplyCache(cache_dir if spec.cache.enabled else None)
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                **route,
                "student_identity": student.identity,
                "grader_identity": grader.identity,
                **{key: devices for key, devices in placed.items() if devices},
            },
        }
    )
    ctx.log(
        f"student {label} ({student_kind}, ept {route['ept']}, default {route['default_ept']}, "
        f"E {route['num_experts']}, renormalises {route['renormalises']}); grader {grader_label}; "
        f"{len(combinations)} combinations of k={spec.k}"
    )
    for key, devices in placed.items():
        if devices:
            spread = ", ".join(f"{device}: {n} modules" for device, n in devices.items())
            ctx.log(f"{key.removesuffix('_devices')} spread by its device_map over {spread}")
    phases = {"generation turn 1": 0, "generation turn 2": 1, "grading": 2}

    def progress(phase: str, done: int, total: int) -> None:
        ctx.progress(phases[phase] * 100 + (100 * done // max(total, 1)), 300, f"{phase}: {done}/{total}")

    running: list[dict[str, float]] = []  # per combination graded so far, its best of each metric
    failed_so_far = 0
    partial_so_far = 0

    def graded(combination: Combination, gens: list[Generation], gradings: list[list[Grading]]) -> None:
        nonlocal failed_so_far, partial_so_far
        running.append(combination_best(gens, gradings, spec.filter_skill_names))
        failed_so_far += sum(1 for rounds in gradings for grading in rounds if grading.points is None)
        partial_so_far += sum(1 for rounds in gradings for grading in rounds if grading.partial)
        n = len(running)
        ctx.log_metrics(
            {
                **{m: sum(r[m] for r in running) / n for m in METRICS},
                "failed_gradings": float(failed_so_far),
                "partial_gradings": float(partial_so_far),
                "cached_replies": float(cache.hits),
                "new_replies": float(cache.misses),
            },
            n,
        )

    engine = Engine(
        student=student,
        grader=grader,
        student_key=student_key,
        generation=Sampling(spec.generation.temperature, spec.generation.max_new_tokens),
        grading=Sampling(g.temperature, g.max_new_tokens),
        cache=cache,
        chunk=s.batch_size,
        grading_attempts=g.attempts,
        should_stop=ctx.should_stop,
        progress=progress,
        graded=graded,
        grader_key=grader_key,
    )
    try:
        gens = engine.generate(combinations, spec.generations, spec.seed)
        gradings = engine.grade(gens, spec.gradings, spec.seed)
    except Stopped as stop:
        ctx.log(f"stopped during {stop}: the replies so far are cached, a retry resumes from them")
        return
    cell = score_cell(gens, gradings, spec.filter_skill_names)
    for i, gen in enumerate(gens):
        for grading in gradings[i]:
            if grading.failure is not None:
                ctx.log(
                    f"combination {gen.combination.index} generation {gen.index}: failed grading: {grading.failure}"
                )
        if gen.failure is not None:
            ctx.log(f"combination {gen.combination.index} generation {gen.index}: failed: {gen.failure}")
    samples = []
    for c, best in zip(combinations, cell.per_combination, strict=True):
        rows = [
            (gen, p) for gen, p in zip(gens, cell.points, strict=True) if gen.combination.index == c.index
        ]
        samples.append(
            {
                "index": c.index,
                "skills": c.skill_names,
                "topic": c.topic,
                "texts": [gen.text for gen, _ in rows],
                "points": [p for _, p in rows],
                "sentences": [count_sentences(gen.text) if gen.text is not None else None for gen, _ in rows],
                "partial_gradings": [
                    sum(1 for grading in gradings[n] if grading.partial)
                    for n, gen in enumerate(gens)
                    if gen.combination.index == c.index
                ],
                "best": best,
            }
        )
    ctx.log_examples("gradings", example_rows(gens, gradings, cell.points))
    metrics = {m: {"mean": cell.metrics[m].mean, "stderr": cell.metrics[m].stderr} for m in METRICS}
    ctx.log_result(
        SkillmixCell.model_validate(
            {
                "model": label,
                "student": student_kind,
                "grader": grader_label,
                "k": spec.k,
                **route,
                "combinations": len(combinations),
                "generations": spec.generations,
                "gradings": spec.gradings,
                "filter_skill_names": spec.filter_skill_names,
                **metrics,
                "failed_gradings": cell.failed_gradings,
                "partial_gradings": cell.partial_gradings,
                "total_gradings": cell.total_gradings,
                "failed_generations": cell.failed_generations,
                "cached_replies": cache.hits,
                "new_replies": cache.misses,
                "samples": samples,
            }
        )
    )
    ctx.log_metrics(
        {
            **{m: cell.metrics[m].mean for m in METRICS},
            "failed_gradings": float(cell.failed_gradings),
            "partial_gradings": float(cell.partial_gradings),
            "cached_replies": float(cache.hits),
            "new_replies": float(cache.misses),
        },
        len(combinations),  # the last running step: the cell's own values (the same means, in index order)
    )
    ctx.progress(300, 300, f"done: full marks {cell.metrics['full_marks'].mean:.2f}, "
                           f"skill fraction {cell.metrics['skill_fraction'].mean:.2f}")  # fmt: skip
