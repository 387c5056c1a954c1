// Shapes `sraven_cell` results (one per run of a SMoE top-k sweep) into one heatmap panel per attention
// variant: rows M (SRAVEN's number of features), columns top-k, colour = OOD or ID accuracy.
import type { ExperimentResult, PayloadOf } from '../../../api/types';
import { cellInterval, intervalCaption, type Interval } from '../../../lib/interval';

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
  /** runs averaged in the cell (seeds) */
  n: number;
  /** 95% interval: Wilson over the run's problems, Student-t over several runs; null without sizes */
  ci: Interval | null;
}

export interface HeatmapPanel {
  attention: SravenCell['attention'];
  rows: number[]; // M values, ascending
  cols: (number | null)[]; // top-k values, ascending; null (dense) first
  cells: HeatmapCell[];
  /** per row index, the column index of the best value (the best k for that M); absent if the row is empty */
  bestCol: (number | null)[];
}

/** The problems a cell's accuracy is a proportion of (null in results written before sizes were kept). */
export function cellSize(cell: SravenCell, metric: HeatmapMetric): number | null {
  return (metric === 'test_acc' ? cell.test_size : cell.ood_size) ?? null;
}

/** The caption naming the panels' interval (one line for the whole grid). */
export function sravenCaption(results: readonly CellResult[], panels: readonly HeatmapPanel[], metric: HeatmapMetric): string | null {
  if (panels.length === 0) return null;
  const cells = panels.flatMap((p) => p.cells);
  const sizes = results.filter((r) => typeof r.payload[metric] === 'number').map((r) => cellSize(r.payload, metric));
  return intervalCaption({
    sizes,
    seeds: cells.some((c) => c.n > 1),
    missing: cells.some((c) => c.n === 1 && c.ci === null),
  });
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
    const groups = new Map<string, { values: number[]; sizes: (number | null)[]; runId: number; numExperts: number | null; x: number; y: number }>();
    for (const c of cellsIn) {
      const value = c.payload[metric];
      if (typeof value !== 'number' || !Number.isFinite(value)) continue;
      const x = cols.indexOf(c.payload.top_k);
      const y = rows.indexOf(c.payload.M);
      const key = `${x},${y}`;
      const g = groups.get(key);
      const size = cellSize(c.payload, metric);
      if (g) {
        g.values.push(value);
        g.sizes.push(size);
        g.runId = Math.min(g.runId, c.run_id);
      } else groups.set(key, { values: [value], sizes: [size], runId: c.run_id, numExperts: c.payload.num_experts, x, y });
    }
    const cells: HeatmapCell[] = [...groups.values()].map((g) => ({
      x: g.x,
      y: g.y,
      value: g.values.reduce((a, b) => a + b, 0) / g.values.length,
      runId: g.runId,
      numExperts: g.numExperts,
      n: g.values.length,
      ci: cellInterval(g.values, g.sizes),
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

/**
 * Colour scale bounds shared by all panels so they compare at a glance: the values' range. The values are
 * accuracies: a grid of one cell, or of equal cells, gets the whole [0, 1] (a range padded around its
 * value went below 0: one cell of 0.05 drew a scale from -0.45).
 */
export function panelsRange(panels: readonly HeatmapPanel[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const p of panels) for (const c of p.cells) {
    lo = Math.min(lo, c.value);
    hi = Math.max(hi, c.value);
  }
  if (!Number.isFinite(lo)) return [0, 1];
  return lo === hi ? [Math.min(0, lo), Math.max(1, hi)] : [lo, hi];
}
