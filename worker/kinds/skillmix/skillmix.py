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

import torch

from worker.core.skillmix.cache import ReplyCache
from worker.core.skillmix.chat import Sampling
from worker.core.skillmix.combinations import Combination, sample_combinations
from worker.core.skillmix.pipeline import Engine, Stopped
from worker.core.skillmix.skills import SkillListError, load_skills, load_topics
from worker.kinds.skillmix.common.participants import Grader, Student, load_grader, load_student
from worker.kinds.skillmix.common.report import report_cell
from worker.kinds.skillmix.common.running import RunningMetrics, phase_progress
from worker.runtime import confined
from worker.specs.skillmix.skillmix import SkillmixSpec
from worker.tracking.context import RunContext, RunError


def set_up(spec: SkillmixSpec, ctx: RunContext) -> torch.device:
    """The run's device, CPU threads and torch seed."""
    device = torch.device(ctx.device)
    if device.type == "cpu" and spec.student.threads is not None:
        torch.set_num_threads(spec.student.threads)
    torch.manual_seed(spec.seed)
    return device


def combinations_of(spec: SkillmixSpec) -> list[Combination]:
    """The cell's (skills, topic) combinations, sampled from the skill and topic lists the spec names."""
    skills_file = confined.data_file(spec.data.skills, "data.skills") if spec.data.skills else None
    topics_file = confined.data_file(spec.data.topics, "data.topics") if spec.data.topics else None
    try:
        skills = load_skills(skills_file)
        topics = load_topics(topics_file)
    except (OSError, SkillListError) as exc:
        raise RunError(f"data: {exc}") from None
    if spec.k > len(skills):
        raise RunError(f"k: {spec.k} is above the {len(skills)} skills of {spec.data.skills or 'the list'}")
    return sample_combinations(skills, topics, spec.k, spec.combinations, spec.seed)


def log_set_up(
    ctx: RunContext, spec: SkillmixSpec, student: Student, grader: Grader, combinations: list[Combination]
) -> None:
    """The params (the spec, the routing in effect, the models' identities, where they were placed) and
    a line on each model."""
    placed = {"student_devices": student.devices, "grader_devices": grader.devices}
    route = student.route
    ctx.log_params(
        {
            **spec.model_dump(mode="json"),
            "derived": {
                **route,
                "student_identity": student.model.identity,
                "grader_identity": grader.model.identity,
                **{key: devices for key, devices in placed.items() if devices},
            },
        }
    )
    ctx.log(
        f"student {student.label} ({student.kind}, ept {route['ept']}, default {route['default_ept']}, "
        f"E {route['num_experts']}, renormalises {route['renormalises']}); grader {grader.label}; "
        f"{len(combinations)} combinations of k={spec.k}"
    )
    for key, devices in placed.items():
        if devices:
            spread = ", ".join(f"{device}: {n} modules" for device, n in devices.items())
            ctx.log(f"{key.removesuffix('_devices')} spread by its device_map over {spread}")


def make_engine(
    spec: SkillmixSpec,
    ctx: RunContext,
    student: Student,
    grader: Grader,
    cache: ReplyCache,
    running: RunningMetrics,
) -> Engine:
    g = spec.grader
    return Engine(
        student=student.model,
        grader=grader.model,
        student_key=student.key,
        generation=Sampling(spec.generation.temperature, spec.generation.max_new_tokens),
        grading=Sampling(g.temperature, g.max_new_tokens),
        cache=cache,
        chunk=spec.student.batch_size,
        grading_attempts=g.attempts,
        should_stop=ctx.should_stop,
        progress=phase_progress(ctx),
        graded=running.graded,
        grader_key=grader.key,
    )


def run(spec: SkillmixSpec, ctx: RunContext) -> None:
    device = set_up(spec, ctx)
    combinations = combinations_of(spec)
    student = load_student(spec, ctx, device)
    grader = load_grader(spec, ctx, device, student)
    cache_dir = confined.cache_folder(spec.cache.dir, "cache.dir", "skillmix")
    cache = ReplyCache(cache_dir if spec.cache.enabled else None)
    log_set_up(ctx, spec, student, grader, combinations)
    running = RunningMetrics(ctx, cache, spec.filter_skill_names)
    engine = make_engine(spec, ctx, student, grader, cache, running)
    try:
        gens = engine.generate(combinations, spec.generations, spec.seed)
        gradings = engine.grade(gens, spec.gradings, spec.seed)
    except Stopped as stop:
        ctx.log(f"stopped during {stop}: the replies so far are cached, a retry resumes from them")
        return
    report_cell(ctx, spec, combinations, (student, grader), cache, gens, gradings)
