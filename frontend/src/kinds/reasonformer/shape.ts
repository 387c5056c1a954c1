// Shapes the ReasonFormer kinds' results for the dashboard (paper 001): Table 1 (tasks x models, activated
// parameters, average; the best model of each task marked), Table 2 (ablation rows grouped by module
// type) and the per-step routing heatmap of Figure 3 (steps x skills, stop gate beside it). Every score
// carries its 95% interval: Wilson over the task's examples, and for the average over tasks the normal
// interval of a mean of proportions (lib/interval.ts).
import type { ExperimentResult, PayloadOf } from '../../api/types';
import { bracket, meanOfProportions, wilson, type Interval } from '../../lib/interval';

export type EvalPayload = PayloadOf<'reasonformer_eval'>;
export type RoutingPayload = PayloadOf<'routing'>;
export type TaskRouting = RoutingPayload['tasks'][number];
export type TaskMetric = EvalPayload['tasks'][number];

/** A task's accuracy or exact match: a proportion of its `count` examples (Wilson, 95%). */
export function taskInterval(t: TaskMetric): Interval | null {
  return wilson(t.value, t.count);
}

/** The average over tasks: the 95% Wilson interval over the tasks' pooled examples (lib/interval.ts). */
export function averageInterval(p: EvalPayload): Interval | null {
  return meanOfProportions(p.tasks.map((t) => ({ p: t.value, n: t.count })));
}

/** " [55.1, 69.3]": an interval in percent, as the tables print values; '' without one. */
export function pctInterval(ci: Interval | null | undefined, digits = 1): string {
  return ci ? ` ${bracket(ci, (v) => (v * 100).toFixed(digits))}` : '';
}

/** "80.0% [55.0, 93.0]": a routing rate, a proportion of `n` instances, with its 95% Wilson interval. */
export function rateText(value: number, n: number | null | undefined, digits = 1): string {
  return `${pct(value, digits)}%${pctInterval(wilson(value, n), digits)}`;
}

export const ROUTING_CAPTION =
  '[lo, hi]: 95% Wilson score interval over the instances each rate counts (a task\'s step match: its n instances)';

export const EVAL_CAPTION =
  "[lo, hi]: 95% Wilson score interval over each task's n examples; the average's: Wilson score interval over the tasks' pooled examples";

export interface Tagged<P> {
  runId: number;
  payload: P;
}

/** The records of one result kind among an experiment's results (others are left out). */
export function evalResults(results: readonly Pick<ExperimentResult, 'run_id' | 'payload'>[]): Tagged<EvalPayload>[] {
  return results.flatMap((r) => (r.payload.kind === 'reasonformer_eval' ? [{ runId: r.run_id, payload: r.payload }] : []));
}

export function routingResults(results: readonly Pick<ExperimentResult, 'run_id' | 'payload'>[]): Tagged<RoutingPayload>[] {
  return results.flatMap((r) => (r.payload.kind === 'routing' ? [{ runId: r.run_id, payload: r.payload }] : []));
}

/** A model's column name: its label, with the run when two runs share a label (seeds, sweeps). */
export function columnNames(evals: readonly Tagged<EvalPayload>[]): string[] {
  const counts = new Map<string, number>();
  for (const e of evals) counts.set(e.payload.label, (counts.get(e.payload.label) ?? 0) + 1);
  return evals.map((e) => ((counts.get(e.payload.label) ?? 0) > 1 ? `${e.payload.label} · run ${e.runId}` : e.payload.label));
}

export interface Table1 {
  columns: { name: string; runId: number; activated: number; tuned: number; average: number; averageCi: Interval | null }[];
  /** one per task: its reasoning type and the value of every column (null where the model lacks the task), with its interval */
  rows: { task: string; reasoning: string | null; metric: string; values: (number | null)[]; cis: (Interval | null)[]; best: number[] }[];
  /** columns with the best average */
  bestAverage: number[];
}

const argmaxes = (values: (number | null)[]): number[] => {
  const present = values.filter((v): v is number => v !== null);
  if (present.length === 0) return [];
  const top = Math.max(...present);
  return values.flatMap((v, i) => (v !== null && Math.abs(v - top) < 1e-12 ? [i] : []));
};

/** Table 1's layout: rows are tasks (in first-seen order), columns are models (sorted by label). */
export function table1(evals: readonly Tagged<EvalPayload>[]): Table1 {
  const sorted = [...evals].sort((a, b) => a.payload.label.localeCompare(b.payload.label) || a.runId - b.runId);
  const names = columnNames(sorted);
  const columns = sorted.map((e, i) => ({
    name: names[i]!,
    runId: e.runId,
    activated: e.payload.parameters.activated,
    tuned: e.payload.parameters.tuned,
    average: e.payload.average,
    averageCi: averageInterval(e.payload),
  }));
  const tasks: { task: string; reasoning: string | null; metric: string }[] = [];
  for (const e of sorted)
    for (const t of e.payload.tasks)
      if (!tasks.some((x) => x.task === t.task)) tasks.push({ task: t.task, reasoning: t.reasoning ?? null, metric: t.metric });
  const rows = tasks.map((t) => {
    const metrics = sorted.map((e) => e.payload.tasks.find((x) => x.task === t.task) ?? null);
    const values = metrics.map((m) => m?.value ?? null);
    return { ...t, values, cis: metrics.map((m) => (m ? taskInterval(m) : null)), best: argmaxes(values) };
  });
  return { columns, rows, bestAverage: argmaxes(columns.map((c) => c.average)) };
}

/** The ablation switches of Table 2 a model lacks: reasoning pre-training, the adapter (shared variant),
 * modularity (the skill-routing loss in pre-training; only meaningful after pre-training). */
export type Ablation = 'w/o pre-train' | 'w/o adapter' | 'w/o modularity';

export function ablationsOf(p: EvalPayload): Ablation[] {
  const out: Ablation[] = [];
  if (!p.pretrained) out.push('w/o pre-train');
  if (p.variant === 'shared' && !p.adapters) out.push('w/o adapter');
  if (p.pretrained && !p.modularity) out.push('w/o modularity');
  return out;
}

const lineOf = (p: EvalPayload): string => ablationsOf(p).join(', ') || 'ReasonFormer';

/** Table 2 applies when the experiment's ReasonFormer runs differ in an ablation switch. */
export function sweepsAblations(evals: readonly Tagged<EvalPayload>[]): boolean {
  const rf = evals.filter((e) => e.payload.variant !== 't5');
  return new Set(rf.map((e) => lineOf(e.payload))).size > 1;
}

export interface AblationGroup {
  /** Table 2's "Modules" column: Shared(S), Single(S), ... */
  modules: string;
  rows: { line: string; runId: number; values: (number | null)[]; cis: (Interval | null)[]; average: number; averageCi: Interval | null }[];
}

const MODULES: Record<string, string> = { shared: 'Shared', private: 'Private', single: 'Single', morm: 'MoRM', t5: 'T5' };

/** Table 2's layout: groups by module type and activation; lines "ReasonFormer" (every switch on) first,
 * then by how many switches are off; task columns. */
export function ablationTable(evals: readonly Tagged<EvalPayload>[]): { tasks: string[]; groups: AblationGroup[] } {
  const rf = evals.filter((e) => e.payload.variant !== 't5');
  const tasks = [...new Set(rf.flatMap((e) => e.payload.tasks.map((t) => t.task)))];
  const byGroup = new Map<string, Tagged<EvalPayload>[]>();
  for (const e of rf) {
    const key = `${MODULES[e.payload.variant] ?? e.payload.variant}(${e.payload.activation === 'full' ? 'F' : 'S'})`;
    byGroup.set(key, [...(byGroup.get(key) ?? []), e]);
  }
  const groups = [...byGroup.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([modules, members]) => ({
      modules,
      rows: [...members]
        .sort((a, b) => ablationsOf(a.payload).length - ablationsOf(b.payload).length || lineOf(a.payload).localeCompare(lineOf(b.payload)) || a.runId - b.runId)
        .map((e) => ({
          line: lineOf(e.payload),
          runId: e.runId,
          values: tasks.map((t) => e.payload.tasks.find((x) => x.task === t)?.value ?? null),
          cis: tasks.map((t) => {
            const m = e.payload.tasks.find((x) => x.task === t);
            return m ? taskInterval(m) : null;
          }),
          average: e.payload.average,
          averageCi: averageInterval(e.payload),
        })),
    }));
  return { tasks, groups };
}

export interface HeatCell {
  /** x = skill index, y = step index */
  x: number;
  y: number;
  value: number;
  expected: boolean;
}

/** Figure 3's heatmap of one task: mean router weight per (step, skill); the expected skill of a step,
 * where known, is flagged. Steps are rows, first step on top. */
export function routingCells(task: TaskRouting, skills: readonly string[]): HeatCell[] {
  const cells: HeatCell[] = [];
  task.weights.forEach((row, step) =>
    row.forEach((value, j) => cells.push({ x: j, y: step, value, expected: task.expected?.[step] === skills[j] })),
  );
  return cells;
}

/** The most weighted skill of each step (Figure 3's "activated skills"), general included. */
export function topSkills(task: TaskRouting, skills: readonly string[]): string[] {
  return task.weights.map((row) => skills[row.indexOf(Math.max(...row))] ?? '?');
}

export function pct(value: number | null | undefined, digits = 1): string {
  return value === null || value === undefined ? '—' : `${(value * 100).toFixed(digits)}`;
}

export function millions(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(0)}k` : String(n);
}
