// Parallel coordinates of sweep params against one metric: one axis per param that varies across runs,
// the metric last; categorical params (strings, booleans) become category axes.
import type { Run } from '../api/types';

export interface ParallelAxis {
  dim: number;
  name: string;
  type: 'value' | 'category';
  data?: string[];
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
    if (numeric) return { dim, name, type: 'value' };
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
