// Shapes `topk_eval_point` results (one per (train k, eval k') of a model) into the train-k x eval-k'
// matrix (rows train k, columns k', colour = the score, the diagonal k' = k marked) and the lines of
// score against k', one per train k. One panel per (target, family, score, M): scores of different
// kinds never share a colour scale. Each cell carries its 95% interval (lib/interval.ts): Wilson over the
// point's problems for one run, Student-t over the runs for several; none for perplexity.
import type { ExperimentResult, PayloadOf } from '../../../api/types';
import { cellInterval, intervalCaption, type Interval } from '../../../lib/interval';

export type TopkPoint = PayloadOf<'topk_eval_point'>;

export interface PointResult {
  run_id: number;
  payload: TopkPoint;
}

/** which value colours the matrix: the score, or SRAVEN's OOD accuracy */
export type MatrixMetric = 'value' | 'ood_value';

export interface MatrixCell {
  /** column index (k'), row index (train k), mean value over the points of the cell, first run */
  x: number;
  y: number;
  value: number;
  runId: number;
  /** points averaged (seeds, repeated runs) */
  n: number;
  /** 95% interval of the value; null for a score that is no proportion or points without their n */
  ci: Interval | null;
}

export interface MatrixPanel {
  key: string;
  title: string;
  score: string;
  higherIsBetter: boolean;
  /** the routers' renormalise flag over the panel's points: null when mixed or unknown */
  renormalises: boolean | null;
  /** train k, ascending; null (unknown) last */
  rows: (number | null)[];
  /** eval k', ascending */
  cols: number[];
  cells: MatrixCell[];
  /** cells on the diagonal (k' = train k), as "x,y" */
  diagonal: Set<string>;
  /** per row index, the column index of the best value of that row (by higherIsBetter), null if empty */
  bestCol: (number | null)[];
  /** the line naming the cells' interval; null for a score that is no proportion (perplexity) */
  caption: string | null;
}

/** The `topk_eval_point` records among an experiment's results (others are left out). */
export function topkPoints(results: readonly Pick<ExperimentResult, 'run_id' | 'payload'>[]): PointResult[] {
  return results.flatMap((r) => (r.payload.kind === 'topk_eval_point' ? [{ run_id: r.run_id, payload: r.payload }] : []));
}

export function rowLabel(trainK: number | null): string {
  return trainK === null ? 'k ?' : `k=${trainK}`;
}

/** The problems or items a point's value is a proportion of; null for perplexity and old results. */
export function metricSize(p: TopkPoint, metric: MatrixMetric): number | null {
  if (!isProportion(p, metric)) return null;
  return (metric === 'value' ? p.n : p.ood_n) ?? null;
}

/** Whether the value is a proportion (an accuracy): a lower-is-better score (perplexity) is not. */
export function isProportion(p: TopkPoint, metric: MatrixMetric): boolean {
  return metric === 'ood_value' || (p.higher_is_better && p.score !== 'perplexity');
}

export function metricValue(p: TopkPoint, metric: MatrixMetric): number | null {
  const v = metric === 'value' ? p.value : (p.ood_value ?? null);
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

const ascendingNullLast = (a: number | null, b: number | null) =>
  a === null ? (b === null ? 0 : 1) : b === null ? -1 : a - b;

function panelTitle(p: TopkPoint): string {
  const task = p.M !== null && p.M !== undefined ? ` · M=${p.M}` : '';
  const norm = p.renormalises === null ? '' : p.renormalises ? ' · renormalised' : ' · not renormalised';
  return `${p.family} · ${p.score}${task}${norm}`;
}

export function topkMatrices(results: readonly PointResult[], metric: MatrixMetric = 'value'): MatrixPanel[] {
  const groups = new Map<string, PointResult[]>();
  for (const r of results) {
    if (metricValue(r.payload, metric) === null) continue;
    const key = `${r.payload.target}|${r.payload.family}|${r.payload.score}|${r.payload.M ?? ''}`;
    const list = groups.get(key) ?? [];
    list.push(r);
    groups.set(key, list);
  }
  const panels: MatrixPanel[] = [];
  for (const key of [...groups.keys()].sort()) {
    const points = groups.get(key)!;
    const first = points[0]!.payload;
    const rows = [...new Set(points.map((p) => p.payload.train_k))].sort(ascendingNullLast);
    const cols = [...new Set(points.map((p) => p.payload.eval_k))].sort((a, b) => a - b);
    const acc = new Map<string, { values: number[]; sizes: (number | null)[]; runId: number; x: number; y: number }>();
    for (const p of points) {
      const value = metricValue(p.payload, metric)!;
      const x = cols.indexOf(p.payload.eval_k);
      const y = rows.indexOf(p.payload.train_k);
      const cellKey = `${x},${y}`;
      const g = acc.get(cellKey);
      const size = metricSize(p.payload, metric);
      if (g) {
        g.values.push(value);
        g.sizes.push(size);
        g.runId = Math.min(g.runId, p.run_id);
      } else acc.set(cellKey, { values: [value], sizes: [size], runId: p.run_id, x, y });
    }
    const proportion = isProportion(first, metric);
    const cells = [...acc.values()].map((g) => ({
      x: g.x,
      y: g.y,
      value: g.values.reduce((a, b) => a + b, 0) / g.values.length,
      runId: g.runId,
      n: g.values.length,
      ci: proportion ? cellInterval(g.values, g.sizes) : null,
    }));
    const groupsOf = [...acc.values()];
    const caption = proportion
      ? intervalCaption({
          sizes: groupsOf.flatMap((g) => (g.values.length === 1 ? g.sizes : [])),
          seeds: groupsOf.some((g) => g.values.length > 1),
          missing: groupsOf.some((g) => g.values.length === 1 && g.sizes[0] === null),
        })
      : null;
    const diagonal = new Set(cells.filter((c) => rows[c.y] === cols[c.x]).map((c) => `${c.x},${c.y}`));
    const higherIsBetter = metric === 'ood_value' ? true : first.higher_is_better;
    const bestCol = rows.map((_, y) => {
      let best: MatrixCell | null = null;
      for (const c of cells) {
        if (c.y !== y) continue;
        if (best === null || (higherIsBetter ? c.value > best.value : c.value < best.value)) best = c;
      }
      return best ? best.x : null;
    });
    const flags = new Set(points.map((p) => p.payload.renormalises));
    panels.push({
      key,
      title: panelTitle(first),
      score: metric === 'ood_value' ? 'ood_acc' : first.score,
      higherIsBetter,
      renormalises: flags.size === 1 ? [...flags][0]! : null,
      rows,
      cols,
      cells,
      diagonal,
      bestCol,
      caption,
    });
  }
  return panels;
}

export interface ScoreLine {
  name: string;
  trainK: number | null;
  /** [k', value] by ascending k' */
  data: [number, number][];
  /** the interval of each point of data (null: none) */
  ci: (Interval | null)[];
}

/** Score against k', one line per train k (a row of the matrix). */
export function scoreLines(panel: MatrixPanel): ScoreLine[] {
  return panel.rows.map((trainK, y) => {
    const row = panel.cells.filter((c) => c.y === y).sort((a, b) => a.x - b.x);
    return {
      name: `train ${rowLabel(trainK)}`,
      trainK,
      data: row.map((c) => [panel.cols[c.x]!, c.value] as [number, number]),
      ci: row.map((c) => c.ci),
    };
  });
}

/** Colour scale bounds of one panel. */
export function matrixRange(panel: MatrixPanel): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const c of panel.cells) {
    lo = Math.min(lo, c.value);
    hi = Math.max(hi, c.value);
  }
  if (!Number.isFinite(lo)) return [0, 1];
  return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
}
