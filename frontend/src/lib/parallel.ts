// Parallel coordinates of sweep params against one metric: one axis per param that varies across runs,
// the metric last; categorical params (strings, booleans) become category axes.
import type { Run } from '../api/types';

export interface ParallelAxis {
  dim: number;
  name: string;
  type: 'value' | 'category';
  data?: string[];
  /** a numeric axis whose values are all integers: ticks fall on integers only */
  integer?: boolean;
}

/**
 * The colour scale of a metric: its range, widened when every run has the same value (a scale from 2 to
 * 2 draws nothing useful), and the decimals that tell its two ends apart (ECharts rounds the ends to
 * whole numbers by default: a loss from 1.62 to 2.38 read "2" at both ends).
 */
export function colourScale(values: readonly number[]): { min: number; max: number; precision: number } {
  if (!values.length) return { min: 0, max: 1, precision: 0 };
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (min === max) {
    const pad = Math.abs(min) * 0.05 || 0.5;
    min -= pad;
    max += pad;
  }
  const span = max - min;
  const precision = Math.min(8, Math.max(0, 2 - Math.floor(Math.log10(span))));
  const allIntegers = values.every(Number.isInteger) && Number.isInteger(min) && Number.isInteger(max);
  return { min, max, precision: allIntegers ? 0 : precision };
}

export interface ParallelData {
  axes: ParallelAxis[];
  /** one row per run with the metric: axis values in axis order, then the run id (not an axis) */
  rows: (number | string)[][];
}

export function parallelData(runs: readonly Pick<Run, 'id' | 'params' | 'summary'>[], metric: string): ParallelData {
  const withMetric = runs.filter((r) => typeof r.summary[metric] === 'number' && Number.isFinite(r.summary[metric]));
  const keys = new Set<string>();
  for (const r of withMetric) for (const k of Object.keys(r.params)) keys.add(k);
  const varying = [...keys].sort().filter((k) => new Set(withMetric.map((r) => JSON.stringify(r.params[k]))).size > 1);
  const axes: ParallelAxis[] = varying.map((name, dim) => {
    const numeric = withMetric.every((r) => typeof r.params[name] === 'number');
    if (numeric) return { dim, name, type: 'value', integer: withMetric.every((r) => Number.isInteger(r.params[name])) };
    const data = [...new Set(withMetric.map((r) => String(r.params[name])))].sort();
    return { dim, name, type: 'category', data };
  });
  axes.push({ dim: axes.length, name: metric, type: 'value' });
  const rows = withMetric.map((r) => [
    ...varying.map((k, i) => (axes[i]!.type === 'value' ? (r.params[k] as number) : String(r.params[k]))),
    r.summary[metric]!,
    r.id,
  ]);
  return { axes, rows };
}
