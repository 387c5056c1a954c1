// Shapes `sraven_cell` results (one per run of a SMoE top-k sweep) into one heatmap panel per attention
// variant: rows M (SRAVEN's number of features), columns top-k, colour = OOD or ID accuracy.
import type { ExperimentResult, PayloadOf } from '../../api/types';

export type SravenCell = PayloadOf<'sraven_cell'>;

export interface CellResult {
  run_id: number;
  payload: SravenCell;
}

export type HeatmapMetric = 'ood_acc' | 'test_acc';

export interface HeatmapCell {
  /** column index (top-k), row index (M), value, run that produced it */
  x: number;
  y: number;
  value: number;
  runId: number;
  numExperts: number | null;
}

export interface HeatmapPanel {
  attention: SravenCell['attention'];
  rows: number[]; // M values, ascending
  cols: (number | null)[]; // top-k values, ascending; null (dense) first
  cells: HeatmapCell[];
  /** per row index, the column index of the best value (the best k for that M); absent if the row is empty */
  bestCol: (number | null)[];
}

/** The `sraven_cell` records among an experiment's results (others are left out). */
export function sravenCells(results: readonly Pick<ExperimentResult, 'run_id' | 'payload'>[]): CellResult[] {
  return results.flatMap((r) => (r.payload.kind === 'sraven_cell' ? [{ run_id: r.run_id, payload: r.payload }] : []));
}

const ascending = (a: number, b: number) => a - b;
const denseFirst = (a: number | null, b: number | null) => (a ?? 0) - (b ?? 0);

export function columnLabel(topK: number | null): string {
  return topK === null ? 'dense' : String(topK);
}

/**
 * Several runs may produce the same (attention, M, k) cell (seeds): the cell shows their mean and links
 * to the first run. Panels are sorted by attention name.
 */
export function sravenPanels(results: readonly CellResult[], metric: HeatmapMetric): HeatmapPanel[] {
  const byAttention = new Map<SravenCell['attention'], CellResult[]>();
  for (const r of results) {
    const list = byAttention.get(r.payload.attention) ?? [];
    list.push(r);
    byAttention.set(r.payload.attention, list);
  }
  const panels: HeatmapPanel[] = [];
  for (const attention of [...byAttention.keys()].sort()) {
    const cellsIn = byAttention.get(attention)!;
    const rows = [...new Set(cellsIn.map((c) => c.payload.M))].sort(ascending);
    const cols = [...new Set(cellsIn.map((c) => c.payload.top_k))].sort(denseFirst);
    const groups = new Map<string, { sum: number; n: number; runId: number; numExperts: number | null; x: number; y: number }>();
    for (const c of cellsIn) {
      const value = c.payload[metric];
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const x = cols.indexOf(c.payload.top_k);
      const y = rows.indexOf(c.payload.M);
      const key = `${x},${y}`;
      const g = groups.get(key);
      if (g) {
        g.sum += value;
        g.n += 1;
        g.runId = Math.min(g.runId, c.run_id);
      } else groups.set(key, { sum: value, n: 1, runId: c.run_id, numExperts: c.payload.num_experts, x, y });
    }
    const cells: HeatmapCell[] = [...groups.values()].map((g) => ({
      x: g.x,
      y: g.y,
      value: g.sum / g.n,
      runId: g.runId,
      numExperts: g.numExperts,
    }));
    const bestCol: (number | null)[] = rows.map((_, y) => {
      let best: HeatmapCell | null = null;
      for (const c of cells) if (c.y === y && (best === null || c.value > best.value)) best = c;
      return best ? best.x : null;
    });
    panels.push({ attention, rows, cols, cells, bestCol });
  }
  return panels;
}

/** Colour scale bounds shared by all panels so they compare at a glance. */
export function panelsRange(panels: readonly HeatmapPanel[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of panels) for (const c of p.cells) {
    lo = Math.min(lo, c.value);
    hi = Math.max(hi, c.value);
  }
  if (!Number.isFinite(lo)) return [0, 1];
  return lo === hi ? [lo - 0.5, hi + 0.5] : [lo, hi];
}
