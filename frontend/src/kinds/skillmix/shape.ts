// Shapes an experiment's `skillmix_cell` results (one per run: a model, an experts-per-token, a k) into
// paper 004's Table 1 layout: rows ept, columns k, each cell three headline metrics with their ±, the best
// ept of each column marked per metric, the model's default ept labelled; and into a heatmap of one metric
// and the best ept per k. Each metric of a cell carries its 95% interval over the combinations (metricInterval).
import type { ExperimentResult, PayloadOf } from '../../api/types';
import { bracket, tFromStderr, tInterval, wilson, type Bounds, type Interval } from '../../lib/interval';

export type SkillmixCell = PayloadOf<'skillmix_cell'>;

export const METRICS = [
  'full_marks',
  'all_skills',
  'skill_fraction',
  'total_score',
  'total_skill_score',
  'rescaled_score',
] as const;
export type Metric = (typeof METRICS)[number];
/** Table 1's three metrics, in its order (Ratio of Full Marks / Ratio of All Skills / Skill Fraction). */
export const HEADLINE: readonly Metric[] = ['full_marks', 'all_skills', 'skill_fraction'];
export const METRIC_LABELS: Record<Metric, string> = {
  full_marks: 'Ratio of Full Marks',
  all_skills: 'Ratio of All Skills',
  skill_fraction: 'Skill Fraction',
  total_score: 'Total Score',
  total_skill_score: 'Total Skill Score',
  rescaled_score: 'Rescaled Score',
};

export interface Tagged {
  run_id: number;
  payload: SkillmixCell;
}

export function skillmixCells(results: readonly Pick<ExperimentResult, 'run_id' | 'payload'>[]): Tagged[] {
  return results.flatMap((r) => (r.payload.kind === 'skillmix_cell' ? [{ run_id: r.run_id, payload: r.payload }] : []));
}

export interface Value {
  mean: number;
  /** null when the cell has one combination, or averages several runs */
  stderr: number | null;
}

export interface TableCell {
  runIds: number[];
  values: Record<Metric, Value>;
  /** per metric, its 95% interval (metricInterval); null where there is none */
  intervals: Record<Metric, Interval | null>;
  /** combinations of each run of the cell */
  combinations: number[];
  failedGradings: number;
  totalGradings: number;
}

export interface SkillmixTable {
  model: string;
  /** ept values, ascending (null: the model has no router, or an endpoint) */
  rows: (number | null)[];
  /** k values, ascending */
  cols: number[];
  /** cells[row][col], null where no run produced that cell */
  cells: (TableCell | null)[][];
  defaultEpt: number | null;
  renormalises: boolean | null;
  /** best[metric][col]: the row indices holding the column's best value (empty when every value is 0) */
  best: Record<Metric, number[][]>;
}

const byNumber = (a: number | null, b: number | null) => (a ?? 0) - (b ?? 0);

/**
 * Metrics that are 0 or 1 per combination (the best of its generations, A.3.1): their mean is a proportion
 * of the combinations, so its interval is Wilson's (it keeps a width at 0 and 1, where the ± is 0).
 */
export const BINARY: readonly Metric[] = ['full_marks', 'all_skills'];

/** The range a metric's values lie in at k skills (intervals of means are clipped to it). */
export function metricBounds(metric: Metric, k: number): Bounds {
  if (metric === 'total_score') return [0, k + 3];
  if (metric === 'total_skill_score') return [0, k];
  return [0, 1];
}

/**
 * The 95% interval of a cell's metric: one run, a 0/1 metric: Wilson over its combinations; one run, a
 * graded metric: Student-t from its standard error over the combinations; several runs: Student-t over
 * the runs' means.
 */
export function metricInterval(metric: Metric, k: number, values: readonly Value[], combinations: readonly number[]): Interval | null {
  const bounds = metricBounds(metric, k);
  if (values.length > 1) return tInterval(values.map((v) => v.mean), bounds);
  const [v] = values;
  if (!v) return null;
  const m = combinations[0] ?? 0;
  return BINARY.includes(metric) ? wilson(v.mean, m) : tFromStderr(v.mean, v.stderr, m, bounds);
}

/** "0.20 ± 0.200 [0.04, 0.62]": the paper's mean ± stderr and the 95% interval; without one, formatValue alone. */
export function formatWithCi(v: Value, ci: Interval | null): string {
  return ci ? `${formatValue(v)} ${bracket(ci, (x) => toFixedHalfEven(x, 2))}` : formatValue(v);
}

/** The caption naming the intervals of a table or a cell view. */
export function skillmixCaption(combinations: readonly number[], severalRuns: boolean): string {
  const lo = combinations.length ? Math.min(...combinations) : 0;
  const hi = combinations.length ? Math.max(...combinations) : 0;
  const n = lo === hi ? `n = ${lo}` : `n = ${lo}–${hi}`;
  return (
    `[lo, hi]: 95% interval over ${n} combinations: Wilson score interval for ${BINARY.map((m) => METRIC_LABELS[m]).join(' and ')} ` +
    `(0 or 1 per combination), Student-t from the standard error for the graded metrics` +
    (severalRuns ? '; cells of several runs: Student-t over the runs' : '')
  );
}

/** Runs of the same (model, ept, k), several seeds for instance, average their means (no ± then). */
function merge(cells: readonly Tagged[]): TableCell {
  const values = {} as Record<Metric, Value>;
  for (const m of METRICS) {
    const means = cells.map((c) => c.payload[m].mean);
    values[m] = {
      mean: means.reduce((a, b) => a + b, 0) / means.length,
      stderr: cells.length === 1 ? (cells[0]!.payload[m].stderr ?? null) : null,
    };
  }
  const combinations = cells.map((c) => c.payload.combinations);
  const intervals = {} as Record<Metric, Interval | null>;
  for (const m of METRICS) intervals[m] = metricInterval(m, cells[0]!.payload.k, cells.map((c) => ({ mean: c.payload[m].mean, stderr: c.payload[m].stderr ?? null })), combinations);
  return {
    runIds: cells.map((c) => c.run_id).sort((a, b) => a - b),
    values,
    intervals,
    combinations,
    failedGradings: cells.reduce((a, c) => a + c.payload.failed_gradings, 0),
    totalGradings: cells.reduce((a, c) => a + c.payload.total_gradings, 0),
  };
}

export function bestRows(cells: readonly (TableCell | null)[][], metric: Metric, col: number): number[] {
  let top = 0;
  for (const row of cells) top = Math.max(top, row[col]?.values[metric].mean ?? 0);
  if (top <= 0) return [];
  return cells.flatMap((row, i) => (row[col] !== null && Math.abs(row[col]!.values[metric].mean - top) < 1e-9 ? [i] : []));
}

/** One table per model (an experiment usually sweeps one), models in name order. */
export function skillmixTables(results: readonly Tagged[]): SkillmixTable[] {
  const byModel = new Map<string, Tagged[]>();
  for (const r of results) byModel.set(r.payload.model, [...(byModel.get(r.payload.model) ?? []), r]);
  return [...byModel.keys()].sort().map((model) => {
    const list = byModel.get(model)!;
    const rows = [...new Set(list.map((r) => r.payload.ept))].sort(byNumber);
    const cols = [...new Set(list.map((r) => r.payload.k))].sort(byNumber);
    const cells = rows.map((ept) =>
      cols.map((k) => {
        const here = list.filter((r) => r.payload.ept === ept && r.payload.k === k);
        return here.length ? merge(here) : null;
      }),
    );
    const best = {} as Record<Metric, number[][]>;
    for (const m of METRICS) best[m] = cols.map((_, j) => bestRows(cells, m, j));
    const flags = new Set(list.map((r) => r.payload.renormalises));
    return {
      model,
      rows,
      cols,
      cells,
      defaultEpt: list.find((r) => r.payload.default_ept !== null)?.payload.default_ept ?? null,
      renormalises: flags.size === 1 ? [...flags][0]! : null,
      best,
    };
  });
}

export function rowLabel(ept: number | null, defaultEpt: number | null): string {
  if (ept === null) return 'model default';
  return ept === defaultEpt ? `ept=${ept} (default)` : `ept=${ept}`;
}

/**
 * `v` with `digits` decimals as the paper's tables print them (Python's format): the nearest decimal to
 * the exact binary value, an exact tie to the even last digit. 0.125 -> "0.12" and 0.375 -> "0.38", where
 * `toFixed` rounds every exact tie away from zero ("0.13"); a value that only looks like a tie (0.245 is
 * 0.24499999...) is not one, and both say "0.24".
 */
export function toFixedHalfEven(v: number, digits: number): string {
  const nearest = v.toFixed(digits);
  if (!Number.isFinite(v)) return nearest;
  const exact = Math.abs(v).toFixed(100); // every binary fraction of a metric's size, written out exactly
  const point = exact.indexOf('.');
  if (!/^50*$/.test(exact.slice(point + 1 + digits))) return nearest; // not an exact tie
  let scaled = BigInt(exact.slice(0, point) + exact.slice(point + 1, point + 1 + digits)); // truncated
  if (scaled % 2n === 1n) scaled += 1n;
  const s = scaled.toString().padStart(digits + 1, '0');
  const body = digits > 0 ? `${s.slice(0, s.length - digits)}.${s.slice(s.length - digits)}` : s;
  return v < 0 ? `-${body}` : body;
}

/** "0.20 ± 0.200" as the paper prints it (ties to even); "0.20" without a ±. */
export function formatValue(v: Value): string {
  const mean = toFixedHalfEven(v.mean, 2);
  return v.stderr === null ? mean : `${mean} ± ${toFixedHalfEven(v.stderr, 3)}`;
}

export interface BestEpt {
  k: number;
  /** the ept values tied for the best mean; empty when every value is 0 */
  epts: (number | null)[];
  value: number;
}

export function bestEptPerK(table: SkillmixTable, metric: Metric): BestEpt[] {
  return table.cols.map((k, j) => {
    const rows = table.best[metric][j]!;
    return {
      k,
      epts: rows.map((i) => table.rows[i]!),
      value: rows.length ? table.cells[rows[0]!]![j]!.values[metric].mean : 0,
    };
  });
}

export interface HeatCell {
  x: number; // column (k) index
  y: number; // row (ept) index
  value: number;
  runId: number;
  ci: Interval | null;
}

export function heatmapCells(table: SkillmixTable, metric: Metric): HeatCell[] {
  return table.cells.flatMap((row, y) =>
    row.flatMap((cell, x) => (cell === null ? [] : [{ x, y, value: cell.values[metric].mean, runId: cell.runIds[0]!, ci: cell.intervals[metric] }])),
  );
}
